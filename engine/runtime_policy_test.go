package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"countersign/engine"
)

// withDeadline gives the editor agent an approval deadline.
func (e *env) withDeadline(d time.Duration) {
	for i := range e.agents {
		if e.agents[i].Name == "editor" {
			e.agents[i].ApprovalDeadline = d
		}
	}
}

func TestDeadlineExpiresTheTurnOnTime(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.withDeadline(300 * time.Millisecond)
	// The periodic pass is an hour away: only the deadline can wake it.
	rt := e.runtime(t, func(c *engine.RuntimeConfig) { c.ReapEvery = time.Hour })
	run := e.start(t, rt, "editor", "Publish the about page.", "olga")
	w := e.waitStatus(t, run.ID, engine.StatusWaiting)
	if w.DeadlineAt.IsZero() {
		t.Fatal("the waiting run has no deadline")
	}
	done := e.waitStatus(t, run.ID, engine.StatusCompleted)
	if e.revisions(t) != 0 {
		t.Fatal("an expired call ran")
	}
	ev, ok, _ := e.db.LastDecision(ctx, run.ID)
	if !ok || ev.By != engine.ExpiredBy || ev.Decision != engine.VerdictExpire {
		t.Fatalf("decision event %+v, want the deadline's", ev)
	}
	var expired bool
	for _, r := range e.events(t, run.ID) {
		if r.Event.Kind == engine.EventToolFinished && r.Event.Outcome == engine.OutcomeExpired {
			expired = strings.HasPrefix(r.Event.Result, engine.ExpiredPrefix)
		}
	}
	if !expired || done.Termination != engine.TermCompleted {
		t.Fatalf("the run did not carry on after the expiry: %+v", done)
	}
	// A decision after the deadline is refused and names it.
	var de *engine.DecidedError
	if err := rt.Decide(ctx, run.ID, engine.Decision{Verdict: engine.VerdictApprove, Digest: w.PendingDigest, By: "oscar"}); !errors.As(err, &de) || de.By != engine.ExpiredBy {
		t.Fatalf("late decision: %v", err)
	}
}

func TestDeadlineSurvivesARestartAndRefusesLateDecisions(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.withDeadline(time.Hour)
	clock := time.Now()
	now := func() time.Time { return clock }
	first := e.runtime(t, func(c *engine.RuntimeConfig) { c.ReapEvery = time.Hour; c.Now = now })
	run := e.start(t, first, "editor", "Publish the about page.", "olga")
	w := e.waitStatus(t, run.ID, engine.StatusWaiting)
	first.Close()

	// The server is down while the deadline passes.
	clock = clock.Add(2 * time.Hour)
	second := e.runtime(t, func(c *engine.RuntimeConfig) { c.ReapEvery = time.Hour; c.Now = now })
	var de *engine.DecidedError
	err := second.Decide(ctx, run.ID, engine.Decision{Verdict: engine.VerdictApprove, Digest: w.PendingDigest, By: "oscar"})
	var dl *engine.DeadlineError
	if !errors.As(err, &dl) && !errors.As(err, &de) {
		t.Fatalf("a decision after the deadline: %v, want it refused", err)
	}
	e.waitStatus(t, run.ID, engine.StatusCompleted)
	if e.revisions(t) != 0 {
		t.Fatal("the late approval ran the write")
	}
	ev, _, _ := e.db.LastDecision(ctx, run.ID)
	if ev.By != engine.ExpiredBy {
		t.Fatalf("decision %+v, want the expiry", ev)
	}
}

func TestGrantsAreCheckedAndWritten(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	rt := e.runtime(t, nil)
	four := e.start(t, rt, "editor-4eyes", "Publish the about page.", "olga")
	w4 := e.waitStatus(t, four.ID, engine.StatusWaiting)
	grant := []engine.GrantRequest{{Tool: "publish_page", Scope: engine.GrantAgent}}
	if err := rt.Decide(ctx, four.ID, engine.Decision{Verdict: engine.VerdictApprove, Digest: w4.PendingDigest, By: "oscar", Grants: grant}); !errors.Is(err, engine.ErrGrantsNotAccepted) {
		t.Fatalf("a grant on a four-eyes agent: %v", err)
	}
	run := e.start(t, rt, "editor", "Publish the about page.", "olga")
	w := e.waitStatus(t, run.ID, engine.StatusWaiting)
	if err := rt.Decide(ctx, run.ID, engine.Decision{Verdict: engine.VerdictDeny, Digest: w.PendingDigest, By: "oscar", Grants: grant}); !errors.Is(err, engine.ErrInvalidInput) {
		t.Fatalf("a grant without an approval of its tool: %v", err)
	}
	if err := rt.Decide(ctx, run.ID, engine.Decision{Verdict: engine.VerdictApprove, Digest: w.PendingDigest, By: "oscar", Grants: grant}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, run.ID, engine.StatusCompleted)
	ev, _, _ := e.db.LastDecision(ctx, run.ID)
	if len(ev.Grants) != 1 || ev.Grants[0].ID == 0 || ev.Grants[0].By != "oscar" || ev.Grants[0].Scope != engine.GrantAgent ||
		ev.Grants[0].ExpiresAt.Sub(ev.Grants[0].CreatedAt) != engine.DefaultGrantPeriod {
		t.Fatalf("decision event grants %+v", ev.Grants)
	}
}
