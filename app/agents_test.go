package app

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
	"golang.org/x/crypto/bcrypt"

	"countersign/engine"
	"countersign/engine/tools"
)

// newApp builds the app over a fresh database with cfg.
func newApp(t *testing.T, cfg Config) (*App, error) {
	t.Helper()
	cfg.DBPath = filepath.Join(t.TempDir(), "cs.db")
	cfg.BcryptCost = bcrypt.MinCost
	cfg.SessionKey = []byte("0123456789abcdef0123456789abcdef-app-test")
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := New(context.Background(), cfg)
	if err == nil {
		t.Cleanup(func() { a.Close() })
	}
	return a, err
}

// Without a file the app offers the built-in agents, whose policies look
// up the grants in the database.
func TestDefaultAgentsFile(t *testing.T) {
	a, err := newApp(t, Config{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ag := range a.Agents {
		names = append(names, ag.Name)
	}
	if strings.Join(names, " ") != "editor editor-4eyes researcher editor-quick files" {
		t.Fatalf("agents %v", names)
	}
	editor, _ := tools.AgentByName(a.Agents, "editor")
	call := engine.PolicyCall{RunID: "r1", Agent: "editor", Initiator: "olga", Marked: true,
		Call: engine.ToolCall{ID: "c1", Name: "publish_page", Arguments: `{"slug":"about"}`}}
	if res, err := editor.Policy.Check(context.Background(), call); err != nil || res != (engine.PolicyResult{Person: true}) {
		t.Fatalf("before a grant: %+v, %v", res, err)
	}
	// A grant in the database spares the person. It is written by hand:
	// the store writes grants only with a decision.
	raw, err := sql.Open("sqlite3", a.cfg.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	now := time.Now()
	if _, err := raw.Exec(`INSERT INTO approval_grant (id, agent, tool, scope, granted_by, created_at, expires_at)
		VALUES (42, 'editor', 'publish_page', 'agent', 'olga', ?, ?)`, now.UnixMilli(), now.Add(time.Hour).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if res, err := editor.Policy.Check(context.Background(), call); err != nil || res != (engine.PolicyResult{Grant: "42"}) {
		t.Errorf("after a grant: %+v, %v", res, err)
	}
}

// The file COUNTERSIGN_AGENTS names replaces the built-in one; one with
// mistakes stops the start with each of them; Config.Agents still wins.
func TestAgentsFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(good, "agents:\n  - name: solo\n    title: Solo\n    instructions: Read.\n    tools: [get_page]\n    default_model: demo\n")
	write(bad, "agents:\n  - name: solo\n    title: Solo\n    instructions: Read.\n    tools: [get_pages]\n    default_model: gpt-9\n")

	a, err := newApp(t, Config{AgentsFile: good})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Agents) != 1 || a.Agents[0].Name != "solo" || a.Agents[0].DefaultModel != "demo" || len(a.Agents[0].Tools) != 1 {
		t.Errorf("agents %+v", a.Agents)
	}

	_, err = newApp(t, Config{AgentsFile: bad})
	for _, want := range []string{"agents file: 2 mistakes:", bad + `:5: tools: unknown tool "get_pages"`,
		bad + `:6: default_model: "gpt-9" is not offered on this server (it offers demo)`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
	if _, err := newApp(t, Config{AgentsFile: filepath.Join(dir, "missing.yaml")}); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("a missing file: %v", err)
	}

	a, err = newApp(t, Config{AgentsFile: bad, Agents: tools.Agents})
	if err != nil || len(a.Agents) != 3 {
		t.Errorf("Config.Agents: %v, %d agents", err, len(a.Agents))
	}
}
