package engine

import (
	"context"
	"errors"
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
	overdue, err := r.cfg.Store.OverdueRuns(ctx, r.cfg.Now(), 1000)
	if err != nil {
		return fmt.Errorf("reap: %w", err)
	}
	for _, run := range overdue {
		// A decision may win the race; the loser's error says so.
		if err := r.expire(ctx, run); err != nil && !errors.As(err, new(*DecidedError)) {
			r.log.Warn("expire an overdue turn", "run", run.ID, "err", err)
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
		case <-r.rewake:
			// A new deadline may come before the planned pass. Since Go
			// 1.23 Reset needs no draining of the channel.
			t.Reset(r.nextReap(r.ctx))
			continue
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
	// A lease expiry or a deadline is acted on moments after its time, not
	// at the next pass. ExpiredRuns and OverdueRuns take what passed
	// strictly before now, hence the millisecond.
	for _, next := range []struct {
		what string
		at   func(context.Context) (time.Time, bool, error)
	}{
		{"next lease expiry", r.cfg.Store.NextLeaseExpiry},
		{"next deadline", r.cfg.Store.NextDeadline},
	} {
		at, ok, err := next.at(ctx)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Error("reaper: "+next.what, "err", err)
			}
			continue
		}
		if until := at.Sub(r.cfg.Now()) + time.Millisecond; ok && until > 0 && until < wait {
			wait = until
		}
	}
	return wait
}
