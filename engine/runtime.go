package engine

import (
	"bytes"
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

	mu      sync.Mutex
	queue   []job
	queued  map[string]bool // runs with an acquire job in queue, by id
	wake    chan struct{}
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

// job is work for a worker: acquire and carry on a run (start or take-over),
// or resume a run that a decision claimed.
type job struct {
	runID    string
	owner    string // set for a claimed resume
	state    *SuspendedState
	decision Decision
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
		ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1),
		queued: map[string]bool{}, active: map[string]activeRun{},
	}, nil
}

// Agent returns the configured agent with that name.
func (r *Runtime) Agent(name string) (Agent, bool) {
	a, ok := r.agents[name]
	return a, ok
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

// Decide applies a person's decision to a waiting run. It checks the rules
// that do not depend on roles (the state decodes, the digest names the
// pending turn, four-eyes), then claims the run atomically: of many
// concurrent decisions exactly one wins and the rest get *DecidedError. The
// winner's run resumes in the background. A refused decision changes nothing.
func (r *Runtime) Decide(ctx context.Context, runID string, d Decision) error {
	if utf8.RuneCountInString(d.Reason) > MaxReasonRunes || !utf8.ValidString(d.Reason) {
		return fmt.Errorf("decide: %w", &InputError{Field: "reason",
			Message: fmt.Sprintf("The reason must be at most %d characters of text.", MaxReasonRunes)})
	}
	if r.isClosed() {
		return ErrClosed
	}
	run, err := r.cfg.Store.Run(ctx, runID)
	if err != nil {
		return fmt.Errorf("decide: %w", err)
	}
	if run.Status != StatusWaiting {
		return r.notWaitingErr(ctx, run, d)
	}
	sus, err := r.cfg.Store.SuspendedState(ctx, runID)
	if errors.Is(err, ErrRunTerminal) || errors.Is(err, ErrNotWaiting) {
		// Decided and moved on since the run was read: say by whom.
		return r.movedOnErr(ctx, runID, d)
	}
	if err != nil {
		return fmt.Errorf("decide: %w", err)
	}
	if sus.Digest != run.PendingDigest {
		return r.movedOnErr(ctx, runID, d)
	}
	state, err := sus.Decode()
	if err != nil {
		r.log.Error("decide: refusing corrupt state", "run", runID, "err", err)
		return fmt.Errorf("decide run %s: %w", runID, err)
	}
	if d.Digest != sus.Digest {
		return r.staleErr(ctx, runID, d)
	}
	agent, ok := r.agents[run.Agent]
	if !ok {
		return fmt.Errorf("decide run %s: %w %q", runID, ErrUnknownAgent, run.Agent)
	}
	if d.Approve && (agent.SecondApprover || r.cfg.FourEyes) && d.By == run.InitiatedBy {
		return fmt.Errorf("decide run %s: %w", runID, ErrSelfApproval)
	}
	if _, err := r.cfg.Models(run.Model); err != nil {
		return fmt.Errorf("decide run %s: %w", runID, err)
	}

	owner := r.newOwner()
	now := r.cfg.Now()
	dec := DecisionDeny
	if d.Approve {
		dec = DecisionApprove
	}
	claimed, err := r.cfg.Store.ClaimRun(ctx, runID, Claim{
		Digest: d.Digest, Owner: owner, LeaseUntil: now.Add(r.cfg.Lease), Now: now,
		Event: Event{Kind: EventDecision, At: now, Decision: dec, By: d.By, Reason: d.Reason, Digest: d.Digest},
	})
	if err != nil {
		return fmt.Errorf("decide run %s: %w", runID, err)
	}
	// The resume must use exactly the state that was claimed. It is the one
	// decoded above unless it changed in between; only then decode again.
	if !bytes.Equal(claimed, sus.State) {
		if state, err = (Suspension{State: claimed, Digest: d.Digest}).Decode(); err != nil {
			r.release(runID, owner, "the stored state did not decode after the claim")
			return fmt.Errorf("decide run %s: %w", runID, err)
		}
	}
	if r.cfg.Fault != nil {
		r.cfg.Fault(FaultClaimed)
	}
	r.enqueue(job{runID: runID, owner: owner, state: state, decision: d})
	return nil
}

// notWaitingErr explains why a run that is not waiting cannot be decided:
// already decided (by whom and when), ended, or not waiting at all. A
// decision on the caller's turn is always named, so the loser of a race
// learns who won even when the winner's run has ended since.
func (r *Runtime) notWaitingErr(ctx context.Context, run Run, d Decision) error {
	if err := r.decidedErr(ctx, run.ID, d.Digest); err != nil {
		return err
	}
	ev, ok, err := r.cfg.Store.LastDecision(ctx, run.ID)
	if err != nil {
		return fmt.Errorf("decide run %s: %w", run.ID, err)
	}
	if ok && run.Status == StatusRunning {
		return fmt.Errorf("decide run %s: %w", run.ID, &DecidedError{By: ev.By, At: ev.At, Dec: ev.Decision})
	}
	if run.Status.Terminal() {
		return fmt.Errorf("decide run %s: %w", run.ID, ErrRunTerminal)
	}
	return fmt.Errorf("decide run %s: %w", run.ID, ErrNotWaiting)
}

// movedOnErr explains a run that changed between two reads of one decision:
// it is read again and explained as notWaitingErr does, or as stale when it
// waits on another turn that nobody decided for the caller.
func (r *Runtime) movedOnErr(ctx context.Context, runID string, d Decision) error {
	run, err := r.cfg.Store.Run(ctx, runID)
	if err != nil {
		return fmt.Errorf("decide: %w", err)
	}
	if run.Status == StatusWaiting {
		return r.staleErr(ctx, runID, d)
	}
	return r.notWaitingErr(ctx, run, d)
}

// staleErr refuses a decision on a turn the run no longer waits on, naming
// the decision that moved the run past it when there was one.
func (r *Runtime) staleErr(ctx context.Context, runID string, d Decision) error {
	if err := r.decidedErr(ctx, runID, d.Digest); err != nil {
		return err
	}
	return fmt.Errorf("decide run %s: %w", runID, ErrStaleTurn)
}

// decidedErr returns a *DecidedError naming the decision on the turn with
// digest, or nil when that turn was not decided.
func (r *Runtime) decidedErr(ctx context.Context, runID, digest string) error {
	ev, ok, err := r.cfg.Store.DecisionOn(ctx, runID, digest)
	if err != nil {
		return fmt.Errorf("decide run %s: %w", runID, err)
	}
	if !ok {
		return nil
	}
	return fmt.Errorf("decide run %s: %w", runID, &DecidedError{By: ev.By, At: ev.At, Dec: ev.Decision})
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

// Reap takes the runs whose lease expired and the queued runs and hands them
// to the workers. The reaper calls it at start, every ReapEvery and at the
// next lease expiry; tests call it directly.
func (r *Runtime) Reap(ctx context.Context) error {
	expired, err := r.cfg.Store.ExpiredRuns(ctx, r.cfg.Now(), 1000)
	if err != nil {
		return fmt.Errorf("reap: %w", err)
	}
	queued, err := r.cfg.Store.QueuedRuns(ctx, 1000)
	if err != nil {
		return fmt.Errorf("reap: %w", err)
	}
	for _, run := range append(expired, queued...) {
		if !r.isActive(run.ID) {
			r.enqueue(job{runID: run.ID})
		}
	}
	return nil
}

// reaper reaps at start, then every ReapEvery or at the next lease expiry,
// whichever comes first. It sleeps on a timer between passes: no busy loop.
func (r *Runtime) reaper() {
	defer r.wg.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
		}
		if err := r.Reap(r.ctx); err != nil && r.ctx.Err() == nil {
			r.log.Error("reaper", "err", err)
		}
		t.Reset(r.nextReap(r.ctx))
	}
}

