package engine

import (
	"context"
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
