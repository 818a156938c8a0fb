package mcptools

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"countersign/engine"
	"countersign/engine/tools"
)

// disk is the state of filesServer.
type disk struct {
	mu    sync.Mutex
	files map[string]string
	edits int
}

func (d *disk) editCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.edits
}

func (d *disk) get(path string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.files[path]
	return s, ok
}

// filesServer is a small filesystem server: read_file, write_file, and
// edit_file with a dryRun argument.
func filesServer(d *disk) *memServer {
	return newMemServer(func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "read_file", InputSchema: object("path"), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				path, _ := argsOf(req)["path"].(string)
				if text, ok := d.get(path); ok {
					return textResult(text), nil
				}
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "ENOENT: " + path}}}, nil
			})
		s.AddTool(&mcp.Tool{Name: "write_file", InputSchema: object("path", "content")},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				a := argsOf(req)
				d.mu.Lock()
				defer d.mu.Unlock()
				d.files[a["path"].(string)] = a["content"].(string)
				return textResult("written"), nil
			})
		s.AddTool(&mcp.Tool{Name: "edit_file", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"dryRun":{"type":"boolean"}}}`)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				a := argsOf(req)
				if a["path"] == "locked.md" {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "locked.md is locked"}}}, nil
				}
				if a["dryRun"] == true {
					return textResult("--- a/" + a["path"].(string) + "\n+++ b\n-old\n+new\n"), nil
				}
				d.mu.Lock()
				defer d.mu.Unlock()
				d.edits++
				return textResult("edited"), nil
			})
	})
}

// previewsConfig previews edit_file by a dry run and write_file by a diff.
func previewsConfig() ServerConfig {
	return ServerConfig{Name: "files", Previews: map[string]PreviewSpec{
		"edit_file":  {DryRun: "dryRun"},
		"write_file": {DiffAgainst: "read_file"},
		"read_file":  {DryRun: "dryRun"}, // a read tool is never previewed
	}}
}

// previewer returns the tool of that name as a Previewer.
func previewer(t *testing.T, s *Server, name string) engine.Previewer {
	t.Helper()
	p, ok := toolNamed(t, s, name).(engine.Previewer)
	if !ok {
		t.Fatalf("%s does not preview", name)
	}
	return p
}

func TestPreviewByDryRun(t *testing.T) {
	d := &disk{files: map[string]string{}}
	s := start(t, filesServer(d), previewsConfig(), nil)
	if _, ok := toolNamed(t, s, "read_file").(engine.Previewer); ok {
		t.Fatal("a read tool previews")
	}
	if !engine.NeedsApproval(toolNamed(t, s, "edit_file")) {
		t.Fatal("a previewed write does not need approval")
	}
	lines, err := previewer(t, s, "edit_file").Preview(context.Background(), json.RawMessage(`{"path":"notes.md"}`))
	want := []string{"--- a/notes.md", "+++ b", "-old", "+new"}
	if err != nil || !reflect.DeepEqual(lines, want) {
		t.Fatalf("preview = %q, %v; want %q", lines, err, want)
	}
	if d.editCount() != 0 {
		t.Fatal("the dry run edited")
	}
}

func TestFailedDryRunIsAnError(t *testing.T) {
	s := start(t, filesServer(&disk{files: map[string]string{}}), previewsConfig(), nil)
	_, err := previewer(t, s, "edit_file").Preview(context.Background(), json.RawMessage(`{"path":"locked.md"}`))
	if err == nil || !strings.Contains(err.Error(), "locked.md is locked") {
		t.Fatalf("err = %v, want the dry run's error", err)
	}
}

func TestPreviewByDiffAgainst(t *testing.T) {
	d := &disk{files: map[string]string{"notes.md": "one\ntwo\n"}}
	s := start(t, filesServer(d), previewsConfig(), nil)
	p := previewer(t, s, "write_file")

	lines, err := p.Preview(context.Background(), json.RawMessage(`{"path":"notes.md","content":"one\nthree\n"}`))
	want := append([]string{"write_file would replace notes.md:"}, tools.LineDiff("one\ntwo\n", "one\nthree\n")...)
	if err != nil || !reflect.DeepEqual(lines, want) {
		t.Fatalf("preview = %q, %v; want %q", lines, err, want)
	}

	lines, err = p.Preview(context.Background(), json.RawMessage(`{"path":"new.md","content":"hello\n"}`))
	want = append([]string{"write_file would create new.md (new file):"}, tools.LineDiff("", "hello\n")...)
	if err != nil || !reflect.DeepEqual(lines, want) {
		t.Fatalf("preview of a new file = %q, %v; want %q", lines, err, want)
	}
	if _, ok := d.get("new.md"); ok {
		t.Fatal("the preview wrote the file")
	}

	if _, err := p.Preview(context.Background(), json.RawMessage(`{"content":"x"}`)); err == nil {
		t.Fatal("a preview without a path did not fail")
	}
}

func TestPreviewWhileDownFails(t *testing.T) {
	m := filesServer(&disk{files: map[string]string{}})
	s := start(t, m, ServerConfig{Name: "files", Previews: previewsConfig().Previews, MinBackoff: time.Hour, MaxBackoff: time.Hour}, nil)
	p := previewer(t, s, "write_file")
	m.drop()
	waitFor(t, "the server to go down", func() bool { return s.Status().State == StateDown })
	_, err := p.Preview(context.Background(), json.RawMessage(`{"path":"a","content":"b"}`))
	if err == nil || err.Error() != "MCP server files is down" {
		t.Fatalf("err = %v", err)
	}
}

func TestMisconfiguredPreviewFails(t *testing.T) {
	s := start(t, filesServer(&disk{files: map[string]string{}}), ServerConfig{Previews: map[string]PreviewSpec{
		"write_file": {DryRun: "dryRun", DiffAgainst: "read_file"}}}, nil)
	_, err := previewer(t, s, "write_file").Preview(context.Background(), json.RawMessage(`{"path":"a","content":"b"}`))
	if err == nil || !strings.Contains(err.Error(), "misconfigured") {
		t.Fatalf("err = %v", err)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  ServerConfig
		want string // part of the error; empty: valid
	}{
		{"stdio", ServerConfig{Name: "f", Command: "mcp-server-filesystem"}, ""},
		{"http", ServerConfig{Name: "f", URL: "https://mcp.example.com/mcp"}, ""},
		{"no name", ServerConfig{Command: "x"}, "no name"},
		{"neither", ServerConfig{Name: "f"}, "either command"},
		{"both", ServerConfig{Name: "f", Command: "x", URL: "http://a/"}, "not both"},
		{"bad url", ServerConfig{Name: "f", URL: "ftp://a/"}, "not an http"},
		{"empty preview", ServerConfig{Name: "f", Command: "x", Previews: map[string]PreviewSpec{"w": {}}}, "preview of w"},
		{"double preview", ServerConfig{Name: "f", Command: "x", Previews: map[string]PreviewSpec{"w": {DryRun: "d", DiffAgainst: "r"}}}, "not both"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err %v, want one saying %q", c.name, err, c.want)
		}
	}
}

func TestInvalidConfigIsDown(t *testing.T) {
	s := New(ServerConfig{Agent: "a", Name: "nothing", MinBackoff: time.Hour}, Options{})
	defer s.Close()
	s.Start(context.Background())
	st := s.Status()
	if st.State != StateDown || !strings.Contains(st.Err, "either command") {
		t.Fatalf("status %+v", st)
	}
}

func TestPreviewNeverCallsAWrite(t *testing.T) {
	d := &disk{files: map[string]string{}}
	s := start(t, filesServer(d), ServerConfig{Previews: map[string]PreviewSpec{
		"write_file": {DryRun: "dryRun"},          // write_file has no dryRun argument
		"edit_file":  {DiffAgainst: "write_file"}, // write_file does not only read
	}}, nil)
	ctx := context.Background()
	_, err := previewer(t, s, "write_file").Preview(ctx, json.RawMessage(`{"path":"a.md","content":"x"}`))
	if err == nil || !strings.Contains(err.Error(), `no boolean argument "dryRun"`) {
		t.Errorf("dry run of a tool without the argument: %v", err)
	}
	_, err = previewer(t, s, "edit_file").Preview(ctx, json.RawMessage(`{"path":"a.md","content":"x"}`))
	if err == nil || !strings.Contains(err.Error(), "no read-only tool write_file") {
		t.Errorf("diff against a write tool: %v", err)
	}
	if _, ok := d.get("a.md"); ok || d.editCount() != 0 {
		t.Fatalf("a preview wrote: edits %d", d.editCount())
	}
}

func TestHasBoolArg(t *testing.T) {
	cases := []struct {
		schema string
		want   bool
	}{
		{`{"type":"object","properties":{"dryRun":{"type":"boolean","default":false}}}`, true},
		{`{"type":"object","properties":{"dryRun":{"type":["boolean","null"]}}}`, true},
		{`{"type":"object","properties":{"dryRun":{}}}`, true},
		{`{"type":"object","properties":{"dryRun":{"type":"string"}}}`, false},
		{`{"type":"object","properties":{"dry_run":{"type":"boolean"}}}`, false},
		{`{"type":"object"}`, false},
	}
	for _, c := range cases {
		if got := hasBoolArg(json.RawMessage(c.schema), "dryRun"); got != c.want {
			t.Errorf("hasBoolArg(%s) = %v", c.schema, got)
		}
	}
}

func TestUnfence(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"```diff", "-a", "+b", "```"}, []string{"-a", "+b"}},
		{[]string{"```", "```"}, []string{}},
		{[]string{"-a", "+b"}, []string{"-a", "+b"}},
		{[]string{"```diff", "-a"}, []string{"```diff", "-a"}}, // not closed: left as it is
		{[]string{"-a", "```"}, []string{"-a", "```"}},
	} {
		if got := unfence(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("unfence(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