// nextReap is how long the reaper sleeps: ReapEvery, or less when a lease
// expires sooner. A lease already expired was just reaped (or its run waits
// for a worker), so it does not shorten the sleep.
func (r *Runtime) nextReap(ctx context.Context) time.Duration {
	wait := r.cfg.ReapEvery
	exp, ok, err := r.cfg.Store.NextLeaseExpiry(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error("reaper: next lease expiry", "err", err)
		}
		return wait
	}
	// ExpiredRuns takes leases that expired strictly before now.
	if until := exp.Sub(r.cfg.Now()) + time.Millisecond; ok && until > 0 && until < wait {
		wait = until
	}
	return wait
}

func (r *Runtime) worker() {
	defer r.wg.Done()
	for {
		j, ok := r.next()
		if !ok {
			return
		}
		r.drive(j)
	}
}

// next blocks until there is a job or the runtime closes.
func (r *Runtime) next() (job, bool) {
	for {
		r.mu.Lock()
		if r.ctx.Err() != nil {
			r.mu.Unlock()
			return job{}, false
		}
		if len(r.queue) > 0 {
			j := r.queue[0]
			r.queue = r.queue[1:]
			if j.owner == "" {
				delete(r.queued, j.runID)
			}
			r.mu.Unlock()
			return j, true
		}
		r.mu.Unlock()
		select {
		case <-r.ctx.Done():
			return job{}, false
		case <-r.wake:
		}
	}
}

