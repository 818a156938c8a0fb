package engine

import (
	"context"
	"errors"
	"sync"
	"time"
)

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
