package kit

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// Sample is one poll: when it was sent, how long it took, whether it failed
// (a transport error or a status other than 200).
type Sample struct {
	At  time.Time
	D   time.Duration
	Err bool
}

// Poll runs len(paths) pollers, poller i GETting paths[i] as htmx does
// once every interval, each starting at a random phase, until ctx is done.
// A poller whose previous poll has not returned skips the tick, as a
// browser's polling would wait. It returns every sample in send order per
// poller.
func Poll(ctx context.Context, c *Client, paths []string, every time.Duration) []Sample {
	var mu sync.Mutex
	var all []Sample
	var wg sync.WaitGroup
	for _, p := range paths {
		wg.Add(1)
		go func(path string) {
			defer wg.Done()
			var mine []Sample
			phase := time.Duration(rand.Int64N(int64(every)))
			select {
			case <-ctx.Done():
				return
			case <-time.After(phase):
			}
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				at := time.Now()
				status, _, d, err := c.Get(path, true)
				mine = append(mine, Sample{At: at, D: d, Err: err != nil || status != http.StatusOK})
				select {
				case <-ctx.Done():
					mu.Lock()
					all = append(all, mine...)
					mu.Unlock()
					return
				case <-t.C:
				}
			}
		}(p)
	}
	wg.Wait()
	return all
}

// Between returns the latencies of the samples sent in [from, to) and how
// many of them failed.
func Between(ss []Sample, from, to time.Time) (ds []time.Duration, errs int) {
	for _, s := range ss {
		if s.At.Before(from) || !s.At.Before(to) {
			continue
		}
		if s.Err {
			errs++
			continue
		}
		ds = append(ds, s.D)
	}
	return ds, errs
}
