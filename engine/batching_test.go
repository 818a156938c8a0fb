package engine_test

import (
	"context"
	"testing"

	"countersign/engine"
)

// TestApprovalCycleCommitsNine takes one run through the approval cycle
// (a read, a suspension on a write, the decision, the write, the answer)
// and counts the store's commits: nine, where each event was a commit of
// its own before (thirteen). The events are all there, in order, with the
// run's counters, and the fence of the write is written before it runs.
func TestApprovalCycleCommitsNine(t *testing.T) {
	e := newEnv(t)
	rt := e.runtime(t, nil)
	c0 := e.db.Commits()
	run := e.start(t, rt, "editor", "Update the pricing page to say the Team plan now costs $12 per seat.", "olga")
	w := e.waitStatus(t, run.ID, engine.StatusWaiting)
	if err := rt.Decide(context.Background(), run.ID, engine.Decision{Verdict: engine.VerdictApprove, Digest: w.PendingDigest, By: "oscar"}); err != nil {
		t.Fatal(err)
	}
	done := e.waitStatus(t, run.ID, engine.StatusCompleted)
	c1 := e.db.Commits()
	// create, acquire, {model turn, read started, read finished},
	// {model turn, suspended}, decision, write started, the page's write,
	// write finished, {model turn, finished}.
	if got := c1 - c0; got != 9 {
		t.Fatalf("%d commits for one cycle, want 9", got)
	}
	want := "prompt,model_turn,tool_started,tool_finished,model_turn,suspended,decision,tool_started,tool_finished,model_turn,finished"
	evs := e.events(t, run.ID)
	if got := kinds(evs); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
	if done.Iterations != 3 || done.Usage.TotalTokens <= 0 || evs[len(evs)-1].Event.Totals.Iterations != 3 {
		t.Fatalf("counters %d/%+v", done.Iterations, done.Usage)
	}
}