// enqueue hands a job to the workers. An acquire job for a run that already
// has one in the queue is dropped: the reaper finds the same queued runs on
// every pass. A claimed resume is always queued.
func (r *Runtime) enqueue(j job) {
	r.mu.Lock()
	if j.owner == "" {
		if r.queued[j.runID] {
			r.mu.Unlock()
			return
		}
		r.queued[j.runID] = true
	}
	r.queue = append(r.queue, j)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	// Wake every idle worker when the queue is long.
	for i := 1; i < r.cfg.Workers; i++ {
		select {
		case r.wake <- struct{}{}:
		default:
			return
		}
	}
}

// drive executes one job to its next resting point: suspended, finished, or
// interrupted by shutdown.
func (r *Runtime) drive(j job) {
	store := r.cfg.Store
	owner := j.owner
	var run Run
	var err error
	if owner == "" {
		owner = r.newOwner()
		now := r.cfg.Now()
		run, err = store.AcquireRun(r.ctx, j.runID, owner, now, now.Add(r.cfg.Lease))
		if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrRunNotFound) {
			return // someone else holds it, or it is not runnable any more
		}
	} else {
		run, err = store.Run(r.ctx, j.runID)
	}
	if err != nil {
		if r.ctx.Err() == nil {
			r.log.Error("drive: load run", "run", j.runID, "err", err)
		}
		return
	}

	ctx, stop := context.WithCancel(r.ctx)
	defer stop()
	r.mu.Lock()
	r.active[run.ID] = activeRun{owner: owner, stop: stop}
	r.mu.Unlock()
	defer r.deactivate(run.ID, owner)

	rec := &durableRecorder{rt: r, runID: run.ID, owner: owner, stop: stop}
	hbDone := r.heartbeat(ctx, rec)
	defer hbDone()

	if run.CancelRequested {
		r.finish(rec, nil, &RunError{Termination: TermCancelled, Err: context.Canceled})
		return
	}
	agent, ok := r.agents[run.Agent]
	if !ok {
		r.finish(rec, nil, &RunError{Termination: TermModelError, Err: fmt.Errorf("%w %q", ErrUnknownAgent, run.Agent)})
		return
	}
	model, err := r.cfg.Models(run.Model)
	if err != nil {
		r.finish(rec, nil, &RunError{Termination: TermModelError, Err: err})
		return
	}
	loop := NewLoop(agent, model, rec)
	loop.Now = r.cfg.Now
	loop.Fault = r.cfg.Fault

	var res *Result
	if j.state != nil {
		res, err = loop.Resume(ctx, j.state, j.decision)
	} else {
		res, err = r.carryOn(ctx, loop, run, rec)
		if rec.settled {
			return
		}
	}
	r.settle(rec, res, err)
}

