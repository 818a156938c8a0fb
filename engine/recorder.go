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
type durableRecorder struct {
	rt              *Runtime
	runID, owner    string
	stop            context.CancelFunc
	suspended       Event         // the loop's suspended event, for SuspendRun
	final           Event         // the loop's finished or failed event, for FinishRun
	deadline        time.Duration // the agent's approval deadline, for SuspendRun
	cancelRequested atomic.Bool
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
