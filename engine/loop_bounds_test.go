package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Tests of what the loop does with bad calls, failures and its limits.

func TestBadCallsBecomeErrorResults(t *testing.T) {
	big := strings.Repeat("é", MaxResultBytes) // 2 bytes a rune
	cases := []struct {
		name    string
		tool    *fakeTool
		call    ToolCall
		outcome Outcome
		check   func(t *testing.T, content string)
	}{
		{"unknown tool", newRead("get"), call("a", "nope", `{}`), OutcomeUnknownTool, func(t *testing.T, c string) {
			if !strings.Contains(c, `"nope" is not offered`) || !strings.Contains(c, "get") {
				t.Fatalf("content %q", c)
			}
		}},
		{"invalid JSON", newRead("get"), call("a", "get", `{"k":`), OutcomeBadArguments, nil},
		{"not an object", newRead("get"), call("a", "get", `[1,2]`), OutcomeBadArguments, nil},
		{"null", newRead("get"), call("a", "get", `null`), OutcomeBadArguments, nil},
		{"tool error", &fakeTool{name: "get", err: errors.New("page missing")}, call("a", "get", `{}`), OutcomeToolError, func(t *testing.T, c string) {
			if c != "error: page missing" {
				t.Fatalf("content %q", c)
			}
		}},
		{"huge result", &fakeTool{name: "get", result: big}, call("a", "get", ``), OutcomeOK, func(t *testing.T, c string) {
			if !strings.Contains(c, "[result truncated: 50000 of 100000 bytes shown]") || len(c) > MaxResultBytes+100 {
				t.Fatalf("len %d, tail %q", len(c), c[len(c)-60:])
			}
			if !json.Valid([]byte(`"` + c[:MaxResultBytes] + `"`)) {
				t.Fatal("cut splits a rune")
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			model := &scriptModel{responses: []ModelResponse{calls(tc.call), answer("fine")}}
			rec := &events{}
			loop := &Loop{Model: model, Tools: []Tool{tc.tool}, Recorder: rec}
			res, err := loop.Run(context.Background(), Request{Prompt: "p"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Answer != "fine" {
				t.Fatalf("loop did not continue: %+v", res)
			}
			msgs := model.lastRequest().Messages
			got := msgs[len(msgs)-1]
			if got.Role != RoleTool || got.ToolCallID != "a" {
				t.Fatalf("no result for the call: %+v", got)
			}
			if got.IsError != (tc.outcome != OutcomeOK) {
				t.Fatalf("is_error = %v", got.IsError)
			}
			if fin := rec.ofKind(EventToolFinished); len(fin) != 1 || fin[0].Outcome != tc.outcome {
				t.Fatalf("tool_finished %+v", fin)
			}
			if tc.check != nil {
				tc.check(t, got.Content)
			}
		})
	}
}

func TestToolPanicEndsRunAsToolError(t *testing.T) {
	tool := &fakeTool{name: "get", panics: true}
	model := &scriptModel{responses: []ModelResponse{calls(call("a", "get", `{}`)), answer("x")}}
	rec := &events{}
	loop := &Loop{Model: model, Tools: []Tool{tool}, Recorder: rec}
	_, err := loop.Run(context.Background(), Request{Prompt: "p"})
	var re *RunError
	if !errors.As(err, &re) || re.Termination != TermToolError {
		t.Fatalf("err = %v", err)
	}
	if got := rec.kinds(); got != "model_turn,tool_started,tool_finished" {
		t.Fatalf("events %s: the fence must be closed", got)
	}
}

func TestPreviewFailuresBecomeLines(t *testing.T) {
	failing := newWrite("a")
	failing.previewErr = errors.New("page not found")
	panicking := newWrite("b")
	panicking.previewPanic = true
	long := newWrite("c")
	for i := 0; i < 30; i++ {
		long.preview = append(long.preview, strings.Repeat("x", 900))
	}
	model := &scriptModel{responses: []ModelResponse{calls(
		call("1", "a", `{}`), call("2", "b", `{}`), call("3", "c", `{}`), call("4", "a", `not json`))}}
	loop := &Loop{Model: model, Tools: []Tool{failing, panicking, long}}
	_, err := loop.Run(context.Background(), Request{Prompt: "p"})
	st := mustSuspend(t, err)
	ps := st.Previews
	if len(ps) != 4 {
		t.Fatalf("previews %+v", ps)
	}
	if ps[0].Lines[0] != "preview unavailable: page not found" {
		t.Fatalf("error preview %q", ps[0].Lines)
	}
	if !strings.HasPrefix(ps[1].Lines[0], "preview unavailable: it panicked") {
		t.Fatalf("panic preview %q", ps[1].Lines)
	}
	if len(ps[2].Lines) != MaxPreviewLines+1 || len(ps[2].Lines[0]) > MaxPreviewLineBytes ||
		ps[2].Lines[MaxPreviewLines] != "… 10 more line(s) not shown" {
		t.Fatalf("long preview: %d lines, first %d bytes", len(ps[2].Lines), len(ps[2].Lines[0]))
	}
	if !strings.Contains(ps[3].Lines[0], "not a valid JSON object") {
		t.Fatalf("bad args preview %q", ps[3].Lines)
	}
}

func TestRecorderFailureStopsBeforeTheWrite(t *testing.T) {
	write := newWrite("put")
	model := &scriptModel{responses: []ModelResponse{calls(call("a", "put", `{}`)), answer("x")}}
	loop := &Loop{Model: model, Tools: []Tool{write}}
	_, err := loop.Run(context.Background(), Request{Prompt: "p"})
	st := mustSuspend(t, err)
	loop.Recorder = &events{failOn: EventToolStarted}
	if _, err := loop.Resume(context.Background(), st, approve(st, "ann")); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v", err)
	}
	if write.calls() != 0 {
		t.Fatal("the write ran although tool_started was not recorded")
	}
}

func TestModelErrorAndCancel(t *testing.T) {
	model := &scriptModel{err: errors.New("503 upstream")}
	rec := &events{}
	loop := &Loop{Model: model, Recorder: rec}
	_, err := loop.Run(context.Background(), Request{Prompt: "p"})
	var re *RunError
	if !errors.As(err, &re) || re.Termination != TermModelError {
		t.Fatalf("err = %v", err)
	}
	if f := rec.ofKind(EventFailed); len(f) != 1 || f[0].Error != "503 upstream" {
		t.Fatalf("failed events %+v", f)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = (&Loop{Model: &scriptModel{responses: []ModelResponse{answer("x")}}}).Run(ctx, Request{Prompt: "p"})
	if !errors.As(err, &re) || re.Termination != TermCancelled {
		t.Fatalf("cancelled err = %v", err)
	}
	if _, err := loop.Run(context.Background(), Request{Prompt: "  "}); err == nil {
		t.Fatal("empty prompt accepted")
	}
}

func TestDuplicateAndMissingCallIDsAreNormalised(t *testing.T) {
	read := newRead("get")
	model := &scriptModel{responses: []ModelResponse{calls(call("x", "get", `{}`), call("x", "get", `{}`), call("", "get", `{}`)), answer("ok")}}
	res, err := (&Loop{Model: model, Tools: []Tool{read}}).Run(context.Background(), Request{Prompt: "p"})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, inv := range res.Trace {
		ids[inv.Call.ID] = true
	}
	if len(ids) != 3 || ids[""] {
		t.Fatalf("ids %v", ids)
	}
}

// plainLoop is the tool loop without the approval feature: the reference the
// read-only comparison holds the real loop to.
func plainLoop(ctx context.Context, m Model, tools []Tool, transcript []Message) ([]Message, error) {
	var specs []ToolSpec
	byName := map[string]Tool{}
	for _, t := range tools {
		specs = append(specs, ToolSpec{Name: t.Name(), Description: t.Description(), Parameters: t.Schema()})
		byName[t.Name()] = t
	}
	for i := 0; i < DefaultMaxIterations; i++ {
		resp, err := m.Generate(ctx, ModelRequest{Messages: transcript, Tools: specs})
		if err != nil {
			return nil, err
		}
		msg := resp.Message
		msg.Role = RoleAssistant
		transcript = append(transcript, msg)
		if len(msg.ToolCalls) == 0 {
			return transcript, nil
		}
		for _, c := range msg.ToolCalls {
			out, err := byName[c.Name].Call(ctx, json.RawMessage(c.Arguments))
			m := Message{Role: RoleTool, ToolCallID: c.ID, ToolName: c.Name, Content: out}
			if err != nil {
				m.Content, m.IsError = "error: "+err.Error(), true
			}
			transcript = append(transcript, m)
		}
	}
	return transcript, nil
}

func TestReadOnlyRunMatchesPlainLoopByteForByte(t *testing.T) {
	script := func() *scriptModel {
		return &scriptModel{responses: []ModelResponse{
			calls(call("a", "get", `{"slug":"x"}`), call("b", "count", `{}`)),
			calls(call("c", "get", `{"slug":"y"}`)),
			answer("there are 3"),
		}}
	}
	withApproval := &Loop{Model: script(), Tools: []Tool{newRead("get"), &fakeTool{name: "count", err: errors.New("nope")}}}
	res, err := withApproval.Run(context.Background(), Request{Prompt: "how many?"})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := plainLoop(context.Background(), script(), []Tool{newRead("get"), &fakeTool{name: "count", err: errors.New("nope")}}, withApproval.Assemble("how many?"))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(res.Transcript)
	want, _ := json.Marshal(ref)
	if !bytes.Equal(got, want) {
		t.Fatalf("transcripts differ\n got %s\nwant %s", got, want)
	}
}

func TestAssembleOrder(t *testing.T) {
	l := &Loop{Instructions: "be brief"}
	msgs := l.Assemble("hello")
	if len(msgs) != 3 || msgs[0].Content != DefaultSystemPrompt || msgs[1].Content != "be brief" || msgs[2].Role != RoleUser {
		t.Fatalf("assembled %+v", msgs)
	}
	if got := (&Loop{SystemPrompt: "s"}).Assemble("u"); len(got) != 2 || got[0].Content != "s" {
		t.Fatalf("assembled %+v", got)
	}
}

func TestFaultPointsOrder(t *testing.T) {
	read, write := newRead("get"), newWrite("put")
	model := &scriptModel{responses: []ModelResponse{
		calls(call("a", "get", `{}`), call("b", "put", `{}`)),
		answer("ok"),
	}}
	var points []string
	loop := &Loop{Model: model, Tools: []Tool{read, write}, Fault: func(p string) { points = append(points, p) }}
	_, err := loop.Run(context.Background(), Request{Prompt: "p"})
	st := mustSuspend(t, err)
	if _, err := loop.Resume(context.Background(), st, approve(st, "ann")); err != nil {
		t.Fatal(err)
	}
	want := "model_call,tool_finished,write_started,write_done,tool_finished,model_call"
	if got := strings.Join(points, ","); got != want {
		t.Fatalf("fault points\n got %s\nwant %s", got, want)
	}
}

func TestCallsPerTurnAreBounded(t *testing.T) {
	read := newRead("get")
	var many []ToolCall
	for i := 0; i < MaxCallsPerTurn+5; i++ {
		many = append(many, call("", "get", `{}`))
	}
	model := &scriptModel{responses: []ModelResponse{calls(many...), answer("ok")}}
	res, err := (&Loop{Model: model, Tools: []Tool{read}}).Run(context.Background(), Request{Prompt: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if read.calls() != MaxCallsPerTurn || len(res.Trace) != MaxCallsPerTurn {
		t.Fatalf("ran %d calls, want %d", read.calls(), MaxCallsPerTurn)
	}
	if err := validateTranscript(res.Transcript); err != nil {
		t.Fatalf("transcript: %v", err)
	}
}
