package app

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"countersign/engine/mcptools"
	"countersign/engine/tools"
	"countersign/store"
)

// The sandbox is created with its files on the first start and left as it
// is on the next.
func TestSandboxSeededOnce(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DBPath: filepath.Join(dir, "cs.db"), SessionKey: []byte("0123456789abcdef0123456789abcdef-app-test")}
	a, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range tools.SandboxFiles() {
		got, err := os.ReadFile(filepath.Join(dir, SandboxDir, filepath.FromSlash(name)))
		if err != nil || string(got) != body {
			t.Fatalf("sandbox %s = %q, %v; want the seeded file", name, got, err)
		}
	}
	a.Close()
	notes := filepath.Join(dir, SandboxDir, "notes.md")
	if err := os.WriteFile(notes, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, SandboxDir, "draft.md")); err != nil {
		t.Fatal(err)
	}
	a, err = New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if got, _ := os.ReadFile(notes); string(got) != "mine\n" {
		t.Fatalf("a second start rewrote notes.md: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, SandboxDir, "draft.md")); !os.IsNotExist(err) {
		t.Fatalf("a second start brought back a deleted file: %v", err)
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, ".sandbox-*")); len(entries) != 0 {
		t.Fatalf("temporary folders left behind: %v", entries)
	}
}

// Start connects the agents' MCP servers before the workers start, so the
// tools of a server that comes up are offered as soon as Start returns;
// Close stops them. The server is the real reference filesystem server,
// with ${DATA_DIR} taken from the database's folder.
func TestStartConnectsServersFirst(t *testing.T) {
	bin, err := filepath.Abs("../node_modules/.bin/mcp-server-filesystem")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the reference filesystem server is not installed (make assets runs npm ci): %v", err)
	}
	file := filepath.Join(t.TempDir(), "agents.yaml")
	yaml := `agents:
  - name: files
    title: Files
    instructions: Work on files.
    mcp_servers:
      - name: filesystem
        command: ` + bin + `
        args: ["${DATA_DIR}/sandbox"]
`
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := newApp(t, Config{AgentsFile: file})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Servers) != 1 {
		t.Fatalf("%d servers, want the one of the file", len(a.Servers))
	}
	srv := a.Servers[0]
	if got := srv.Config().Args; len(got) != 1 || got[0] != filepath.Join(filepath.Dir(a.cfg.DBPath), SandboxDir) {
		t.Fatalf("args %v, want the sandbox under the data directory", got)
	}
	if st := srv.Status().State; st == mcptools.StateUp {
		t.Fatal("the server is up before Start")
	}
	a.Start()
	if st := srv.Status(); st.State != mcptools.StateUp {
		t.Fatalf("after Start the server is %s (%s), want up", st.State, st.Err)
	}
	files, _ := tools.AgentByName(a.Agents, "files")
	var names []string
	for _, tl := range files.OfferedTools() {
		names = append(names, tl.Name())
	}
	if !slices.Contains(names, "read_text_file") || !slices.Contains(names, "write_file") {
		t.Fatalf("offered tools %v", names)
	}
	// An operator's edit is checked against the server's own JSON Schema.
	for _, tl := range files.OfferedTools() {
		if tl.Name() != "write_file" {
			continue
		}
		if err := checkArgs(tl.Schema(), []byte(`{"path":"a.txt","content":"x"}`)); err != nil {
			t.Fatalf("write_file's schema refuses good arguments: %v", err)
		}
		if err := checkArgs(tl.Schema(), []byte(`{"path":1,"content":"x"}`)); err == nil || !strings.Contains(err.Error(), "/path") {
			t.Fatalf("write_file's schema on a number path: %v, want an error at /path", err)
		}
	}
	if got := a.serverStatus("files"); len(got) != 1 || got[0].Name != "filesystem" {
		t.Fatalf("status of files' servers = %+v", got)
	}
	if got := a.serverStatus("editor"); len(got) != 0 {
		t.Fatalf("status of an agent without servers = %+v", got)
	}
	a.Close()
	if st := srv.Status().State; st != mcptools.StateClosed {
		t.Fatalf("after Close the server is %s, want closed", st)
	}
}

// An app over a database opened by its caller takes the data directory
// from the database's file, so the built-in files agent loads.
func TestDataDirFromAnOpenDatabase(t *testing.T) {
	dir := t.TempDir()
	db, err := store.Open(t.Context(), filepath.Join(dir, "cs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a, err := New(t.Context(), Config{DB: db, SessionKey: []byte("0123456789abcdef0123456789abcdef-app-test")})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if len(a.Servers) != 1 {
		t.Fatalf("%d servers, want the files agent's", len(a.Servers))
	}
	if got := a.Servers[0].Config().Args; len(got) != 1 || got[0] != filepath.Join(dir, SandboxDir) {
		t.Fatalf("args %v, want %s", got, filepath.Join(dir, SandboxDir))
	}
	if _, err := os.Stat(filepath.Join(dir, SandboxDir, "notes.md")); err != nil {
		t.Fatalf("the sandbox was not seeded beside the database: %v", err)
	}
}
