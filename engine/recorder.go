package engine

import (
	"context"
	"sync/atomic"
	"time"
)

// durableRecorder writes a run's events through the store while its worker
// holds the run. It keeps the agreement that EventKind.Transition documents:
// the events of a status transition are not appended here but written by
// that transition, in its transaction (prompt by CreateRun and decision by
// ClaimRun, before the loop runs; suspended by SuspendRun and finished or
// failed by FinishRun, from what the recorder kept).
//
// It holds events back to write several in one transaction: the ones it
// holds are written before the next model call (Flush), with the fence of
// a write (a write's tool_started is written at once, with every event
// before it, before the tool runs) and with its tool_finished (a write
// that ran is never left in doubt), and with the run's suspension or end.
// What a crash can lose is thus only what is redone without harm when the
// run is replayed: reads and the model turn that asked for them.
type durableRecorder struct {
	rt              *Runtime
	runID, owner    string
	stop            context.CancelFunc
	suspended       Event         // the loop's suspended event, for SuspendRun
	final           Event         // the loop's finished or failed event, for FinishRun
	deadline        time.Duration // the agent's approval deadline, for SuspendRun
	cancelRequested atomic.Bool
	// pending are the events recorded and not yet written, in order.
	pending []Event
}

// Record implements Recorder.
func (d *durableRecorder) Record(ctx context.Context, ev Event) error {
	switch ev.Kind.Transition() {
	case TransitionNone:
	case TransitionSuspend:
		d.suspended = ev
		return nil
	case TransitionFinish:
		d.final = ev
		return nil
	default: // written before the loop ran
		return nil
	}
	d.pending = append(d.pending, ev)
	if ev.Write && (ev.Kind == EventToolStarted || ev.Kind == EventToolFinished) {
		return d.Flush(ctx)
	}
	return nil
}

// Flush implements Flusher: it writes the events held back, in one
// transaction that also renews the lease, and stops the run when a cancel
// was requested.
func (d *durableRecorder) Flush(ctx context.Context) error {
	if len(d.pending) == 0 {
		return nil
	}
	_, cancel, err := d.rt.cfg.Store.AppendEvents(ctx, d.runID, d.owner, d.pending, d.rt.cfg.Now().Add(d.rt.cfg.Lease))
	if err != nil {
		return err
	}
	d.pending = nil
	if cancel {
		d.cancelRequested.Store(true)
		d.stop()
	}
	return nil
}

// takePending returns the events held back and forgets them, for the
// transition that ends the segment to write first.
func (d *durableRecorder) takePending() []Event {
	evs := d.pending
	d.pending = nil
	return evs
}
