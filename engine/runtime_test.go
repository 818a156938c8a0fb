package engine_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"countersign/engine"
	"countersign/engine/models/demo"
	"countersign/engine/tools"
	"countersign/store"
)

// env is a durable runtime on a real SQLite file.
type env struct {
	db     *store.DB
	path   string
	agents []engine.Agent
	models map[string]engine.Model
}

func newEnv(t *testing.T) *env {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cs.db")
	db, err := store.Open(context.Background(), path, store.WithBcryptCost(bcrypt.MinCost))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Pages().SeedPages(context.Background(), tools.SeedPages()); err != nil {
		t.Fatal(err)
	}
	return &env{db: db, path: path, agents: tools.Agents(db.Pages(), time.Now),
		models: map[string]engine.Model{demo.Name: demo.New()}}
}

// runtime starts a runtime over the env; it is closed at cleanup.
func (e *env) runtime(t *testing.T, mod func(*engine.RuntimeConfig)) *engine.Runtime {
	t.Helper()
	cfg := engine.RuntimeConfig{
		Store: e.db, Agents: e.agents, Lease: 2 * time.Second, ReapEvery: time.Hour,
		Models: func(name string) (engine.Model, error) {
			if m, ok := e.models[name]; ok {
				return m, nil
			}
			return nil, fmt.Errorf("%w %q", engine.ErrUnknownModel, name)
		},
	}
	if mod != nil {
		mod(&cfg)
	}
	rt, err := engine.NewRuntime(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rt.Start()
	t.Cleanup(rt.Close)
	return rt
}

func (e *env) waitStatus(t *testing.T, id string, want engine.Status) engine.Run {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		run, err := e.db.Run(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status == want {
			return run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s (%s: %s), want %s", id, run.Status, run.Termination, run.Error, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *env) events(t *testing.T, id string) []engine.RecordedEvent {
	t.Helper()
	evs, err := e.db.Events(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event seq %d at position %d: not contiguous", ev.Seq, i)
		}
	}
	return evs
}

func kinds(evs []engine.RecordedEvent) string {
	s := ""
	for i, e := range evs {
		if i > 0 {
			s += ","
		}
		s += string(e.Event.Kind)
	}
	return s
}

func (e *env) revisions(t *testing.T) int {
	t.Helper()
	n, err := e.db.Pages().Revisions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *env) start(t *testing.T, rt *engine.Runtime, agent, prompt, by string) engine.Run {
	t.Helper()
	run, err := rt.StartRun(context.Background(), engine.NewRun{Agent: agent, Model: demo.Name, Prompt: prompt, InitiatedBy: by})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestDurableApprovalCycle(t *testing.T) {
	e := newEnv(t)
	rt := e.runtime(t, nil)
	run := e.start(t, rt, "editor", "Create a page announcing the winter sale, then publish it.", "olga")

	w := e.waitStatus(t, run.ID, engine.StatusWaiting)
	if rt.Executing() != 0 {
		t.Fatalf("a waiting run holds a worker: %d executing", rt.Executing())
	}
	if e.revisions(t) != 0 {
		t.Fatal("a write ran before approval")
	}
	if err := rt.Decide(context.Background(), run.ID, engine.Decision{Verdict: engine.VerdictApprove, Digest: w.PendingDigest, By: "oscar"}); err != nil {
		t.Fatal(err)
	}
	w2 := e.waitStatus(t, run.ID, engine.StatusWaiting)
	for w2.PendingDigest == w.PendingDigest {
		time.Sleep(10 * time.Millisecond)
		w2 = e.waitStatus(t, run.ID, engine.StatusWaiting)
	}
	if err := rt.Decide(context.Background(), run.ID, engine.Decision{Verdict: engine.VerdictApprove, Digest: w2.PendingDigest, By: "oscar", Reason: "go"}); err != nil {
		t.Fatal(err)
	}
	done := e.waitStatus(t, run.ID, engine.StatusCompleted)
	if e.revisions(t) != 2 {
		t.Fatalf("revisions = %d, want create and publish once each", e.revisions(t))
	}
	p, err := e.db.Pages().GetPage(context.Background(), "winter-sale")
	if err != nil || p.Status != tools.StatusPublished {
		t.Fatalf("winter-sale: %+v %v", p, err)
	}
	evs := e.events(t, run.ID)
	want := "prompt,model_turn,suspended,decision,tool_started,tool_finished,model_turn,suspended,decision,tool_started,tool_finished,model_turn,finished"
	if got := kinds(evs); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	if done.Iterations != 3 || done.Termination != engine.TermCompleted || done.Usage.TotalTokens <= 0 {
		t.Fatalf("totals of the whole run: %+v", done)
	}
	last := evs[len(evs)-1].Event
	if last.Totals.Iterations != 3 || last.Totals.Usage != done.Usage {
		t.Fatalf("finished event totals %+v vs run %+v", last.Totals, done.Usage)
	}
	if !done.FinishedAt.After(done.CreatedAt) && !done.FinishedAt.Equal(done.CreatedAt) {
		t.Fatal("no finish time")
	}
}

func TestConcurrentDecisionsExactlyOneWins(t *testing.T) {
	e := newEnv(t)
	rt := e.runtime(t, nil)
	run := e.start(t, rt, "editor", "Publish the about page.", "olga")
	w := e.waitStatus(t, run.ID, engine.StatusWaiting)

	const n = 50
	errs := make([]error, n)
	var wg sync.WaitGroup
	startLine := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-startLine
			errs[i] = rt.Decide(context.Background(), run.ID, engine.Decision{
				Verdict: []engine.Verdict{engine.VerdictApprove, engine.VerdictDeny}[i%2], Digest: w.PendingDigest, By: fmt.Sprintf("op%d", i), Reason: "r"})
		}(i)
	}
	close(startLine)
	wg.Wait()
	wins, decided := 0, 0
	for _, err := range errs {
		var de *engine.DecidedError
		switch {
		case err == nil:
			wins++
		case errors.As(err, &de):
			decided++
			if de.By == "" || de.Dec == "" {
				t.Fatalf("decided error without who: %v", err)
			}
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if wins != 1 || decided != n-1 {
		t.Fatalf("wins=%d decided=%d", wins, decided)
	}
	e.waitStatus(t, run.ID, engine.StatusCompleted)
	decisions := 0
	for _, ev := range e.events(t, run.ID) {
		if ev.Event.Kind == engine.EventDecision {
			decisions++
		}
	}
	if decisions != 1 {
		t.Fatalf("%d decision events", decisions)
	}
	if r := e.revisions(t); r > 1 {
		t.Fatalf("the write ran %d times", r)
	}
}

func TestDecideRefusals(t *testing.T) {
	e := newEnv(t)
	rt := e.runtime(t, nil)
	run := e.start(t, rt, "editor-4eyes", "Publish the about page.", "olga")
	w := e.waitStatus(t, run.ID, engine.StatusWaiting)
	ctx := context.Background()

	cases := []struct {
		name string
		id   string
		d    engine.Decision
		want error
	}{
		{"unknown run", "nope", engine.Decision{Verdict: engine.VerdictApprove, Digest: w.PendingDigest, By: "oscar"}, engine.ErrRunNotFound},
		{"stale digest", run.ID, engine.Decision{Verdict: engine.VerdictApprove, Digest: "abc", By: "oscar"}, engine.ErrStaleTurn},
		{"four-eyes self approval", run.ID, engine.Decision{Verdict: engine.VerdictApprove, Digest: w.PendingDigest, By: "olga"}, engine.ErrSelfApproval},
		{"reason too long", run.ID, engine.Decision{Verdict: engine.VerdictDeny, Digest: w.PendingDigest, By: "oscar", Reason: string(make([]rune, 2001))}, engine.ErrInvalidInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := rt.Decide(ctx, tc.id, tc.d); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			after, _ := e.db.Run(ctx, run.ID)
			if after.Status != engine.StatusWaiting || after.PendingDigest != w.PendingDigest {
				t.Fatalf("a refused decision changed the run: %+v", after)
			}
		})
	}
	// The initiator may deny a four-eyes run.
	if err := rt.Decide(ctx, run.ID, engine.Decision{Verdict: engine.VerdictDeny, Digest: w.PendingDigest, By: "olga", Reason: "changed my mind"}); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, run.ID, engine.StatusCompleted)
	if e.revisions(t) != 0 {
		t.Fatal("a denied write ran")
	}
	// Deciding an ended run names the decision that ended its turn.
	var de *engine.DecidedError
	if err := rt.Decide(ctx, run.ID, engine.Decision{Verdict: engine.VerdictApprove, Digest: w.PendingDigest, By: "oscar"}); !errors.As(err, &de) || de.By != "olga" {
		t.Fatalf("err = %v", err)
	}
	if err := rt.Decide(ctx, run.ID, engine.Decision{Verdict: engine.VerdictApprove, Digest: "other", By: "oscar"}); !errors.Is(err, engine.ErrRunTerminal) {
		t.Fatalf("err = %v", err)
	}
}

func TestCorruptStateRefusedWithoutConsumingTheRun(t *testing.T) {
	e := newEnv(t)
	rt := e.runtime(t, nil)
	run := e.start(t, rt, "editor", "Publish the about page.", "olga")
	w := e.waitStatus(t, run.ID, engine.StatusWaiting)
	raw, err := sqlOpen(e.path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE agent_run SET suspended_state = ? WHERE id = ?`, []byte(`{"version":1,"transcript":[`), run.ID); err != nil {
		t.Fatal(err)
	}
	err = rt.Decide(context.Background(), run.ID, engine.Decision{Verdict: engine.VerdictApprove, Digest: w.PendingDigest, By: "oscar"})
	if !errors.Is(err, engine.ErrCorruptState) {
		t.Fatalf("err = %v", err)
	}
	after, _ := e.db.Run(context.Background(), run.ID)
	if after.Status != engine.StatusWaiting || after.PendingDigest != w.PendingDigest {
		t.Fatalf("corrupt state consumed the run: %+v", after)
	}
	if _, ok, _ := e.db.LastDecision(context.Background(), run.ID); ok {
		t.Fatal("a decision event was written for a refused decision")
	}
	// The damaged run can still be cancelled.
	if err := rt.Cancel(context.Background(), run.ID, "oscar"); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, run.ID, engine.StatusCancelled)
}

func TestCancel(t *testing.T) {
	e := newEnv(t)
	block := newBlockingModel()
	e.models["block"] = block
	rt := e.runtime(t, nil)
	ctx := context.Background()

	// A waiting run is cancelled at once.
	waiting := e.start(t, rt, "editor", "Publish the about page.", "olga")
	e.waitStatus(t, waiting.ID, engine.StatusWaiting)
	if err := rt.Cancel(ctx, waiting.ID, "oscar"); err != nil {
		t.Fatal(err)
	}
	c := e.waitStatus(t, waiting.ID, engine.StatusCancelled)
	if c.Termination != engine.TermCancelled {
		t.Fatalf("termination %q", c.Termination)
	}
	if err := rt.Cancel(ctx, waiting.ID, "oscar"); !errors.Is(err, engine.ErrRunTerminal) {
		t.Fatalf("second cancel: %v", err)
	}

	// A running run stops at its next step.
	running, err := rt.StartRun(ctx, engine.NewRun{Agent: "editor", Model: "block", Prompt: "anything", InitiatedBy: "olga"})
	if err != nil {
		t.Fatal(err)
	}
	<-block.entered
	if err := rt.Cancel(ctx, running.ID, "oscar"); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, running.ID, engine.StatusCancelled)
	evs := e.events(t, running.ID)
	if last := evs[len(evs)-1].Event; last.Kind != engine.EventFailed || last.Termination != engine.TermCancelled {
		t.Fatalf("last event %+v", last)
	}
}

func TestSuspensionAfterCancelDoesNotResurrect(t *testing.T) {
	e := newEnv(t)
	var runID string
	var mu sync.Mutex
	// The model asks for a write, but a cancel lands (from another process,
	// straight in the store) while it thinks.
	e.models["late"] = engine.ModelFunc(func(ctx context.Context, req engine.ModelRequest) (engine.ModelResponse, error) {
		mu.Lock()
		id := runID
		mu.Unlock()
		if _, err := e.db.RequestCancel(ctx, id, engine.Event{Kind: engine.EventFailed, Termination: engine.TermCancelled}, time.Now()); err != nil {
			return engine.ModelResponse{}, err
		}
		return engine.ModelResponse{Message: engine.Message{ToolCalls: []engine.ToolCall{{ID: "c1", Name: "publish_page", Arguments: `{"slug":"about"}`}}}}, nil
	})
	rt := e.runtime(t, func(c *engine.RuntimeConfig) { c.Workers = 1 })
	mu.Lock()
	run, err := rt.StartRun(context.Background(), engine.NewRun{Agent: "editor", Model: "late", Prompt: "x", InitiatedBy: "olga"})
	runID = run.ID
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, run.ID, engine.StatusCancelled)
	if e.revisions(t) != 0 {
		t.Fatal("write ran")
	}
}
