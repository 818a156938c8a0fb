package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// switchSet is a Toolset whose tools are offered only while it is up, as
// an MCP server's are.
type switchSet struct {
	mu    sync.Mutex
	up    bool
	tools []Tool
}

func (s *switchSet) Tools() []Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.up {
		return nil
	}
	return s.tools
}

func (s *switchSet) set(up bool) {
	s.mu.Lock()
	s.up = up
	s.mu.Unlock()
}

// hintedWrite is a write tool with hints, as an MCP server's writes are.
type hintedWrite struct {
	writeTool
	hints ToolHints
}

func (h hintedWrite) Hints() ToolHints { return h.hints }

func TestOfferedToolsFollowTheToolsets(t *testing.T) {
	builtin, shadow := newRead("get"), newRead("get")
	remote := newRead("list_directory")
	set := &switchSet{up: true, tools: []Tool{shadow, remote}}
	a := Agent{Name: "files", Tools: []Tool{builtin}, Toolsets: []Toolset{set}}

	got := a.OfferedTools()
	if len(got) != 2 || got[0] != Tool(builtin) || got[1] != Tool(remote) {
		t.Fatalf("offered while up = %v, want the built-in get (not the server's) and list_directory", names(got))
	}
	set.set(false)
	if got := a.OfferedTools(); len(got) != 1 || got[0] != Tool(builtin) {
		t.Fatalf("offered while down = %v, want the built-in tool alone", names(got))
	}
}

func names(ts []Tool) string {
	var out []string
	for _, t := range ts {
		out = append(out, fmt.Sprintf("%s@%p", t.Name(), t))
	}
	return strings.Join(out, ",")
}

func TestToolGoneBeforeResumeIsNotPermitted(t *testing.T) {
	put := newWrite("put")
	set := &switchSet{up: true, tools: []Tool{put}}
	a := Agent{Name: "files", Toolsets: []Toolset{set}}
	model := &scriptModel{responses: []ModelResponse{calls(call("c1", "put", `{}`)), answer("ok")}}
	rec := &events{}
	_, err := NewLoop(a, model, rec).Run(context.Background(), Request{Prompt: "write"})
	st := mustSuspend(t, err)

	set.set(false) // the server went down while the turn waited
	res, err := NewLoop(a, model, rec).Resume(context.Background(), st, approve(st, "olga"))
	if err != nil {
		t.Fatal(err)
	}
	if put.calls() != 0 {
		t.Fatalf("a call whose tool went away ran %d time(s)", put.calls())
	}
	fin := rec.ofKind(EventToolFinished)
	if len(fin) != 1 || fin[0].Outcome != OutcomeNotPermitted {
		t.Fatalf("tool_finished = %+v, want one not_permitted", fin)
	}
	if res.Answer != "ok" {
		t.Fatalf("answer = %q", res.Answer)
	}
}

func TestExternalWriteFenceIsMarked(t *testing.T) {
	ext := hintedWrite{writeTool: newWrite("write_file"), hints: ToolHints{Source: "MCP server fs", Destructive: true, External: true}}
	local := newWrite("put")
	model := &scriptModel{responses: []ModelResponse{
		calls(call("c1", "write_file", `{}`), call("c2", "put", `{}`)), answer("done"),
	}}
	rec := &events{}
	loop := &Loop{Model: model, Tools: []Tool{ext, local}, Recorder: rec}
	_, err := loop.Run(context.Background(), Request{Prompt: "write"})
	st := mustSuspend(t, err)
	if _, err := loop.Resume(context.Background(), st, approve(st, "olga")); err != nil {
		t.Fatal(err)
	}
	started := rec.ofKind(EventToolStarted)
	if len(started) != 2 || !started[0].External || started[1].External {
		t.Fatalf("tool_started external = %v, %v; want the MCP write's fence alone marked", started[0].External, started[1].External)
	}
	if h := HintsOf(ext); !h.Destructive || h.Source != "MCP server fs" {
		t.Fatalf("hints = %+v", h)
	}
	if h := HintsOf(local); h != (ToolHints{}) {
		t.Fatalf("hints of a tool without any = %+v", h)
	}
}

func TestWriteInDoubtEndsTheRunWithoutRetry(t *testing.T) {
	w := newWrite("write_file")
	w.err = fmt.Errorf("MCP server fs went away during the call: %w", ErrWriteInDoubt)
	model := &scriptModel{responses: []ModelResponse{calls(call("c1", "write_file", `{}`)), answer("never asked")}}
	rec := &events{}
	loop := &Loop{Model: model, Tools: []Tool{w}, Recorder: rec}
	_, err := loop.Run(context.Background(), Request{Prompt: "write"})
	st := mustSuspend(t, err)
	_, err = loop.Resume(context.Background(), st, approve(st, "olga"))
	var re *RunError
	if !errors.As(err, &re) || re.Termination != TermInterrupted || !errors.Is(err, ErrWriteInDoubt) {
		t.Fatalf("err = %v, want a RunError interrupted_during_write wrapping ErrWriteInDoubt", err)
	}
	if w.calls() != 1 {
		t.Fatalf("the write in doubt was called %d times, want once", w.calls())
	}
	fin := rec.ofKind(EventToolFinished)
	if len(fin) != 1 || !fin[0].IsError || !strings.Contains(fin[0].Result, "went away") {
		t.Fatalf("tool_finished = %+v, want the failure recorded", fin)
	}
	if got := len(model.requests); got != 1 {
		t.Fatalf("the model was asked %d times, want no turn after the write in doubt", got)
	}
}

func TestReadInDoubtIsAnOrdinaryError(t *testing.T) {
	r := newRead("read_file")
	r.err = fmt.Errorf("server went away: %w", ErrWriteInDoubt) // a read has nothing in doubt
	model := &scriptModel{responses: []ModelResponse{calls(call("c1", "read_file", `{}`)), answer("it failed")}}
	loop := &Loop{Model: model, Tools: []Tool{r}, Recorder: &events{}}
	res, err := loop.Run(context.Background(), Request{Prompt: "read"})
	if err != nil || res.Answer != "it failed" {
		t.Fatalf("res, err = %+v, %v; want the model told of the error", res, err)
	}
}
