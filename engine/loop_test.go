package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestRunSuspendsOnApprovalTool(t *testing.T) {
	read, write := newRead("get"), newWrite("put")
	model := &scriptModel{responses: []ModelResponse{
		calls(call("c1", "get", `{"k":1}`), call("c2", "put", `{"k":2}`)),
	}}
	rec := &events{}
	loop := &Loop{Model: model, Tools: []Tool{read, write}, Recorder: rec}

	res, err := loop.Run(context.Background(), Request{Prompt: "do it"})
	st := mustSuspend(t, err)
	if res == nil || res.Answer != "" {
		t.Fatalf("result of a suspended run: %+v", res)
	}
	if read.calls() != 0 || write.calls() != 0 {
		t.Fatalf("a mixed turn ran calls before approval: read=%d write=%d", read.calls(), write.calls())
	}
	if got := len(st.Pending); got != 2 {
		t.Fatalf("pending = %d, want both calls of the turn", got)
	}
	last := st.Transcript[len(st.Transcript)-1]
	if last.Role != RoleAssistant || len(last.ToolCalls) != 2 {
		t.Fatalf("transcript must end with the assistant turn, got %+v", last)
	}
	if st.Iterations != 1 || st.Usage.TotalTokens != 12 {
		t.Fatalf("counters = %d/%+v", st.Iterations, st.Usage)
	}
	if strings.Join(st.OfferedTools, ",") != "get,put" {
		t.Fatalf("offered = %v", st.OfferedTools)
	}
	if len(st.Previews) != 1 || st.Previews[0].CallID != "c2" || st.Previews[0].Lines[0] != `would write {"k":2}` {
		t.Fatalf("previews = %+v", st.Previews)
	}
	if got := rec.kinds(); got != "model_turn,suspended" {
		t.Fatalf("events = %s", got)
	}
	if d := rec.ofKind(EventSuspended)[0].Digest; d != TurnDigest(st.Pending) {
		t.Fatalf("suspended event digest %q", d)
	}
	if err := st.Validate(); err != nil {
		t.Fatalf("suspended state does not validate: %v", err)
	}
}

func TestResumeApproveRunsPendingThenContinues(t *testing.T) {
	read, write := newRead("get"), newWrite("put")
	model := &scriptModel{responses: []ModelResponse{
		calls(call("c1", "get", `{}`), call("c2", "put", `{"v":"x"}`)),
		answer("done"),
	}}
	rec := &events{}
	loop := &Loop{Model: model, Tools: []Tool{read, write}, Recorder: rec}
	_, err := loop.Run(context.Background(), Request{Prompt: "p"})
	st := mustSuspend(t, err)

	res, err := loop.Resume(context.Background(), st, approve(st, "ann"))
	if err != nil {
		t.Fatal(err)
	}
	if read.calls() != 1 || write.calls() != 1 {
		t.Fatalf("calls: read=%d write=%d, want 1 each", read.calls(), write.calls())
	}
	if res.Answer != "done" || res.Termination != TermCompleted {
		t.Fatalf("result = %+v", res)
	}
	if res.Iterations != 2 || res.Usage.TotalTokens != 12+25 || res.Usage.PromptTokens != 30 {
		t.Fatalf("counters do not span the run: %d %+v", res.Iterations, res.Usage)
	}
	// The model saw both results, in call order, after the assistant turn.
	msgs := model.lastRequest().Messages
	n := len(msgs)
	if msgs[n-2].ToolCallID != "c1" || msgs[n-1].ToolCallID != "c2" || msgs[n-3].Role != RoleAssistant {
		t.Fatalf("results not in order: %+v", msgs[n-3:])
	}
	want := "model_turn,suspended,decision,tool_started,tool_finished,tool_started,tool_finished,model_turn,finished"
	if got := rec.kinds(); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	started := rec.ofKind(EventToolStarted)
	if started[0].Write || !started[1].Write {
		t.Fatalf("write flags on tool_started: %v %v", started[0].Write, started[1].Write)
	}
	fin := rec.ofKind(EventFinished)[0]
	if fin.Totals.Iterations != 2 || fin.Totals.Usage.TotalTokens != 37 {
		t.Fatalf("finished totals %+v", fin.Totals)
	}
	if len(res.Trace) != 2 || res.Trace[1].Call.ID != "c2" {
		t.Fatalf("trace = %+v", res.Trace)
	}
}

