package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"countersign/engine"
	"countersign/store"
)

// TestApprovalCycleCommitsNine takes one run through the approval cycle
// (a read, a suspension on a write, the decision, the write, the answer)
// and counts the store's commits: nine, where each event was a commit of
// its own before (thirteen). The events are all there, in order, with the
// run's counters. What is held back is stored in time: at each model call,
// everything recorded before it; when the write is about to run, its fence;
// once it ran, its tool_finished.
func TestApprovalCycleCommitsNine(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var stored []string // at each fault point of the loop: the point and the stored kinds
	rt := e.runtime(t, func(c *engine.RuntimeConfig) {
		c.Fault = func(point string) {
			if point == engine.FaultClaimed {
				return
			}
			ctx := context.Background()
			at := point + ": "
			// The env holds this one run.
			if l, err := e.db.ListRuns(ctx, store.RunFilter{}); err != nil || len(l.Runs) != 1 {
				at += fmt.Sprintf("runs %v %v", l, err)
			} else if evs, err := e.db.Events(ctx, l.Runs[0].ID, 0, 0); err != nil {
				at += err.Error()
			} else {
				at += kinds(evs)
			}
			mu.Lock()
			stored = append(stored, at)
			mu.Unlock()
		}
	})
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
	mu.Lock()
	got := stored
	mu.Unlock()
	wantStored := []string{
		"model_call: prompt",
		"tool_finished: prompt", // a read's events wait for the next model call
		"model_call: prompt,model_turn,tool_started,tool_finished",
		"write_started: prompt,model_turn,tool_started,tool_finished,model_turn,suspended,decision,tool_started",
		"write_done: prompt,model_turn,tool_started,tool_finished,model_turn,suspended,decision,tool_started",
		"tool_finished: prompt,model_turn,tool_started,tool_finished,model_turn,suspended,decision,tool_started,tool_finished",
		"model_call: prompt,model_turn,tool_started,tool_finished,model_turn,suspended,decision,tool_started,tool_finished",
	}
	if strings.Join(got, "\n") != strings.Join(wantStored, "\n") {
		t.Fatalf("stored at each fault point\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(wantStored, "\n     "))
	}
	if done.Iterations != 3 || done.Usage.TotalTokens <= 0 || evs[len(evs)-1].Event.Totals.Iterations != 3 {
		t.Fatalf("counters %d/%+v", done.Iterations, done.Usage)
	}
}
