package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"countersign/engine"
	"countersign/engine/models/demo"
)

func TestEditedStateIsDamagedNotStale(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	rt := e.runtime(t, nil)
	run := e.start(t, rt, "editor", "Publish the about page.", "olga")
	w := e.waitStatus(t, run.ID, engine.StatusWaiting)
	editPending(t, e, run.ID)

	for _, digest := range []string{w.PendingDigest, engine.TurnDigest([]engine.ToolCall{{ID: "x"}})} {
		err := rt.Decide(ctx, run.ID, engine.Decision{Verdict: engine.VerdictApprove, Digest: digest, By: "oscar"})
		if !errors.Is(err, engine.ErrCorruptState) {
			t.Fatalf("decision on an edited state: %v, want ErrCorruptState", err)
		}
	}
	sus, err := e.db.SuspendedState(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sus.Decode(); !errors.Is(err, engine.ErrCorruptState) {
		t.Fatalf("Suspension.Decode of an edited state: %v", err)
	}
	if r, _ := e.db.Run(ctx, run.ID); r.Status != engine.StatusWaiting {
		t.Fatalf("a refused decision changed the run: %s", r.Status)
	}
	if err := rt.Cancel(ctx, run.ID, "oscar"); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, run.ID, engine.StatusCancelled)
	if e.revisions(t) != 0 {
		t.Fatal("a write ran")
	}
}

func TestHandingBackIsNotAFailure(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	hs := &hookStore{DB: e.db}
	rt := e.hookRuntime(t, hs, nil)
	run := e.start(t, rt, "editor", "Publish the about page.", "olga")
	w := e.waitStatus(t, run.ID, engine.StatusWaiting)
	// The state changed under the claim and no longer decodes: the claim is
	// handed back.
	hs.claimed = func([]byte) []byte { return []byte(`{"version":1,"transcript":[`) }
	if err := rt.Decide(ctx, run.ID, engine.Decision{Verdict: engine.VerdictApprove, Digest: w.PendingDigest, By: "oscar"}); !errors.Is(err, engine.ErrCorruptState) {
		t.Fatalf("err = %v", err)
	}
	r := e.waitStatus(t, run.ID, engine.StatusWaiting)
	if r.Termination != "" || r.Error != "" {
		t.Fatalf("a handed-back run looks failed: %+v", r)
	}
	evs := e.events(t, run.ID)
	if got := kinds(evs); !strings.HasSuffix(got, "suspended,decision,released") {
		t.Fatalf("events %s, want the hand-back as its own kind", got)
	}
	for _, ev := range evs {
		if ev.Event.Kind == engine.EventFailed {
			t.Fatal("a failed event was written for a run that has not failed")
		}
	}
	// The run can be decided again.
	if err := rt.Decide(ctx, run.ID, engine.Decision{Verdict: engine.VerdictApprove, Digest: w.PendingDigest, By: "oscar"}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, run.ID, engine.StatusCompleted)
}

func TestRecoveredApprovalOfAWithdrawnToolIsNotPermitted(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	past := time.Now().Add(-time.Hour)
	// The dead worker recorded the turn and suspended it with the tools it
	// offered; a decision claimed it; the process died before the tool ran.
	publish := engine.ToolCall{ID: "c1", Name: "publish_page", Arguments: `{"slug":"about"}`}
	run := engine.Run{ID: e.crashed(t, "editor", "Publish the about page.", engine.Event{Kind: engine.EventModelTurn,
		ToolCalls: []engine.ToolCall{publish}, Usage: &engine.Usage{TotalTokens: 5}})}
	state := &engine.SuspendedState{Version: engine.StateVersion, Pending: []engine.ToolCall{publish}, Iterations: 1,
		OfferedTools: []string{"read_page", "publish_page"},
		Transcript: []engine.Message{{Role: engine.RoleUser, Content: "Publish the about page."},
			{Role: engine.RoleAssistant, ToolCalls: []engine.ToolCall{publish}}}}
	blob, err := engine.EncodeState(state)
	if err != nil {
		t.Fatal(err)
	}
	dg := state.Digest()
	if err := e.db.SuspendRun(ctx, run.ID, "dead", engine.Suspend{Suspension: engine.Suspension{State: blob, Digest: dg}, Event: engine.Event{Kind: engine.EventSuspended, Digest: dg,
		Pending: state.Pending, Offered: state.OfferedTools}, Now: past}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.ClaimRun(ctx, run.ID, engine.Claim{Digest: dg, Owner: "dead2", LeaseUntil: past.Add(time.Second), Now: past,
		Event: engine.Event{Kind: engine.EventDecision, Decision: engine.VerdictApprove, By: "oscar", Digest: dg}}); err != nil {
		t.Fatal(err)
	}
	// After the restart the agent no longer offers publish_page.
	for i, a := range e.agents {
		if a.Name != "editor" {
			continue
		}
		var kept []engine.Tool
		for _, tl := range a.Tools {
			if tl.Name() != "publish_page" {
				kept = append(kept, tl)
			}
		}
		e.agents[i].Tools = kept
	}
	e.runtime(t, nil)
	e.waitStatus(t, run.ID, engine.StatusCompleted)
	if e.revisions(t) != 0 {
		t.Fatal("a withdrawn tool ran")
	}
	for _, ev := range e.events(t, run.ID) {
		if ev.Event.Kind == engine.EventToolFinished && ev.Event.Call.ID == "c1" {
			if ev.Event.Outcome != engine.OutcomeNotPermitted {
				t.Fatalf("outcome %q, want not_permitted", ev.Event.Outcome)
			}
			return
		}
	}
	t.Fatal("the approved call was never answered")
}

func TestReaperTakesAnExpiredLeaseWhenItExpires(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	now := time.Now()
	run, err := e.db.CreateRun(ctx, engine.NewRun{Agent: "researcher", Model: demo.Name, Prompt: "How many words are on the pricing page?", InitiatedBy: "olga"},
		engine.Event{Kind: engine.EventPrompt, Text: "How many words are on the pricing page?"}, now)
	if err != nil {
		t.Fatal(err)
	}
	// A worker of a process that just died holds it for 300 ms more.
	if _, err := e.db.AcquireRun(ctx, run.ID, "dead", now, now.Add(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	// The periodic pass is an hour away: only the lease's expiry can wake
	// the reaper in time.
	e.runtime(t, func(c *engine.RuntimeConfig) { c.ReapEvery = time.Hour })
	r := e.waitStatus(t, run.ID, engine.StatusCompleted)
	if r.Attempts != 2 {
		t.Fatalf("attempts %d, want the dead worker's and the take-over", r.Attempts)
	}
}

func TestRunsQueuedByAnotherProcessStartWithTheDefaults(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.runtime(t, func(c *engine.RuntimeConfig) { c.ReapEvery = 0 }) // the default
	// Another process on the same database queues a run.
	run, err := e.db.CreateRun(ctx, engine.NewRun{Agent: "researcher", Model: demo.Name, Prompt: "List all pages.", InitiatedBy: "olga"},
		engine.Event{Kind: engine.EventPrompt, Text: "List all pages."}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, run.ID, engine.StatusCompleted)
}
