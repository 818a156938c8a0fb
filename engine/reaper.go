package engine

import (
	"context"
	"fmt"
	"time"
)

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
