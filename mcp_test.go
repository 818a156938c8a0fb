package main

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"countersign/engine/models/demo"
	"countersign/engine/tools"
)

// The file assistant's prompts, as the built-in agents file offers them.
const (
	writePrompt = "Write a file hello.txt that says Hello from countersign."
	editFile    = "In todo.md, replace buy milk with buy oat milk."
	listPrompt  = "List the files in the sandbox."
)

// filesRun starts a run of the files agent, whose tools come from the real
// reference filesystem server over stdio, and returns its page's path.
func filesRun(t *testing.T, c *http.Client, base, prompt string) string {
	t.Helper()
	doc, _, _ := httpGet(t, c, base+"/runs/new")
	csrf, _ := doc.Find(`[data-testid=new-run-form] input[name=_csrf]`).Attr("value")
	_, final, status := httpPost(t, c, base+"/runs", url.Values{"_csrf": {csrf}, "agent": {"files"},
		"model": {demo.Name}, "prompt": {prompt}})
	if status != http.StatusOK || !strings.HasPrefix(final.Path, "/runs/") {
		t.Fatalf("start a run of files: status %d at %s", status, final)
	}
	return final.Path
}

// decideAll submits the card's "Approve all" or "Deny all" without
// JavaScript.
func decideAll(t *testing.T, c *http.Client, base string, doc *goquery.Document, decision string) {
	t.Helper()
	f := doc.Find(`[data-testid=approval-card] [data-testid=decision-form]`)
	vals := url.Values{}
	f.Find(`input[type=hidden]`).Each(func(_ int, s *goquery.Selection) { vals.Set(s.AttrOr("name", ""), s.AttrOr("value", "")) })
	vals.Set("decision", decision)
	if decision == "deny" {
		vals.Set("reason", "not today")
	}
	if _, _, status := httpPost(t, c, base+"/tool/resume", vals); status != http.StatusOK {
		t.Fatalf("%s: status %d", decision, status)
	}
}

// sandbox is the folder the server of a test's files agent works in.
func sandbox(srv *testServer) string { return filepath.Join(filepath.Dir(srv.dbPath), "sandbox") }

func readFile(t *testing.T, path string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

// TestMCPFilesystemServer drives the files agent against the real reference
// filesystem server (npm's @modelcontextprotocol/server-filesystem, started
// over stdio by the app): reads run at once, a write waits with its diff
// preview and the destructive badge, approval writes the file exactly once,
// denial leaves the disk as it was, and an edit is previewed by the server's
// own dry run without changing the file.
func TestMCPFilesystemServer(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	c := newHTTPClient(t)
	signInHTTP(t, c, srv.URL, "admin", srv.Password)
	dir := sandbox(srv)

	t.Run("the playground shows the server up", func(t *testing.T) {
		doc, _, _ := httpGet(t, c, srv.URL+"/runs/new")
		s := doc.Find(`[data-agent=files] [data-testid=mcp-server][data-server=filesystem]`)
		if s.AttrOr("data-state", "") != "up" || !strings.Contains(s.Text(), "tools") {
			t.Fatalf("files agent's server on the playground: state %q, %q", s.AttrOr("data-state", ""), s.Text())
		}
	})

	t.Run("a read runs at once", func(t *testing.T) {
		run := filesRun(t, c, srv.URL, listPrompt)
		doc := waitRunStatus(t, c, srv.URL, run, "completed")
		answer := doc.Find(`[data-testid=final-answer]`).Text()
		for _, name := range []string{"notes.md", "todo.md", "draft.md", "archive"} {
			if !strings.Contains(answer, name) {
				t.Errorf("answer %q does not name %s", answer, name)
			}
		}
	})

	t.Run("deny leaves the disk unchanged", func(t *testing.T) {
		run := filesRun(t, c, srv.URL, writePrompt)
		doc := waitRunStatus(t, c, srv.URL, run, "waiting_for_approval")
		if _, ok := readFile(t, filepath.Join(dir, "hello.txt")); ok {
			t.Fatal("hello.txt exists while its write waits")
		}
		decideAll(t, c, srv.URL, doc, "deny")
		waitRunStatus(t, c, srv.URL, run, "completed")
		if _, ok := readFile(t, filepath.Join(dir, "hello.txt")); ok {
			t.Fatal("a denied write_file wrote hello.txt")
		}
	})

	t.Run("approve writes the file once", func(t *testing.T) {
		run := filesRun(t, c, srv.URL, writePrompt)
		doc := waitRunStatus(t, c, srv.URL, run, "waiting_for_approval")
		call := doc.Find(`[data-testid=approval-card] [data-testid=pending-call]`)
		if call.Find(`.tool-name`).First().Text() != "write_file" || call.AttrOr("data-kind", "") != "write" {
			t.Fatalf("pending call %q of kind %q, want the write write_file", call.Find(`.tool-name`).First().Text(), call.AttrOr("data-kind", ""))
		}
		if call.Find(`[data-testid=call-destructive]`).Length() != 1 {
			t.Error("write_file (destructiveHint) has no destructive badge")
		}
		if got := call.Find(`[data-testid=call-source]`).Text(); !strings.Contains(got, "MCP server filesystem") {
			t.Errorf("call source %q", got)
		}
		if got := call.Find(`[data-testid=preview]`).Text(); !strings.Contains(got, "+ Hello from countersign.") {
			t.Errorf("write_file preview %q does not show the new line", got)
		}
		decideAll(t, c, srv.URL, doc, "approve")
		doc = waitRunStatus(t, c, srv.URL, run, "completed")
		if got, _ := readFile(t, filepath.Join(dir, "hello.txt")); got != "Hello from countersign.\n" {
			t.Fatalf("hello.txt = %q", got)
		}
		if n := doc.Find(`[data-testid=step][data-kind=tool_started]`).Length(); n != 1 {
			t.Fatalf("%d tool_started steps, want the write once", n)
		}
	})

	t.Run("an edit previews its diff", func(t *testing.T) {
		before := tools.SandboxFiles()["todo.md"]
		run := filesRun(t, c, srv.URL, editFile)
		doc := waitRunStatus(t, c, srv.URL, run, "waiting_for_approval")
		preview := doc.Find(`[data-testid=approval-card] [data-testid=pending-call] [data-testid=preview]`).Text()
		if !strings.Contains(preview, "-- [ ] buy milk") || !strings.Contains(preview, "+- [ ] buy oat milk") {
			t.Fatalf("edit_file preview %q is not the server's dry-run diff", preview)
		}
		if got, _ := readFile(t, filepath.Join(dir, "todo.md")); got != before {
			t.Fatalf("the dry run changed todo.md: %q", got)
		}
		decideAll(t, c, srv.URL, doc, "approve")
		waitRunStatus(t, c, srv.URL, run, "completed")
		want := strings.Replace(before, "buy milk", "buy oat milk", 1)
		if got, _ := readFile(t, filepath.Join(dir, "todo.md")); got != want {
			t.Fatalf("todo.md after the edit = %q, want %q", got, want)
		}
	})
}