// carryOn continues an acquired run from its last durable point, failing it
// when a write is in doubt or its attempts are used up.
func (r *Runtime) carryOn(ctx context.Context, loop *Loop, run Run, rec *durableRecorder) (*Result, error) {
	recs, err := r.cfg.Store.Events(ctx, run.ID, 0, 1<<30)
	if err != nil {
		return nil, fmt.Errorf("carry on run %s: %w", run.ID, err)
	}
	evs := make([]Event, len(recs))
	for i, e := range recs {
		evs[i] = e.Event
	}
	cp, err := Replay(loop.Assemble(run.Prompt), evs)
	if errors.Is(err, ErrWriteInDoubt) {
		r.finish(rec, nil, &RunError{Termination: TermInterrupted, Err: fmt.Errorf("%w; it is never run again", err)})
		rec.settled = true
		return nil, nil
	}
	if err != nil {
		r.finish(rec, nil, &RunError{Termination: TermStateError, Err: err})
		rec.settled = true
		return nil, nil
	}
	if run.Attempts > r.cfg.MaxAttempts {
		r.finish(rec, nil, &RunError{Termination: TermRetriesExhausted,
			Err: fmt.Errorf("the run was started %d times without reaching a resting point", run.Attempts-1)})
		rec.settled = true
		return nil, nil
	}
	return loop.Continue(ctx, cp)
}

// settle stores where a loop segment ended: a suspension, a success or a
// failure. A run interrupted by shutdown is left for the next start.
func (r *Runtime) settle(rec *durableRecorder, res *Result, err error) {
	// The loop segment is over: nothing is left here to stop, and once the
	// run is stored as waiting a decision may claim it for a new segment
	// whose entry must not be removed by this one.
	r.deactivate(rec.runID, rec.owner)
	var are *ApprovalRequiredError
	if errors.As(err, &are) {
		if rec.cancelRequested.Load() {
			r.finish(rec, res, &RunError{Termination: TermCancelled, Err: context.Canceled})
			return
		}
		r.suspend(rec, are.State)
		return
	}
	if err != nil && errors.Is(err, ErrLeaseLost) {
		// Cancelled and finished by someone else, or taken over: not ours.
		r.log.Info("run no longer held by this worker", "run", rec.runID)
		return
	}
	if err != nil && r.ctx.Err() != nil && !rec.cancelRequested.Load() {
		// Shut down under the run: expire the lease so the next start's
		// reaper carries it on at once.
		expired := r.cfg.Now().Add(-time.Millisecond)
		if _, lerr := r.cfg.Store.RenewLease(context.Background(), rec.runID, rec.owner, expired); lerr != nil && !errors.Is(lerr, ErrLeaseLost) {
			r.log.Warn("release lease at shutdown", "run", rec.runID, "err", lerr)
		}
		return
	}
	r.finish(rec, res, err)
}

// suspend stores a suspension. If it cannot be stored, the run fails with
// that reason instead of promising a resume that cannot happen.
func (r *Runtime) suspend(rec *durableRecorder, st *SuspendedState) {
	now := r.cfg.Now()
	ev := rec.suspended
	if ev.Kind == "" {
		ev = Event{Kind: EventSuspended, At: now, Pending: st.Pending, Previews: st.Previews, Digest: st.Digest(), Offered: st.OfferedTools}
	}
	blob, err := EncodeState(st)
	if err == nil {
		err = r.cfg.Store.SuspendRun(context.Background(), rec.runID, rec.owner, blob, st.Digest(), ev, now)
		if err == nil {
			r.cancelIfRequested(rec.runID)
			return
		}
		if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrRunTerminal) {
			// Cancelled meanwhile: a late suspension never resurrects a run.
			r.log.Info("suspension after cancel ignored", "run", rec.runID)
			return
		}
	}
	r.log.Error("suspend", "run", rec.runID, "err", err)
	r.finish(rec, nil, &RunError{Termination: TermStateError, Err: fmt.Errorf("could not store the suspension: %w", err)})
}

// cancelIfRequested cancels a just-suspended run whose cancel was requested
// after the worker's last step: the flag alone would leave it in the inbox.
func (r *Runtime) cancelIfRequested(runID string) {
	run, err := r.cfg.Store.Run(context.Background(), runID)
	if err != nil || !run.CancelRequested || run.Status != StatusWaiting {
		return
	}
	now := r.cfg.Now()
	if _, err := r.cfg.Store.RequestCancel(context.Background(), runID, Event{Kind: EventFailed, At: now,
		Termination: TermCancelled, Error: "cancelled"}, now); err != nil {
		r.log.Error("cancel after suspend", "run", runID, "err", err)
	}
}

