package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"countersign/app"
	"countersign/engine"
	"countersign/engine/mcptools"
	"countersign/engine/tools"
	"countersign/policy"
)

// notesServer is an in-process MCP server with a read and a destructive
// write, reached over pipes; a test takes it down and keeps it down.
type notesServer struct {
	srv *mcp.Server

	mu     sync.Mutex
	down   bool
	pipes  []net.Conn
	writes []string
}

func newNotesServer() *notesServer {
	n := &notesServer{srv: mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)}
	n.srv.AddTool(&mcp.Tool{Name: "read_note", Description: "Read a note.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a note"}}}, nil
		})
	n.srv.AddTool(&mcp.Tool{Name: "write_note", Description: "Overwrite a note.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n.mu.Lock()
			n.writes = append(n.writes, string(req.Params.Arguments))
			n.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "written"}}}, nil
		})
	return n
}

// transport is the Server's Options.Transport.
func (n *notesServer) transport(ctx context.Context) (mcp.Transport, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down {
		return nil, errors.New("connection refused")
	}
	ours, theirs := net.Pipe()
	if _, err := n.srv.Connect(ctx, &mcp.IOTransport{Reader: theirs, Writer: theirs}, nil); err != nil {
		return nil, err
	}
	n.pipes = append(n.pipes, ours, theirs)
	return &mcp.IOTransport{Reader: ours, Writer: ours}, nil
}

// takeDown drops every connection and refuses new ones.
func (n *notesServer) takeDown() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down = true
	for _, p := range n.pipes {
		_ = p.Close()
	}
	n.pipes = nil
}

func (n *notesServer) written() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.writes...)
}

// noteModel calls write_note once, then answers with the tool's result.
type noteModel struct{}

func (noteModel) Generate(_ context.Context, req engine.ModelRequest) (engine.ModelResponse, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == engine.RoleTool {
		return engine.ModelResponse{Message: engine.Message{Role: engine.RoleAssistant, Content: "done: " + last.Content}}, nil
	}
	return engine.ModelResponse{Message: engine.Message{Role: engine.RoleAssistant, ToolCalls: []engine.ToolCall{
		{ID: "c1", Name: "write_note", Arguments: `{"text":"hello"}`}}}}, nil
}

// TestMCPToolsOnTheCardAndThePages runs an agent whose tools come from an
// MCP server: the playground shows the server up with its tools, the card
// and the API mark the server's write as destructive and name its source,
// and when the server goes down while the turn waits, the run page says so
// and approving answers the call as no longer permitted without sending it.
func TestMCPToolsOnTheCardAndThePages(t *testing.T) {
	t.Parallel()
	notes := newNotesServer()
	var srv *mcptools.Server
	agents := func(tools.Workspace, func() time.Time) []engine.Agent {
		srv = mcptools.New(mcptools.ServerConfig{Agent: "noter", Name: "notes", MinBackoff: time.Hour, MaxBackoff: time.Hour},
			mcptools.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Transport: notes.transport})
		return []engine.Agent{{Name: "noter", Title: "Noter", Instructions: "Write notes.", Toolsets: []engine.Toolset{srv}}}
	}
	a := newTestApp(t, withAgents(agents, app.Model{Name: "notes-model", Model: noteModel{}}))
	olga := a.as(olgaName)

	s := olga.get("/runs/new").doc.Find(`[data-agent=noter] [data-testid=mcp-server][data-server=notes]`)
	if s.AttrOr("data-state", "") != "up" || !strings.Contains(s.Text(), "2 tools") {
		t.Fatalf("playground: server state %q, %q; want up with 2 tools", s.AttrOr("data-state", ""), s.Text())
	}

	r, err := a.rt.StartRun(context.Background(), engine.NewRun{Agent: "noter", Model: "notes-model", Prompt: "note hello", InitiatedBy: olgaName})
	if err != nil {
		t.Fatal(err)
	}
	a.waitStatus(r.ID, engine.StatusWaiting)
	page := olga.get("/runs/" + r.ID)
	call := page.doc.Find(`[data-testid=approval-card] [data-testid=pending-call]`)
	if call.AttrOr("data-kind", "") != "write" || call.Find(testid("call-destructive")).Length() != 1 {
		t.Fatalf("card: kind %q, destructive badge %d; want a destructive write", call.AttrOr("data-kind", ""), call.Find(testid("call-destructive")).Length())
	}
	if got := call.Find(testid("call-source")).Text(); !strings.Contains(got, "MCP server notes") {
		t.Errorf("card source %q", got)
	}
	if st := page.doc.Find(testid("run-servers")+` [data-server=notes]`).AttrOr("data-state", ""); st != "up" {
		t.Errorf("run page server state %q, want up", st)
	}
	var got struct {
		Pending struct {
			Calls []struct {
				Destructive bool   `json:"destructive"`
				Source      string `json:"source"`
			} `json:"calls"`
		} `json:"pending"`
	}
	a.api(olgaName).call(http.MethodGet, "/api/v1/runs/"+r.ID, nil).decode(t, &got)
	if len(got.Pending.Calls) != 1 || !got.Pending.Calls[0].Destructive || got.Pending.Calls[0].Source != "MCP server notes" {
		t.Fatalf("API pending calls = %+v", got.Pending.Calls)
	}

	notes.takeDown()
	waitUntil(t, "the server is seen down", func() bool { return srv.Status().State == mcptools.StateDown })
	page = olga.get("/runs/" + r.ID)
	if st := page.doc.Find(testid("run-servers")+` [data-server=notes]`).AttrOr("data-state", ""); st != "down" {
		t.Fatalf("run page server state %q, want down", st)
	}
	if page.doc.Find(testid("servers-down-note")).Length() != 1 {
		t.Error("the run page does not say what a down server means for the waiting turn")
	}
	if k := page.doc.Find(`[data-testid=approval-card] [data-testid=pending-call]`).AttrOr("data-kind", ""); k != "unknown" {
		t.Errorf("card kind of a call whose tool went away = %q, want unknown", k)
	}

	f := cardForm(t, olga, r.ID, "approve")
	if res := olga.post("/tool/resume", f); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve: %d", res.StatusCode)
	}
	if done := a.waitTerminal(r.ID); done.Status != engine.StatusCompleted {
		t.Fatalf("run %s (%s), want completed", done.Status, done.Termination)
	}
	final := olga.get("/runs/" + r.ID).doc.Find(testid("final-answer")).Text()
	if !strings.Contains(final, engine.NotPermittedPrefix) {
		t.Fatalf("final answer %q, want the call answered as not permitted", final)
	}
	if w := notes.written(); len(w) != 0 {
		t.Fatalf("the server received %v while it was down", w)
	}
}

