package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// job is work for a worker: acquire and carry on a run (start or take-over),
// or resume a run that a decision claimed.
type job struct {
	runID    string
	owner    string // set for a claimed resume
	state    *SuspendedState
	decision Decision
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
	loop.RunID, loop.Initiator = run.ID, run.InitiatedBy
	rec.deadline = agent.ApprovalDeadline

	var res *Result
	if j.state != nil {
		res, err = loop.Resume(ctx, j.state, j.decision)
	} else {
		res, err = r.carryOn(ctx, loop, run)
	}
	r.settle(rec, res, err)
}

// carryOn continues an acquired run from its last durable point. A run that
// must not be continued comes back as a *RunError — a write in doubt
// (interrupted_during_write, never run again), events that do not replay, or
// attempts used up — which settle ends like any other failure, keeping the
// counters the run has stored.
func (r *Runtime) carryOn(ctx context.Context, loop *Loop, run Run) (*Result, error) {
	var evs []Event
	if run.LastSeq > 1 {
		// A new run's one event is its prompt, which replays to nothing:
		// only a run that got further is read back.
		recs, err := r.cfg.Store.Events(ctx, run.ID, 0, 1<<30)
		if err != nil {
			return nil, fmt.Errorf("carry on run %s: %w", run.ID, err)
		}
		evs = make([]Event, len(recs))
		for i, e := range recs {
			evs[i] = e.Event
		}
	}
	cp, err := Replay(loop.Assemble(run.Prompt), evs)
	switch {
	case errors.Is(err, ErrWriteInDoubt):
		return nil, &RunError{Termination: TermInterrupted, Err: fmt.Errorf("%w; it is never run again", err)}
	case err != nil:
		return nil, &RunError{Termination: TermStateError, Err: err}
	case run.Attempts > r.cfg.MaxAttempts:
		return nil, &RunError{Termination: TermRetriesExhausted,
			Err: fmt.Errorf("the run was started %d times without reaching a resting point", run.Attempts-1)}
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
		// Shut down under the run: write what it did (so the next start
		// does not ask the model again), then expire the lease so the next
		// start's reaper carries it on at once.
		if ferr := rec.Flush(context.Background()); ferr != nil && !errors.Is(ferr, ErrLeaseLost) {
			r.log.Warn("write events at shutdown", "run", rec.runID, "err", ferr)
		}
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
		err = r.cfg.Store.SuspendRun(context.Background(), rec.runID, rec.owner, Suspend{Suspension: Suspension{State: blob, Digest: st.Digest()},
			Event: ev, Before: rec.takePending(), Now: now, DeadlineAt: deadlineAt(now, rec.deadline)})
		if err == nil {
			r.cancelIfRequested(rec.runID)
			if rec.deadline > 0 {
				select {
				case r.rewake <- struct{}{}:
				default:
				}
			}
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
	f.Before = rec.takePending()
	if err := r.cfg.Store.FinishRun(context.Background(), rec.runID, rec.owner, f); err != nil {
		if errors.Is(err, ErrRunTerminal) || errors.Is(err, ErrLeaseLost) {
			return
		}
		r.log.Error("finish", "run", rec.runID, "err", err)
	}
}

// deadlineAt is when a turn suspended at now expires, or zero for never.
func deadlineAt(now time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return now.Add(d)
}
