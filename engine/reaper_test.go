package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"countersign/engine"
	"countersign/engine/models/demo"
	"countersign/engine/tools"
	"countersign/store"
)

func TestReaper(t *testing.T) {
	ctx := context.Background()
	past := time.Now().Add(-time.Hour)
	crashed := func(t *testing.T, e *env, prompt string, evs ...engine.Event) string {
		return e.crashed(t, "editor", prompt, evs...)
	}
	publish := engine.ToolCall{ID: "call_1_1", Name: "publish_page", Arguments: `{"slug":"about"}`}
	turn := engine.Event{Kind: engine.EventModelTurn, ToolCalls: []engine.ToolCall{publish}, Usage: &engine.Usage{TotalTokens: 5}}

	t.Run("write in doubt fails and never reruns", func(t *testing.T) {
		e := newEnv(t)
		id := crashed(t, e, "Publish the about page.", turn, engine.Event{Kind: engine.EventToolStarted, Call: &publish, Write: true})
		rt := e.runtime(t, nil)
		r := e.waitStatus(t, id, engine.StatusFailed)
		if r.Termination != engine.TermInterrupted {
			t.Fatalf("termination %q", r.Termination)
		}
		if e.revisions(t) != 0 {
			t.Fatal("the write in doubt was run again")
		}
		if err := rt.Reap(ctx); err != nil {
			t.Fatal(err)
		}
		e.events(t, id)
	})
	t.Run("nothing in doubt carries on", func(t *testing.T) {
		e := newEnv(t)
		id := crashed(t, e, "How many words are on the pricing page?")
		e.runtime(t, nil)
		r := e.waitStatus(t, id, engine.StatusCompleted)
		if r.Attempts != 2 || r.Iterations != 2 {
			t.Fatalf("attempts %d iterations %d", r.Attempts, r.Iterations)
		}
		e.events(t, id)
	})
	t.Run("claimed decision carries on once", func(t *testing.T) {
		e := newEnv(t)
		// A dead worker claimed an approved turn and died before the tool.
		id := crashed(t, e, "Publish the about page.", turn)
		state := &engine.SuspendedState{Version: engine.StateVersion, Pending: []engine.ToolCall{publish}, Iterations: 1,
			OfferedTools: []string{"publish_page"},
			Transcript: []engine.Message{{Role: engine.RoleUser, Content: "Publish the about page."},
				{Role: engine.RoleAssistant, ToolCalls: []engine.ToolCall{publish}}}}
		blob, err := engine.EncodeState(state)
		if err != nil {
			t.Fatal(err)
		}
		dg := engine.TurnDigest(state.Pending)
		if err := e.db.SuspendRun(ctx, id, "dead", engine.Suspend{Suspension: engine.Suspension{State: blob, Digest: dg}, Event: engine.Event{Kind: engine.EventSuspended, Digest: dg}, Now: past}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.ClaimRun(ctx, id, engine.Claim{Digest: dg, Owner: "dead2", LeaseUntil: past.Add(time.Second), Now: past,
			Event: engine.Event{Kind: engine.EventDecision, Decision: engine.VerdictApprove, By: "oscar", Digest: dg}}); err != nil {
			t.Fatal(err)
		}
		e.runtime(t, nil)
		e.waitStatus(t, id, engine.StatusCompleted)
		if e.revisions(t) != 1 {
			t.Fatalf("revisions %d, want the approved write exactly once", e.revisions(t))
		}
		p, _ := e.db.Pages().GetPage(ctx, "about")
		if p.Status != tools.StatusPublished {
			t.Fatal("approved write did not happen")
		}
	})
	t.Run("retries exhausted", func(t *testing.T) {
		e := newEnv(t)
		id := crashed(t, e, "How many words are on the pricing page?")
		for i := 0; i < 2; i++ {
			at := past.Add(time.Duration(i+1) * time.Minute)
			if _, err := e.db.AcquireRun(ctx, id, fmt.Sprintf("dead%d", i), at, at.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		e.runtime(t, nil)
		r := e.waitStatus(t, id, engine.StatusFailed)
		if r.Termination != engine.TermRetriesExhausted {
			t.Fatalf("termination %q", r.Termination)
		}
	})
}

func TestQueuedRunsSurviveRestartAndShutdownLeavesRunsResumable(t *testing.T) {
	e := newEnv(t)
	block := newBlockingModel()
	e.models["block"] = block
	cfg := func(c *engine.RuntimeConfig) { c.Workers = 1 }
	rt := e.runtime(t, cfg)
	ctx := context.Background()
	busy, err := rt.StartRun(ctx, engine.NewRun{Agent: "researcher", Model: "block", Prompt: "x", InitiatedBy: "olga"})
	if err != nil {
		t.Fatal(err)
	}
	<-block.entered
	// The only worker is busy: this one stays queued.
	queued := e.start(t, rt, "researcher", "How many words are on the pricing page?", "olga")
	rt.Close()

	if r, _ := e.db.Run(ctx, busy.ID); r.Status != engine.StatusRunning {
		t.Fatalf("shutdown finished an interrupted run: %s", r.Status)
	}
	if r, _ := e.db.Run(ctx, queued.ID); r.Status != engine.StatusQueued {
		t.Fatalf("queued run is %s", r.Status)
	}
	block.release()
	e.runtime(t, nil)
	e.waitStatus(t, queued.ID, engine.StatusCompleted)
	e.waitStatus(t, busy.ID, engine.StatusCompleted)
	e.events(t, busy.ID)
}

func TestSuspendFailureFailsTheRunClearly(t *testing.T) {
	e := newEnv(t)
	failing := &failingSuspend{DB: e.db}
	rt, err := engine.NewRuntime(engine.RuntimeConfig{Store: failing, Agents: e.agents, Lease: 2 * time.Second,
		Models: func(string) (engine.Model, error) { return demo.New(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	rt.Start()
	defer rt.Close()
	run := e.start(t, rt, "editor", "Publish the about page.", "olga")
	r := e.waitStatus(t, run.ID, engine.StatusFailed)
	if r.Termination != engine.TermStateError || r.Error == "" {
		t.Fatalf("run %+v", r)
	}
}

// failingSuspend is the real store with a disk that fails when a suspension
// is stored: fault injection, not a mock of the store's behaviour.
type failingSuspend struct{ *store.DB }

func (f *failingSuspend) SuspendRun(context.Context, string, string, engine.Suspend) error {
	return errors.New("disk I/O error")
}

// blockingModel blocks every call until released or cancelled.
type blockingModel struct {
	entered chan struct{}
	done    chan struct{}
	once    sync.Once
}

func newBlockingModel() *blockingModel {
	return &blockingModel{entered: make(chan struct{}, 16), done: make(chan struct{})}
}

func (b *blockingModel) release() { b.once.Do(func() { close(b.done) }) }

func (b *blockingModel) Generate(ctx context.Context, req engine.ModelRequest) (engine.ModelResponse, error) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	select {
	case <-ctx.Done():
		return engine.ModelResponse{}, ctx.Err()
	case <-b.done:
		return engine.ModelResponse{Message: engine.Message{Content: "released"}, Usage: engine.Usage{TotalTokens: 1, PromptTokens: 1}}, nil
	}
}
