package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Bounds of what a person can send the runtime.
const (
	// MaxPromptBytes bounds a run's prompt.
	MaxPromptBytes = 8_000
	// MaxReasonRunes bounds a decision's reason.
	MaxReasonRunes = 2_000
)

// Errors of the runtime that callers map to answers.
var (
	// ErrSelfApproval refuses the initiator's approval of a run whose agent
	// requires a second approver (four-eyes). The initiator may still deny.
	ErrSelfApproval = errors.New("four-eyes: the initiator of this run may not approve it")
	// ErrUnknownAgent and ErrUnknownModel refuse names that are not configured.
	ErrUnknownAgent = errors.New("unknown agent")
	ErrUnknownModel = errors.New("unknown model")
	// ErrInvalidInput refuses an empty or oversized prompt or reason.
	ErrInvalidInput = errors.New("invalid input")
	// ErrClosed refuses work after Close.
	ErrClosed = errors.New("runtime is shut down")
)

// RuntimeConfig configures a Runtime. Store, Agents and Models are required.
type RuntimeConfig struct {
	Store  RunStore
	Agents []Agent
	// Models returns the model a run names, or an error wrapping
	// ErrUnknownModel.
	Models func(name string) (Model, error)
	// Workers bounds the runs executing at once (default 4).
	Workers int
	// Lease is how long a worker holds a run between renewals (default 30s);
	// the heartbeat renews it every third of that.
	Lease time.Duration
	// ReapEvery is how often the reaper looks for queued runs (also those
	// another process queued) and expired leases (default 1s). It also
	// wakes at the next lease expiry when that comes sooner, so a run whose
	// worker died is taken over as soon as its lease expires.
	ReapEvery time.Duration
	// MaxAttempts is how many times a run may be acquired before it fails as
	// retries_exhausted (default 3).
	MaxAttempts int
	// CheckArgs checks an operator's edited arguments against the tool's
	// schema; nil checks only that they are a JSON object.
	CheckArgs ArgsChecker
	// FourEyes requires a second approver for every agent.
	FourEyes bool
	Now      func() time.Time
	Logger   *slog.Logger
	// Fault is the fault-injection hook handed to every loop and called at
	// FaultClaimed; nil in production.
	Fault func(point string)
}

// Runtime is the durable run coordinator. It starts runs on a bounded worker
// pool, records every step through the RunStore, suspends runs that need
// approval (a waiting run holds no goroutine and no memory), resumes them
// exactly once on a decision, and reaps runs whose worker died.
type Runtime struct {
	cfg      RuntimeConfig
	agents   map[string]Agent
	instance string
	seq      atomic.Int64
	log      *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	queue  []job
	queued map[string]bool // runs with an acquire job in queue, by id
	wake   chan struct{}
	// rewake tells the reaper to look at its schedule again: a turn with a
	// deadline was just suspended.
	rewake  chan struct{}
	active  map[string]activeRun // runs executing here, by id
	started bool
	closed  bool
}

// activeRun is a run executing here: the owner that holds it and how to stop
// it. The owner tells a new claim's entry from the one of the segment that
// just suspended the run, so neither removes the other.
type activeRun struct {
	owner string
	stop  context.CancelFunc
}

