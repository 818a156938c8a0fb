package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// rulePolicy waives every call of one tool by a named rule and makes one
// read tool need a person.
type rulePolicy struct {
	waive, ask string
	fail       bool
	seen       []PolicyCall
}

func (p *rulePolicy) Check(ctx context.Context, c PolicyCall) (PolicyResult, error) {
	p.seen = append(p.seen, c)
	switch {
	case p.fail:
		return PolicyResult{}, errors.New("rule evaluation failed")
	case c.Call.Name == p.waive:
		return PolicyResult{Rule: "drafts-need-no-one"}, nil
	case c.Call.Name == p.ask:
		return PolicyResult{Person: true, Rule: "reads-of-secrets"}, nil
	}
	return PolicyResult{Person: c.Marked}, nil
}

func TestPolicyWaivesAndRequires(t *testing.T) {
	put, get := newWrite("put"), newRead("get")
	t.Run("a rule lets a write run and the event names it", func(t *testing.T) {
		rec := &events{}
		pol := &rulePolicy{waive: "put"}
		loop := &Loop{Model: &scriptModel{responses: []ModelResponse{calls(call("c1", "put", `{}`)), answer("done")}},
			Tools: []Tool{put, get}, Recorder: rec, Policy: pol, RunID: "r1", AgentName: "ed", Initiator: "olga"}
		res, err := loop.Run(context.Background(), Request{Prompt: "p"})
		if err != nil || res.Answer != "done" || put.calls() != 1 {
			t.Fatalf("run: %+v %v (put ran %d times)", res, err, put.calls())
		}
		started := rec.ofKind(EventToolStarted)[0]
		if started.WaivedBy != "rule drafts-need-no-one" || !started.Write {
			t.Fatalf("tool_started %+v does not name the rule", started)
		}
		if c := pol.seen[0]; c.RunID != "r1" || c.Agent != "ed" || c.Initiator != "olga" || !c.Marked {
			t.Fatalf("policy was told %+v", c)
		}
	})
	for name, pol := range map[string]*rulePolicy{
		"a rule makes a read need a person": {ask: "get"},
		"a failing policy asks a person":    {fail: true},
	} {
		t.Run(name, func(t *testing.T) {
			get := newRead("get")
			loop := &Loop{Model: &scriptModel{responses: []ModelResponse{calls(call("c1", "get", `{}`))}},
				Tools: []Tool{get}, Recorder: &events{}, Policy: pol}
			_, err := loop.Run(context.Background(), Request{Prompt: "p"})
			mustSuspend(t, err)
			if get.calls() != 0 {
				t.Fatal("a call that needs a person ran")
			}
		})
	}
}

func TestLoopBreaker(t *testing.T) {
	del := newWrite("del")
	retry := calls(call("", "del", `{"slug": "x"}`))
	model := &scriptModel{responses: []ModelResponse{retry, retry, retry, retry, answer("unreachable")}}
	rec := &events{}
	loop := &Loop{Model: model, Tools: []Tool{del}, Recorder: rec}
	_, err := loop.Run(context.Background(), Request{Prompt: "p"})
	st := mustSuspend(t, err)
	_, err = loop.Resume(context.Background(), st, deny(st, "ann", "keep it"))
	var re *RunError
	if !errors.As(err, &re) || re.Termination != TermRepeatedDenials {
		t.Fatalf("err = %v, want the run ended by the loop breaker", err)
	}
	if del.calls() != 0 {
		t.Fatal("a repeated denied call ran")
	}
	if n := len(rec.ofKind(EventSuspended)); n != 1 {
		t.Fatalf("%d suspensions: a repeated denied call was put to a person again", n)
	}
	fins := rec.ofKind(EventToolFinished)
	if len(fins) != 4 {
		t.Fatalf("%d tool results, want the denial and three refusals", len(fins))
	}
	for _, f := range fins[1:] {
		if f.Outcome != OutcomeRepeatDenied || !strings.HasPrefix(f.Result, RepeatDeniedPrefix) {
			t.Fatalf("refusal %+v", f)
		}
	}
	// Different arguments are a different call: it is put to a person.
	other := &scriptModel{responses: []ModelResponse{calls(call("c1", "del", `{"slug":"x"}`)), calls(call("c2", "del", `{"slug":"y"}`))}}
	loop = &Loop{Model: other, Tools: []Tool{del}, Recorder: &events{}}
	_, err = loop.Run(context.Background(), Request{Prompt: "p"})
	st = mustSuspend(t, err)
	_, err = loop.Resume(context.Background(), st, deny(st, "ann", "no"))
	if st2 := mustSuspend(t, err); st2.Pending[0].Arguments != `{"slug":"y"}` {
		t.Fatalf("pending %+v", st2.Pending)
	}
}

func TestExpiredVerdictAnswersEveryCall(t *testing.T) {
	put, ask := newWrite("put"), askTool{&fakeTool{name: "ask"}}
	model := &scriptModel{responses: []ModelResponse{calls(call("c1", "put", `{}`), call("q", "ask", `{"question":"?"}`)), answer("told the user")}}
	loop := &Loop{Model: model, Tools: []Tool{put, ask}, Recorder: &events{}}
	_, err := loop.Run(context.Background(), Request{Prompt: "p"})
	st := mustSuspend(t, err)
	res, err := loop.Resume(context.Background(), st, Decision{Verdict: VerdictExpire, Digest: st.Digest(), By: ExpiredBy})
	if err != nil || res.Answer != "told the user" || put.calls() != 0 {
		t.Fatalf("expire: %+v %v", res, err)
	}
	for _, inv := range res.Trace {
		if inv.Outcome != OutcomeExpired || !strings.HasPrefix(inv.Result, ExpiredPrefix) {
			t.Fatalf("expired call answered %+v", inv)
		}
	}
}
