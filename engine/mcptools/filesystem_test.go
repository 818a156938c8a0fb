package mcptools

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"countersign/engine"
)

// filesystemServer is the reference filesystem server, which make test
// installs with npm ci.
const filesystemServer = "../../node_modules/.bin/mcp-server-filesystem"

func TestReferenceFilesystemServer(t *testing.T) {
	bin, err := filepath.Abs(filesystemServer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the reference filesystem server is not installed (run npm ci): %v", err)
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(dir, "notes.md")
	if err := os.WriteFile(notes, []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(ServerConfig{Agent: "tester", Name: "files", Command: bin, Args: []string{dir},
		Previews: map[string]PreviewSpec{
			"edit_file":  {DryRun: "dryRun"},
			"write_file": {DiffAgainst: "read_text_file"},
		},
		MinBackoff: time.Hour, MaxBackoff: time.Hour},
		Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer s.Close()
	s.Start(context.Background())
	if st := s.Status(); st.State != StateUp {
		t.Fatalf("the filesystem server is %s: %s", st.State, st.Err)
	}
	ctx := context.Background()

	kinds := []struct {
		tool        string
		kind        engine.CallKind
		destructive bool
	}{
		{"read_text_file", engine.CallRead, false},
		{"list_directory", engine.CallRead, false},
		{"write_file", engine.CallWrite, true},
		{"edit_file", engine.CallWrite, true},
		{"create_directory", engine.CallWrite, false},
	}
	for _, k := range kinds {
		tl := toolNamed(t, s, k.tool)
		h := engine.HintsOf(tl)
		if engine.KindOf(tl) != k.kind || h.Destructive != k.destructive || h.External != (k.kind == engine.CallWrite) {
			t.Errorf("%s: kind %v hints %+v", k.tool, engine.KindOf(tl), h)
		}
	}

	// write_file previews its diff, then writes.
	args := json.RawMessage(`{"path":"` + notes + `","content":"alpha\ngamma\n"}`)
	lines, err := toolNamed(t, s, "write_file").(engine.Previewer).Preview(ctx, args)
	if err != nil || len(lines) == 0 || lines[0] != "write_file would replace "+notes+":" || !containsLine(lines, "beta") || !containsLine(lines, "gamma") {
		t.Fatalf("write_file preview = %q, %v", lines, err)
	}
	if out, err := toolNamed(t, s, "write_file").Call(ctx, args); err != nil || !strings.Contains(out, "Successfully wrote") {
		t.Fatalf("write_file = %q, %v", out, err)
	}
	if b, _ := os.ReadFile(notes); string(b) != "alpha\ngamma\n" {
		t.Fatalf("notes.md holds %q after write_file", b)
	}

	// edit_file previews by a dry run, which leaves the file alone.
	edit := json.RawMessage(`{"path":"` + notes + `","edits":[{"oldText":"gamma","newText":"delta"}]}`)
	lines, err = toolNamed(t, s, "edit_file").(engine.Previewer).Preview(ctx, edit)
	if err != nil || !containsLine(lines, "-gamma") || !containsLine(lines, "+delta") {
		t.Fatalf("edit_file preview = %q, %v", lines, err)
	}
	if b, _ := os.ReadFile(notes); string(b) != "alpha\ngamma\n" {
		t.Fatalf("the dry run changed notes.md to %q", b)
	}

	// A missing file is an error result, which fails the call.
	if _, err := toolNamed(t, s, "read_text_file").Call(ctx, json.RawMessage(`{"path":"`+filepath.Join(dir, "nope")+`"}`)); err == nil {
		t.Fatal("reading a missing file did not fail")
	}

	// Killing the process marks the server down and withdraws its tools.
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed server to go down", func() bool { return s.Status().State == StateDown })
	if st := s.Status(); s.Tools() != nil || !strings.Contains(st.Err, "connection lost") {
		t.Fatalf("after the kill: %+v", st)
	}
}

// containsLine reports whether a line of lines contains sub.
func containsLine(lines []string, sub string) bool {
	for _, ln := range lines {
		if strings.Contains(ln, sub) {
			return true
		}
	}
	return false
}