// Executing returns how many runs execute in this process now. A run that
// waits for approval is not among them.
func (r *Runtime) Executing() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.active)
}

// finish ends the run as completed, failed or cancelled.
func (r *Runtime) finish(rec *durableRecorder, res *Result, err error) {
	now := r.cfg.Now()
	f := Finish{Now: now}
	if res != nil {
		f.Totals = &Totals{Iterations: res.Iterations, Usage: res.Usage}
	}
	var re *RunError
	switch {
	case err == nil && res != nil && res.Termination == TermCompleted:
		f.Status, f.Termination = StatusCompleted, TermCompleted
	case err == nil && res != nil:
		f.Status, f.Termination = StatusFailed, res.Termination
		f.Error = "the run reached its limit of model calls without a final answer"
	case errors.As(err, &re):
		f.Status, f.Termination, f.Error = StatusFailed, re.Termination, re.Err.Error()
		if re.Termination == TermCancelled {
			f.Status, f.Error = StatusCancelled, "cancelled"
		}
	default:
		f.Status, f.Termination, f.Error = StatusFailed, TermStateError, fmt.Sprint(err)
	}
	if ev := rec.final; ev.Kind != "" {
		f.Event = ev
		if ev.Totals != nil {
			f.Totals = ev.Totals
		}
		if f.Status == StatusCancelled {
			f.Event.Error = "cancelled"
		}
	} else {
		kind := EventFailed
		if f.Status == StatusCompleted {
			kind = EventFinished
		}
		// Without a loop result the store keeps the run's counters and
		// writes them into this event.
		f.Event = Event{Kind: kind, At: now, Termination: f.Termination, Error: f.Error, Totals: f.Totals}
		if res != nil {
			f.Event.Text = res.Answer
		}
	}
	f.Event.At = now
	if err := r.cfg.Store.FinishRun(context.Background(), rec.runID, rec.owner, f); err != nil {
		if errors.Is(err, ErrRunTerminal) || errors.Is(err, ErrLeaseLost) {
			return
		}
		r.log.Error("finish", "run", rec.runID, "err", err)
	}
}

// release hands a claimed run back to waiting.
func (r *Runtime) release(runID, owner, why string) {
	now := r.cfg.Now()
	if err := r.cfg.Store.ReleaseRun(context.Background(), runID, owner,
		Event{Kind: EventReleased, At: now, Error: "decision not applied: " + why}, now); err != nil {
		r.log.Error("release", "run", runID, "err", err)
	}
}

// heartbeat renews the lease while a job executes, so a slow model call does
// not let the reaper take a live run. It stops the run when the lease is lost
// or a cancel was requested.
func (r *Runtime) heartbeat(ctx context.Context, rec *durableRecorder) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(r.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				cancel, err := r.cfg.Store.RenewLease(ctx, rec.runID, rec.owner, r.cfg.Now().Add(r.cfg.Lease))
				if errors.Is(err, ErrLeaseLost) {
					rec.stop()
					return
				}
				if cancel {
					rec.cancelRequested.Store(true)
					rec.stop()
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
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

// durableRecorder writes a run's events through the store while its worker
// holds the run. The events that accompany a status transition (prompt,
// decision, suspended, finished, failed) are written by that transition, in
// its transaction, so they are kept here instead of appended.
type durableRecorder struct {
	rt              *Runtime
	runID, owner    string
	stop            context.CancelFunc
	suspended       Event
	final           Event
	settled         bool
	cancelRequested atomic.Bool
}

// Record implements Recorder.
func (d *durableRecorder) Record(ctx context.Context, ev Event) error {
	switch ev.Kind {
	case EventPrompt, EventDecision:
		return nil
	case EventSuspended:
		d.suspended = ev
		return nil
	case EventFinished, EventFailed:
		d.final = ev
		return nil
	}
	_, cancel, err := d.rt.cfg.Store.AppendEvent(ctx, d.runID, d.owner, ev, d.rt.cfg.Now().Add(d.rt.cfg.Lease))
	if err != nil {
		return err
	}
	if cancel {
		d.cancelRequested.Store(true)
		d.stop()
	}
	return nil
}
