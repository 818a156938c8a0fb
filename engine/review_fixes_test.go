package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"countersign/engine"
	"countersign/engine/models/demo"
	"countersign/store"
)

// Tests for the defects a review of the core found (issue 10, items 4 to 10).

// panicTool is a write that panics when it runs.
type panicTool struct{}

func (panicTool) Name() string            { return "explode" }
func (panicTool) Description() string     { return "a write that panics" }
func (panicTool) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (panicTool) RequiresApproval()       {}
func (panicTool) Call(context.Context, json.RawMessage) (string, error) {
	panic("the disk caught fire")
}

// oneWriteModel asks for one call of tool, costing 42 tokens, then answers.
func oneWriteModel(tool string) engine.Model {
	return engine.ModelFunc(func(ctx context.Context, req engine.ModelRequest) (engine.ModelResponse, error) {
		if req.Messages[len(req.Messages)-1].Role == engine.RoleTool {
			return engine.ModelResponse{Message: engine.Message{Content: "done"}, Usage: engine.Usage{TotalTokens: 8, PromptTokens: 8}}, nil
		}
		return engine.ModelResponse{
			Message: engine.Message{ToolCalls: []engine.ToolCall{{ID: "c1", Name: tool, Arguments: `{"slug":"about"}`}}},
			Usage:   engine.Usage{PromptTokens: 40, CompletionTokens: 2, TotalTokens: 42},
		}, nil
	})
}

// wantTotals checks that the run and its last event keep the counters of
// the model turn it made (1 call, 42 tokens).
func wantTotals(t *testing.T, e *env, r engine.Run) {
	t.Helper()
	if r.Iterations != 1 || r.Usage.TotalTokens != 42 || r.Usage.PromptTokens != 40 {
		t.Fatalf("run totals reset: iterations %d, usage %+v", r.Iterations, r.Usage)
	}
	evs := e.events(t, r.ID)
	last := evs[len(evs)-1].Event
	if last.Totals == nil || last.Totals.Iterations != 1 || last.Totals.Usage.TotalTokens != 42 {
		t.Fatalf("last event %s records totals %+v, want 1 call and 42 tokens", last.Kind, last.Totals)
	}
}

func TestTotalsSurviveEndsWithoutALoopResult(t *testing.T) {
	ctx := context.Background()
	t.Run("approved write panics", func(t *testing.T) {
		e := newEnv(t)
		e.agents = append(e.agents, engine.Agent{Name: "bomber", Tools: []engine.Tool{panicTool{}}})
		e.models["one-write"] = oneWriteModel("explode")
		rt := e.runtime(t, nil)
		run, err := rt.StartRun(ctx, engine.NewRun{Agent: "bomber", Model: "one-write", Prompt: "go", InitiatedBy: "olga"})
		if err != nil {
			t.Fatal(err)
		}
		w := e.waitStatus(t, run.ID, engine.StatusWaiting)
		if err := rt.Decide(ctx, run.ID, engine.Decision{Verdict: engine.VerdictApprove, Digest: w.PendingDigest, By: "oscar"}); err != nil {
			t.Fatal(err)
		}
		r := e.waitStatus(t, run.ID, engine.StatusFailed)
		if r.Termination != engine.TermToolError {
			t.Fatalf("termination %q", r.Termination)
		}
		wantTotals(t, e, r)
	})
	t.Run("cancel of a claimed run", func(t *testing.T) {
		e := newEnv(t)
		e.models["one-write"] = oneWriteModel("publish_page")
		var rt *engine.Runtime
		var runID string
		// A cancel lands between the claim and the resume.
		rt = e.runtime(t, func(c *engine.RuntimeConfig) {
			c.Fault = func(point string) {
				if point == engine.FaultClaimed {
					if err := rt.Cancel(ctx, runID, "oscar"); err != nil {
						t.Error(err)
					}
				}
			}
		})
		run, err := rt.StartRun(ctx, engine.NewRun{Agent: "editor", Model: "one-write", Prompt: "go", InitiatedBy: "olga"})
		if err != nil {
			t.Fatal(err)
		}
		runID = run.ID
		w := e.waitStatus(t, run.ID, engine.StatusWaiting)
		if err := rt.Decide(ctx, run.ID, engine.Decision{Verdict: engine.VerdictApprove, Digest: w.PendingDigest, By: "oscar"}); err != nil {
			t.Fatal(err)
		}
		r := e.waitStatus(t, run.ID, engine.StatusCancelled)
		wantTotals(t, e, r)
		if e.revisions(t) != 0 {
			t.Fatal("the write of a cancelled run ran")
		}
	})
	t.Run("interrupted during a write", func(t *testing.T) {
		e := newEnv(t)
		publish := engine.ToolCall{ID: "c1", Name: "publish_page", Arguments: `{"slug":"about"}`}
		id := e.crashed(t, "editor", "Publish the about page.",
			engine.Event{Kind: engine.EventModelTurn, ToolCalls: []engine.ToolCall{publish}, Usage: &engine.Usage{PromptTokens: 40, CompletionTokens: 2, TotalTokens: 42}},
			engine.Event{Kind: engine.EventToolStarted, Call: &publish, Write: true})
		run := engine.Run{ID: id}
		e.runtime(t, nil)
		r := e.waitStatus(t, run.ID, engine.StatusFailed)
		if r.Termination != engine.TermInterrupted {
			t.Fatalf("termination %q", r.Termination)
		}
		wantTotals(t, e, r)
	})
}

