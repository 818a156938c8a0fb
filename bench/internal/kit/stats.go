// Package kit holds what the load programs under bench/ share: latency
// statistics, the real server binary as a child process, a signed-in HTTP
// client, direct seeding of large databases and the results file.
package kit

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Quantile returns the q-quantile of ds by nearest rank; zero for none.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Median returns the median of xs (the lower middle for an even count).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Lat summarises a set of latencies.
type Lat struct {
	N             int
	P50, P99, Max time.Duration
}

// Summarise returns the p50, p99 and max of ds.
func Summarise(ds []time.Duration) Lat {
	return Lat{N: len(ds), P50: Quantile(ds, 0.5), P99: Quantile(ds, 0.99), Max: Quantile(ds, 1)}
}

func (l Lat) String() string {
	return fmt.Sprintf("n=%d p50=%.2fms p99=%.2fms max=%.2fms", l.N, Ms(l.P50), Ms(l.P99), Ms(l.Max))
}