func TestResumeDenyAnswersEveryPendingCall(t *testing.T) {
	read, write := newRead("get"), newWrite("put")
	model := &scriptModel{responses: []ModelResponse{
		calls(call("c1", "get", `{}`), call("c2", "put", `{}`), call("c3", "put", `{}`)),
		answer("understood, nothing was written"),
	}}
	rec := &events{}
	loop := &Loop{Model: model, Tools: []Tool{read, write}, Recorder: rec}
	_, err := loop.Run(context.Background(), Request{Prompt: "p"})
	st := mustSuspend(t, err)

	res, err := loop.Resume(context.Background(), st, deny(st, "bob", "not during the freeze"))
	if err != nil {
		t.Fatal(err)
	}
	if read.calls()+write.calls() != 0 {
		t.Fatalf("a denied turn ran calls: read=%d write=%d", read.calls(), write.calls())
	}
	if res.Termination != TermCompleted || res.Answer != "understood, nothing was written" {
		t.Fatalf("result %+v", res)
	}
	msgs := model.lastRequest().Messages
	results := msgs[len(msgs)-3:]
	for i, m := range results {
		if m.Role != RoleTool || !m.IsError || m.ToolCallID != st.Pending[i].ID {
			t.Fatalf("result %d = %+v", i, m)
		}
		if !strings.HasPrefix(m.Content, DeniedPrefix) || !strings.Contains(m.Content, "not during the freeze") ||
			!strings.Contains(m.Content, "Do not retry") {
			t.Fatalf("denial text does not carry the reason and the no-retry rule: %q", m.Content)
		}
	}
	dec := rec.ofKind(EventDecision)
	if len(dec) != 1 || dec[0].Decision != VerdictDeny || dec[0].By != "bob" || dec[0].Reason != "not during the freeze" {
		t.Fatalf("decision event %+v", dec)
	}
	for _, ev := range rec.ofKind(EventToolFinished) {
		if ev.Outcome != OutcomeDenied {
			t.Fatalf("outcome %q", ev.Outcome)
		}
	}
	if len(rec.ofKind(EventToolStarted)) != 0 {
		t.Fatal("a denied call was started")
	}
}