// waitUntil polls cond for at most ten seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMCPWriteWaivedByARule lets an MCP server's write run without a person
// under an agent's rule, by its name as for a built-in tool: the run never
// waits, the server gets the call once, and the fence names the rule and
// says the side effect leaves the database.
func TestMCPWriteWaivedByARule(t *testing.T) {
	t.Parallel()
	notes := newNotesServer()
	agents := func(tools.Workspace, func() time.Time) []engine.Agent {
		srv := mcptools.New(mcptools.ServerConfig{Agent: "noter", Name: "notes"},
			mcptools.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Transport: notes.transport})
		pol, err := policy.New(policy.Config{Agent: "noter", Rules: []policy.Rule{
			{Name: "notes-are-cheap", Tool: "write_note", Approval: policy.Never, When: `args.text == "hello"`}}})
		if err != nil {
			t.Fatal(err)
		}
		return []engine.Agent{{Name: "noter", Title: "Noter", Instructions: "Write notes.", Toolsets: []engine.Toolset{srv}, Policy: pol}}
	}
	a := newTestApp(t, withAgents(agents, app.Model{Name: "notes-model", Model: noteModel{}}))
	r, err := a.rt.StartRun(context.Background(), engine.NewRun{Agent: "noter", Model: "notes-model", Prompt: "note hello", InitiatedBy: olgaName})
	if err != nil {
		t.Fatal(err)
	}
	if done := a.waitTerminal(r.ID); done.Status != engine.StatusCompleted {
		t.Fatalf("run %s (%s: %s), want completed without waiting", done.Status, done.Termination, done.Error)
	}
	if w := notes.written(); len(w) != 1 || w[0] != `{"text":"hello"}` {
		t.Fatalf("the server received %v, want the write once", w)
	}
	evs, err := a.db.Events(context.Background(), r.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var fences []engine.Event
	for _, ev := range evs {
		if ev.Event.Kind == engine.EventSuspended {
			t.Fatal("the run waited for a person")
		}
		if ev.Event.Kind == engine.EventToolStarted {
			fences = append(fences, ev.Event)
		}
	}
	if len(fences) != 1 || fences[0].WaivedBy != "rule notes-are-cheap" || !fences[0].External {
		t.Fatalf("fences = %+v, want one external fence waived by the rule", fences)
	}
}