// crashed prepares a run that a dead worker held an hour ago, with the
// given events appended before it died, and returns its id.
func (e *env) crashed(t *testing.T, agent, prompt string, evs ...engine.Event) string {
	t.Helper()
	ctx := context.Background()
	past := time.Now().Add(-time.Hour)
	run, err := e.db.CreateRun(ctx, engine.NewRun{Agent: agent, Model: demo.Name, Prompt: prompt, InitiatedBy: "olga"},
		engine.Event{Kind: engine.EventPrompt, Text: prompt}, past)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.AcquireRun(ctx, run.ID, "dead", past, past.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if _, _, err := e.db.AppendEvent(ctx, run.ID, "dead", ev, past.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	return run.ID
}

// hookStore is the real store with hooks that run before some of its
// methods, to stop a decision at an exact point while others act.
type hookStore struct {
	*store.DB
	mu          sync.Mutex
	beforeState func()
	afterSusp   func()
	claimed     func([]byte) []byte
}

func (h *hookStore) take(f *func()) func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := *f
	*f = nil
	return g
}

func (h *hookStore) SuspendedState(ctx context.Context, id string) (engine.Suspension, error) {
	if f := h.take(&h.beforeState); f != nil {
		f()
	}
	return h.DB.SuspendedState(ctx, id)
}

func (h *hookStore) SuspendRun(ctx context.Context, id, owner string, s engine.Suspend) error {
	err := h.DB.SuspendRun(ctx, id, owner, s)
	if f := h.take(&h.afterSusp); f != nil && err == nil {
		f()
	}
	return err
}

func (h *hookStore) ClaimRun(ctx context.Context, id string, c engine.Claim) ([]byte, error) {
	b, err := h.DB.ClaimRun(ctx, id, c)
	h.mu.Lock()
	f := h.claimed
	h.claimed = nil
	h.mu.Unlock()
	if f != nil && err == nil {
		b = f(b)
	}
	return b, err
}

func (e *env) hookRuntime(t *testing.T, hs *hookStore, mod func(*engine.RuntimeConfig)) *engine.Runtime {
	t.Helper()
	return e.runtime(t, func(c *engine.RuntimeConfig) {
		c.Store = hs
		if mod != nil {
			mod(c)
		}
	})
}

func TestLosingDecisionNamesTheWinner(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, prompt string
		// after is the status the winner's run reaches before the loser
		// reads the state.
		after engine.Status
	}{
		{"winner's run ended", "Publish the about page.", engine.StatusCompleted},
		{"winner's run waits on its next turn", "Create a page announcing the winter sale, then publish it.", engine.StatusWaiting},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			hs := &hookStore{DB: e.db}
			rt := e.hookRuntime(t, hs, nil)
			run := e.start(t, rt, "editor", tc.prompt, "olga")
			w := e.waitStatus(t, run.ID, engine.StatusWaiting)
			// The loser has read the waiting run; before it reads the state,
			// the winner decides and the run moves on.
			hs.beforeState = func() {
				if err := rt.Decide(ctx, run.ID, engine.Decision{Verdict: engine.VerdictApprove, Digest: w.PendingDigest, By: "winnie"}); err != nil {
					t.Error(err)
				}
				deadline := time.Now().Add(15 * time.Second)
				for {
					r, _ := e.db.Run(ctx, run.ID)
					if r.Status == tc.after && r.PendingDigest != w.PendingDigest {
						return
					}
					if time.Now().After(deadline) {
						t.Errorf("run is %s", r.Status)
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			err := rt.Decide(ctx, run.ID, engine.Decision{Verdict: engine.VerdictDeny, Digest: w.PendingDigest, By: "louis", Reason: "no"})
			var de *engine.DecidedError
			if !errors.As(err, &de) || de.By != "winnie" || de.Dec != engine.VerdictApprove {
				t.Fatalf("loser got %v, want the decision of winnie", err)
			}
		})
	}
}

func TestNoRunExecutesOnceItWaits(t *testing.T) {
	e := newEnv(t)
	hs := &hookStore{DB: e.db}
	var rt *engine.Runtime
	executing := -1
	hs.afterSusp = func() { executing = rt.Executing() }
	rt = e.hookRuntime(t, hs, nil)
	run := e.start(t, rt, "editor", "Publish the about page.", "olga")
	e.waitStatus(t, run.ID, engine.StatusWaiting)
	// The suspension is stored: a decision may claim the run from here on,
	// and its new segment must not share an entry with the one that ended.
	if executing != 0 {
		t.Fatalf("%d run(s) executing once the suspension was stored, want 0", executing)
	}
}

// editPending rewrites the stored state of a waiting run so that it still
// decodes but names another call than the turn the run waits on.
func editPending(t *testing.T, e *env, id string) {
	t.Helper()
	sus, err := e.db.SuspendedState(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	st, err := engine.DecodeState(sus.State)
	if err != nil {
		t.Fatal(err)
	}
	st.Pending[0].Arguments = `{"slug":"pricing"}`
	last := &st.Transcript[len(st.Transcript)-1]
	last.ToolCalls[0].Arguments = `{"slug":"pricing"}`
	blob, err := engine.EncodeState(st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.DecodeState(blob); err != nil {
		t.Fatalf("the edited state must still decode: %v", err)
	}
	raw, err := sqlOpen(e.path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE agent_run SET suspended_state = ? WHERE id = ?`, blob, id); err != nil {
		t.Fatal(err)
	}
}