// NewRuntime checks cfg and returns a runtime that is not started yet.
func NewRuntime(cfg RuntimeConfig) (*Runtime, error) {
	if cfg.Store == nil || cfg.Models == nil || len(cfg.Agents) == 0 {
		return nil, errors.New("new runtime: store, models and agents are required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.ReapEvery <= 0 {
		cfg.ReapEvery = time.Second
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 3
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	agents := make(map[string]Agent, len(cfg.Agents))
	for _, a := range cfg.Agents {
		if a.Name == "" {
			return nil, errors.New("new runtime: agent without a name")
		}
		agents[a.Name] = a
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("new runtime: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Runtime{
		cfg: cfg, agents: agents, instance: hex.EncodeToString(b[:]), log: cfg.Logger,
		ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), rewake: make(chan struct{}, 1),
		queued: map[string]bool{}, active: map[string]activeRun{},
	}, nil
}

// Agent returns the configured agent with that name.
func (r *Runtime) Agent(name string) (Agent, bool) {
	a, ok := r.agents[name]
	return a, ok
}

// NeedsSecondApprover reports whether runs of the agent need someone other
// than their initiator to approve (four-eyes): the agent says so, or the
// runtime requires it of every agent.
func (r *Runtime) NeedsSecondApprover(agent string) bool {
	a, ok := r.agents[agent]
	return r.cfg.FourEyes || (ok && a.SecondApprover)
}

// MayApprove reports whether user may approve calls of run: anyone but the
// initiator of a run that needs a second approver. Anyone may deny.
func (r *Runtime) MayApprove(run Run, user string) bool {
	return !(r.NeedsSecondApprover(run.Agent) && user == run.InitiatedBy)
}

// Start launches the workers and the reaper. The reaper runs once at once,
// so queued runs and runs whose worker died are picked up after a restart.
func (r *Runtime) Start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started || r.closed {
		return
	}
	r.started = true
	for i := 0; i < r.cfg.Workers; i++ {
		r.wg.Add(1)
		go r.worker()
	}
	r.wg.Add(1)
	go r.reaper()
}

// Close stops taking work, interrupts the runs executing here and waits for
// every goroutine. An interrupted run is not finished: it keeps its status
// and the reaper of the next start carries it on (or fails it if a write was
// in doubt).
func (r *Runtime) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}

// StartRun validates and stores a queued run and hands it to the workers.
func (r *Runtime) StartRun(ctx context.Context, nr NewRun) (Run, error) {
	if _, ok := r.agents[nr.Agent]; !ok {
		return Run{}, fmt.Errorf("start run: %w %q", ErrUnknownAgent, nr.Agent)
	}
	if _, err := r.cfg.Models(nr.Model); err != nil {
		return Run{}, fmt.Errorf("start run: %w", err)
	}
	if strings.TrimSpace(nr.Prompt) == "" || len(nr.Prompt) > MaxPromptBytes || !utf8.ValidString(nr.Prompt) {
		return Run{}, fmt.Errorf("start run: %w", &InputError{Field: "prompt",
			Message: fmt.Sprintf("The prompt must be 1 to %d bytes of text.", MaxPromptBytes)})
	}
	if r.isClosed() {
		return Run{}, ErrClosed
	}
	now := r.cfg.Now()
	run, err := r.cfg.Store.CreateRun(ctx, nr, Event{Kind: EventPrompt, At: now, Text: nr.Prompt, By: nr.InitiatedBy}, now)
	if err != nil {
		return Run{}, fmt.Errorf("start run: %w", err)
	}
	r.enqueue(job{runID: run.ID})
	return run, nil
}

// Cancel cancels a run: a queued or waiting run at once, a running one at its
// next step (at once if it executes here).
func (r *Runtime) Cancel(ctx context.Context, runID, by string) error {
	now := r.cfg.Now()
	cancelled, err := r.cfg.Store.RequestCancel(ctx, runID, Event{Kind: EventFailed, At: now,
		Termination: TermCancelled, Error: "cancelled by " + by, By: by}, now)
	if err != nil {
		return fmt.Errorf("cancel run %s: %w", runID, err)
	}
	if !cancelled {
		r.mu.Lock()
		a, ok := r.active[runID]
		r.mu.Unlock()
		if ok {
			a.stop()
		}
	}
	return nil
}

// Executing returns how many runs execute in this process now. A run that
// waits for approval is not among them.
func (r *Runtime) Executing() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.active)
}

func (r *Runtime) newOwner() string {
	return fmt.Sprintf("%s/%d", r.instance, r.seq.Add(1))
}

func (r *Runtime) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// deactivate removes the run from the executing set if owner still holds
// the entry.
func (r *Runtime) deactivate(id, owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a, ok := r.active[id]; ok && a.owner == owner {
		delete(r.active, id)
	}
}

func (r *Runtime) isActive(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.active[id]
	return ok
}
