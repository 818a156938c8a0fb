package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// askTool is a question to the operator.
type askTool struct{ *fakeTool }

func (askTool) AsksOperator() {}

func TestResolve(t *testing.T) {
	pending := []ToolCall{call("c1", "put", `{"a":1}`), call("c2", "put", `{"a":2}`), call("q", "ask", `{"question":"?"}`)}
	kind := func(c ToolCall) CallKind {
		if c.Name == "ask" {
			return CallQuestion
		}
		return CallWrite
	}
	answerQ := CallVerdict{CallID: "q", Verdict: VerdictAnswer, Text: "yes"}
	cases := []struct {
		name  string
		d     Decision
		field string // of the *InputError, "" when valid
		want  []Verdict
	}{
		{"approve all with the question answered", Decision{Verdict: VerdictApprove, Calls: []CallVerdict{answerQ}}, "",
			[]Verdict{VerdictApprove, VerdictApprove, VerdictAnswer}},
		{"mixed", Decision{Calls: []CallVerdict{{CallID: "c2", Verdict: VerdictEdit, Arguments: ` { "a" : 3 } `},
			{CallID: "c1", Verdict: VerdictDeny, Text: "no"}, answerQ}}, "",
			[]Verdict{VerdictDeny, VerdictEdit, VerdictAnswer}},
		{"unknown call id", Decision{Verdict: VerdictApprove, Calls: []CallVerdict{answerQ, {CallID: "zz", Verdict: VerdictApprove}}}, "calls", nil},
		{"two verdicts for one call", Decision{Calls: []CallVerdict{answerQ, {CallID: "c1", Verdict: VerdictApprove},
			{CallID: "c1", Verdict: VerdictDeny}, {CallID: "c2", Verdict: VerdictApprove}}}, "calls.c1", nil},
		{"a call without a verdict", Decision{Calls: []CallVerdict{answerQ, {CallID: "c1", Verdict: VerdictApprove}}}, "calls.c2", nil},
		{"the question unanswered", Decision{Verdict: VerdictDeny}, "calls.q", nil},
		{"the question approved", Decision{Verdict: VerdictDeny, Calls: []CallVerdict{{CallID: "q", Verdict: VerdictApprove}}}, "calls.q.verdict", nil},
		{"edit that is not an object", Decision{Verdict: VerdictApprove, Calls: []CallVerdict{answerQ,
			{CallID: "c1", Verdict: VerdictEdit, Arguments: `[1]`}}}, "calls.c1.arguments", nil},
		{"empty answer", Decision{Verdict: VerdictApprove, Calls: []CallVerdict{{CallID: "q", Verdict: VerdictAnswer, Text: "  "}}}, "calls.q.text", nil},
		{"unknown verdict", Decision{Verdict: VerdictApprove, Calls: []CallVerdict{answerQ, {CallID: "c1", Verdict: "maybe"}}}, "calls.c1.verdict", nil},
		{"whole-turn edit", Decision{Verdict: VerdictEdit, Calls: []CallVerdict{answerQ}}, "decision", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.d.Resolve(pending, kind)
			if tc.field != "" {
				var ie *InputError
				if !errors.As(err, &ie) || ie.Field != tc.field || !errors.Is(err, ErrInvalidInput) {
					t.Fatalf("err = %v, want an input error on %s", err, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, cv := range got {
				if cv.CallID != pending[i].ID || cv.Verdict != tc.want[i] || cv.Tool != pending[i].Name {
					t.Fatalf("verdict %d = %+v, want %s on %s", i, cv, tc.want[i], pending[i].ID)
				}
				if cv.Verdict == VerdictEdit && (cv.Arguments != `{"a":3}` || cv.Original != `{"a":2}`) {
					t.Fatalf("edit = %+v, want compact arguments and the original", cv)
				}
			}
		})
	}
}

func TestMixedVerdictsAnswerEveryCallOnceInOrder(t *testing.T) {
	read, put, del := newRead("get"), newWrite("put"), newWrite("del")
	ask := askTool{&fakeTool{name: "ask"}}
	model := &scriptModel{responses: []ModelResponse{
		calls(call("c1", "get", `{}`), call("c2", "put", `{"price":12}`), call("c3", "del", `{"slug":"x"}`),
			call("c4", "put", `{"price":1}`), call("c5", "ask", `{"question":"Which page?"}`)),
		answer("done"),
	}}
	rec := &events{}
	loop := &Loop{Model: model, Tools: []Tool{read, put, del, ask}, Recorder: rec}
	_, err := loop.Run(context.Background(), Request{Prompt: "p"})
	st := mustSuspend(t, err)
	d := Decision{Digest: st.Digest(), By: "ann", Reason: "turn reason", Calls: []CallVerdict{
		{CallID: "c1", Verdict: VerdictApprove},
		{CallID: "c2", Verdict: VerdictEdit, Arguments: `{"price": 14}`},
		{CallID: "c3", Verdict: VerdictDeny},
		{CallID: "c4", Verdict: VerdictAnswer, Text: "Price kept at 1."},
		{CallID: "c5", Verdict: VerdictAnswer, Text: "The about page."},
	}}
	res, err := loop.Resume(context.Background(), st, d)
	if err != nil {
		t.Fatal(err)
	}
	if read.calls() != 1 || put.calls() != 1 || del.calls() != 0 || ask.calls() != 0 {
		t.Fatalf("runs: get=%d put=%d del=%d ask=%d, want 1 1 0 0", read.calls(), put.calls(), del.calls(), ask.calls())
	}
	if got := put.args[0]; got != `{"price":14}` {
		t.Fatalf("the edited call ran with %s", got)
	}
	// The next request answers every call once, in the model's order.
	msgs := model.lastRequest().Messages
	tools := msgs[len(msgs)-5:]
	for i, id := range []string{"c1", "c2", "c3", "c4", "c5"} {
		if tools[i].Role != RoleTool || tools[i].ToolCallID != id {
			t.Fatalf("message %d answers %q, want %s: %+v", i, tools[i].ToolCallID, id, tools)
		}
	}
	if m := tools[1].Content; !strings.HasPrefix(m, EditedPrefix) || !strings.Contains(m, `{"price":14}`) ||
		!strings.Contains(m, `{"price":12}`) || !strings.Contains(m, "do not retry") || tools[1].IsError {
		t.Fatalf("edited result %q", m)
	}
	if m := tools[2].Content; !strings.HasPrefix(m, DeniedPrefix) || !strings.Contains(m, "turn reason") || !tools[2].IsError {
		t.Fatalf("denied result %q", m)
	}
	if m := tools[3].Content; !strings.HasPrefix(m, AnsweredPrefix) || !strings.Contains(m, "did not run") ||
		!strings.HasSuffix(m, "Price kept at 1.") || tools[3].IsError {
		t.Fatalf("answered result %q", m)
	}
	if m := tools[4].Content; !strings.Contains(m, "answered your question") || !strings.HasSuffix(m, "The about page.") {
		t.Fatalf("question's answer %q", m)
	}
	// The assistant turn keeps what the model proposed.
	if a := msgs[len(msgs)-6]; a.Role != RoleAssistant || a.ToolCalls[1].Arguments != `{"price":12}` {
		t.Fatalf("assistant turn changed: %+v", a)
	}
	want := "model_turn,suspended,decision,tool_started,tool_finished,tool_started,tool_finished,tool_finished,tool_finished,tool_finished,model_turn,finished"
	if got := rec.kinds(); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	dec := rec.ofKind(EventDecision)[0]
	if dec.Decision != "" || len(dec.Verdicts) != 5 || dec.Verdicts[1].Original != `{"price":12}` ||
		dec.Verdicts[1].Arguments != `{"price":14}` || dec.By != "ann" {
		t.Fatalf("decision event %+v", dec)
	}
	started := rec.ofKind(EventToolStarted)[1]
	if started.Call.Arguments != `{"price":14}` || started.Original != `{"price":12}` || started.EditedBy != "ann" || !started.Write {
		t.Fatalf("tool_started of the edit %+v", started)
	}
	for _, fin := range rec.ofKind(EventToolFinished)[3:] {
		if fin.Outcome != OutcomeAnswered {
			t.Fatalf("answered call outcome %q", fin.Outcome)
		}
	}
	if res.Iterations != 2 || res.Usage.TotalTokens != 37 || len(res.Trace) != 5 {
		t.Fatalf("result %+v", res)
	}
}

func TestQuestionWaitsAndOnlyAnAnswerDecidesIt(t *testing.T) {
	ask := askTool{&fakeTool{name: "ask"}}
	model := &scriptModel{responses: []ModelResponse{calls(call("q", "ask", `{"question":"Which page?"}`)), answer("ok")}}
	loop := &Loop{Model: model, Tools: []Tool{ask}, Recorder: &events{}}
	_, err := loop.Run(context.Background(), Request{Prompt: "p"})
	st := mustSuspend(t, err)
	for _, d := range []Decision{approve(st, "ann"), deny(st, "ann", "no")} {
		if _, err := loop.Resume(context.Background(), st, d); !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("%s on a question: %v", d.Verdict, err)
		}
	}
	res, err := loop.Resume(context.Background(), st, Decision{Digest: st.Digest(), By: "ann",
		Calls: []CallVerdict{{CallID: "q", Verdict: VerdictAnswer, Text: "The about page."}}})
	if err != nil || res.Answer != "ok" || ask.calls() != 0 {
		t.Fatalf("answer: %+v %v (ran %d times)", res, err, ask.calls())
	}
}

func TestReplayCarriesPerCallVerdicts(t *testing.T) {
	put := newWrite("put")
	c1, c2 := call("c1", "put", `{"v":1}`), call("c2", "put", `{"v":2}`)
	evs := []Event{
		{Kind: EventModelTurn, ToolCalls: []ToolCall{c1, c2}},
		{Kind: EventSuspended, Pending: []ToolCall{c1, c2}, Offered: []string{"put"}},
		{Kind: EventDecision, By: "ann", Verdicts: []CallVerdict{
			{CallID: "c1", Verdict: VerdictEdit, Arguments: `{"v":9}`}, {CallID: "c2", Verdict: VerdictDeny, Text: "no"}}},
	}
	loop := &Loop{Model: &scriptModel{responses: []ModelResponse{answer("done")}}, Tools: []Tool{put}, Recorder: &events{}}
	cp, err := Replay(loop.Assemble("p"), evs)
	if err != nil {
		t.Fatal(err)
	}
	res, err := loop.Continue(context.Background(), cp)
	if err != nil || res.Answer != "done" {
		t.Fatalf("continue: %+v %v", res, err)
	}
	if put.calls() != 1 || put.args[0] != `{"v":9}` {
		t.Fatalf("after a restart the edit ran %d times with %v", put.calls(), put.args)
	}
	if res.Trace[1].Outcome != OutcomeDenied {
		t.Fatalf("the denied call: %+v", res.Trace[1])
	}
}

func TestEventJSONKeepsVerdicts(t *testing.T) {
	ev := Event{Kind: EventDecision, Verdicts: []CallVerdict{{CallID: "c1", Tool: "put", Verdict: VerdictEdit, Arguments: `{"v":2}`, Original: `{"v":1}`}}}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil || back.Verdicts[0] != ev.Verdicts[0] {
		t.Fatalf("round trip %s -> %+v (%v)", b, back, err)
	}
	// A decision recorded before per-call verdicts still decodes and is
	// handled as a verdict on every call.
	var old Event
	if err := json.Unmarshal([]byte(`{"kind":"decision","decision":"approve","by":"ann","digest":"d"}`), &old); err != nil {
		t.Fatal(err)
	}
	d := Decision{Verdict: old.Decision, Calls: old.Verdicts}
	if cv := d.verdictFor(call("c9", "put", `{}`)); cv.Verdict != VerdictApprove {
		t.Fatalf("old decision gives %+v", cv)
	}
}
