package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"countersign/engine"
	"countersign/store"
)

// recordAuditRun stores a run through the store's API, as the runtime
// records one: prompt, model turn, a suspension and its decision, the
// approved write, the end. Six events.
func recordAuditRun(t *testing.T, db *store.DB, at time.Time) string {
	t.Helper()
	ctx := context.Background()
	r, err := db.CreateRun(ctx, engine.NewRun{Agent: "editor", Model: "demo", Prompt: "publish", InitiatedBy: "ann"},
		engine.Event{Kind: engine.EventPrompt, Text: "publish"}, at)
	if err != nil {
		t.Fatal(err)
	}
	lease := at.Add(time.Hour)
	call := &engine.ToolCall{ID: "c1", Name: "publish_page", Arguments: `{"slug":"about"}`}
	if _, err := db.AcquireRun(ctx, r.ID, "w", at, lease); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.AppendEvent(ctx, r.ID, "w", engine.Event{Kind: engine.EventModelTurn, At: at, ToolCalls: []engine.ToolCall{*call}}, lease); err != nil {
		t.Fatal(err)
	}
	if err := db.SuspendRun(ctx, r.ID, "w", engine.Suspend{Suspension: engine.Suspension{State: []byte("{}"), Digest: "d"},
		Event: engine.Event{Kind: engine.EventSuspended, Digest: "d", Pending: []engine.ToolCall{*call}}, Now: at}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ClaimRun(ctx, r.ID, engine.Claim{Digest: "d", Owner: "w", LeaseUntil: lease, Now: at,
		Event: engine.Event{Kind: engine.EventDecision, By: "olga", Decision: engine.VerdictApprove, Digest: "d"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.AppendEvent(ctx, r.ID, "w", engine.Event{Kind: engine.EventToolStarted, At: at, Call: call, Write: true}, lease); err != nil {
		t.Fatal(err)
	}
	if err := db.FinishRun(ctx, r.ID, "w", engine.Finish{Status: engine.StatusCompleted, Termination: engine.TermCompleted, Now: at,
		Event: engine.Event{Kind: engine.EventFinished, Text: "done", Termination: engine.TermCompleted}}); err != nil {
		t.Fatal(err)
	}
	return r.ID
}

func TestAuditCommands(t *testing.T) {
	t.Parallel()
	dbPath := filepath.Join(t.TempDir(), "audit.db")
	db, err := store.Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	good, bad := recordAuditRun(t, db, t0), recordAuditRun(t, db, t0.Add(time.Minute))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"COUNTERSIGN_DB": dbPath}
	cmd := func(args ...string) (string, error) {
		t.Helper()
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"countersign", "audit"}, args...), envOf(vars), &out)
		return out.String(), err
	}

	// A database with no run, then one run: the summary counts in words.
	vars["COUNTERSIGN_DB"] = filepath.Join(t.TempDir(), "one.db")
	if out, err := cmd("verify"); err != nil || out != "verified 0 runs: 0 intact, 0 altered\n" {
		t.Fatalf("verify of no run: %v, output %q", err, out)
	}
	one, err := store.Open(context.Background(), vars["COUNTERSIGN_DB"])
	if err != nil {
		t.Fatal(err)
	}
	recordAuditRun(t, one, t0)
	one.Close()
	if out, err := cmd("verify"); err != nil || out != "verified 1 run: 1 intact, 0 altered\n" {
		t.Fatalf("verify of one run: %v, output %q", err, out)
	}
	vars["COUNTERSIGN_DB"] = dbPath

	out, err := cmd("verify")
	if err != nil || out != "verified 2 runs: 2 intact, 0 altered\n" {
		t.Fatalf("verify of intact runs: %v, output %q", err, out)
	}
	out, err = cmd("verify", good)
	m := regexp.MustCompile(`^` + good + ` intact: 6 events, chain head ([0-9a-f]{64})\n$`).FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("verify %s: %v, output %q", good, err, out)
	}
	head := m[1]

	out, err = cmd("export", good)
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	var last struct {
		RunID   string          `json:"run_id"`
		Seq     int64           `json:"seq"`
		Payload json.RawMessage `json:"payload"`
		Hash    string          `json:"hash"`
	}
	lines := 0
	for sc := bufio.NewScanner(strings.NewReader(out)); sc.Scan(); lines++ {
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			t.Fatalf("export line %d: %v: %s", lines+1, err, sc.Text())
		}
		if last.RunID != good || last.Seq != int64(lines+1) || !bytes.HasPrefix(last.Payload, []byte("{")) {
			t.Errorf("export line %d: %s", lines+1, sc.Text())
		}
	}
	if lines != 6 || last.Hash != head {
		t.Errorf("export: %d lines ending at hash %s, want 6 ending at the head %s", lines, last.Hash, head)
	}

	raw, err := sqlx.Open("sqlite3", dbPath+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE agent_run_event SET payload = replace(payload, 'olga', 'mallory') WHERE run_id = ? AND seq = 4`, bad); err != nil {
		t.Fatal(err)
	}
	out, err = cmd("verify", bad)
	if err == nil || !strings.HasPrefix(out, bad+" altered: 6 events, 1 problem\n  event 4 edited: Event 4 (decision) was edited") {
		t.Errorf("verify %s after an edit: %v, output %q", bad, err, out)
	}
	out, err = cmd("verify")
	if err == nil || out != bad+" altered: event 4 edited\nverified 2 runs: 1 intact, 1 altered\n" {
		t.Errorf("verify after an edit: %v, output %q", err, out)
	}

	for _, args := range [][]string{{}, {"verify", good, bad}, {"export"}, {"export", good, bad}} {
		if out, err := cmd(args...); err == nil || !strings.Contains(err.Error(), "usage: countersign audit") || out != "" {
			t.Errorf("audit %q: %v, output %q; want the usage", args, err, out)
		}
	}
	if _, err := cmd("frob"); err == nil || !strings.Contains(err.Error(), `unknown audit command "frob"`) {
		t.Errorf("audit frob: %v", err)
	}
	for _, verb := range []string{"verify", "export"} {
		if out, err := cmd(verb, "nope"); !errors.Is(err, engine.ErrRunNotFound) || out != "" {
			t.Errorf("audit %s of an unknown run: %v, output %q", verb, err, out)
		}
	}
}