func TestCountersFoldAcrossTwoSuspensions(t *testing.T) {
	write := newWrite("put")
	model := &scriptModel{responses: []ModelResponse{
		calls(call("a", "put", `{"n":1}`)),
		calls(call("b", "put", `{"n":2}`)),
		answer("both written"),
	}}
	loop := &Loop{Model: model, Tools: []Tool{write}}
	_, err := loop.Run(context.Background(), Request{Prompt: "p"})
	st1 := mustSuspend(t, err)
	if st1.Iterations != 1 || st1.Usage.TotalTokens != 12 {
		t.Fatalf("first suspension counters %d %+v", st1.Iterations, st1.Usage)
	}
	_, err = loop.Resume(context.Background(), st1, approve(st1, "ann"))
	st2 := mustSuspend(t, err)
	if st2.Iterations != 2 || st2.Usage.TotalTokens != 24 {
		t.Fatalf("second suspension counters %d %+v", st2.Iterations, st2.Usage)
	}
	res, err := loop.Resume(context.Background(), st2, approve(st2, "ann"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Iterations != 3 || res.Usage != (Usage{PromptTokens: 40, CompletionTokens: 9, TotalTokens: 49}) {
		t.Fatalf("final counters %d %+v", res.Iterations, res.Usage)
	}
	if write.calls() != 2 {
		t.Fatalf("writes = %d", write.calls())
	}
	// The trace lists the last segment only.
	if len(res.Trace) != 1 || res.Trace[0].Call.ID != "b" {
		t.Fatalf("trace = %+v", res.Trace)
	}
}

func TestResumeRefusesWithdrawnTool(t *testing.T) {
	write, other := newWrite("put"), newWrite("del")
	model := &scriptModel{responses: []ModelResponse{
		calls(call("a", "put", `{}`), call("b", "del", `{}`)),
		answer("ok"),
	}}
	loop := &Loop{Model: model, Tools: []Tool{write, other}}
	_, err := loop.Run(context.Background(), Request{Prompt: "p"})
	st := mustSuspend(t, err)

	// Between suspend and resume the agent stops offering "del".
	rec := &events{}
	later := &Loop{Model: model, Tools: []Tool{write}, Recorder: rec}
	if _, err := later.Resume(context.Background(), st, approve(st, "ann")); err != nil {
		t.Fatal(err)
	}
	if write.calls() != 1 || other.calls() != 0 {
		t.Fatalf("put=%d del=%d", write.calls(), other.calls())
	}
	msgs := model.lastRequest().Messages
	got := msgs[len(msgs)-1]
	if got.ToolCallID != "b" || !got.IsError || !strings.HasPrefix(got.Content, NotPermittedPrefix) {
		t.Fatalf("withdrawn tool result %+v", got)
	}
	if fin := rec.ofKind(EventToolFinished); fin[1].Outcome != OutcomeNotPermitted {
		t.Fatalf("outcome %q", fin[1].Outcome)
	}
}

func TestResumeRefusesStaleAndCorrupt(t *testing.T) {
	write := newWrite("put")
	model := &scriptModel{responses: []ModelResponse{calls(call("a", "put", `{}`))}}
	loop := &Loop{Model: model, Tools: []Tool{write}}
	_, err := loop.Run(context.Background(), Request{Prompt: "p"})
	st := mustSuspend(t, err)

	corrupt := *st
	corrupt.Pending = []ToolCall{call("zzz", "put", `{}`)}
	cases := []struct {
		name  string
		state *SuspendedState
		dec   Decision
		want  error
	}{
		{"stale digest", st, Decision{Verdict: VerdictApprove, Digest: "0000", By: "ann"}, ErrStaleTurn},
		{"empty digest", st, Decision{Verdict: VerdictApprove, By: "ann"}, ErrStaleTurn},
		{"nil state", nil, Decision{Verdict: VerdictApprove}, ErrCorruptState},
		{"pending differs from turn", &corrupt, Decision{Verdict: VerdictApprove, Digest: TurnDigest(corrupt.Pending)}, ErrCorruptState},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &events{}
			l := &Loop{Model: model, Tools: []Tool{write}, Recorder: rec}
			_, err := l.Resume(context.Background(), tc.state, tc.dec)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if write.calls() != 0 || rec.kinds() != "" {
				t.Fatalf("a refused resume did something: calls=%d events=%s", write.calls(), rec.kinds())
			}
		})
	}
}

func TestIterationLimit(t *testing.T) {
	read := newRead("get")
	var rs []ModelResponse
	for i := 0; i < 20; i++ {
		rs = append(rs, calls(call("", "get", `{}`)))
	}
	for _, limit := range []int{0, 3} {
		model := &scriptModel{responses: append([]ModelResponse(nil), rs...)}
		rec := &events{}
		loop := &Loop{Model: model, Tools: []Tool{read}, MaxIterations: limit, Recorder: rec}
		res, err := loop.Run(context.Background(), Request{Prompt: "p"})
		if err != nil {
			t.Fatal(err)
		}
		want := limit
		if want == 0 {
			want = DefaultMaxIterations
		}
		if res.Termination != TermMaxIterations || res.Iterations != want || len(model.requests) != want {
			t.Fatalf("limit %d: %s after %d iterations, %d model calls", limit, res.Termination, res.Iterations, len(model.requests))
		}
		fin := rec.ofKind(EventFinished)
		if len(fin) != 1 || fin[0].Termination != TermMaxIterations {
			t.Fatalf("finished events %+v", fin)
		}
	}
}

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
