// Command pollers measures the htmx polling endpoint GET
// /runs/{id}/steps?after=N of the real server binary over loopback:
//
//  1. one client, polling alternately a run with 10 and a run with 10,000
//     earlier steps (nothing new after N), in rounds: p50 and p99 of each
//     and their ratio (goal <= 1.2), the median over the rounds;
//  2. -pollers pollers (500 by default), each polling its own running run
//     once a second, in rounds of -round: p50, p99, errors (goal: p99 under
//     10 ms, no errors), the median over the rounds, and the server's CPU.
//
// The runs are seeded straight into the database before the server starts:
// running, held by a worker whose lease does not expire, so no worker of
// the server touches them. The load generator runs on the same two cores
// as the server, so its latencies include its own scheduling.
//
//	go run ./bench/pollers -bin bin/countersign
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"countersign/bench/internal/kit"
	"countersign/engine"
)

func main() {
	bin := flag.String("bin", "bin/countersign", "the countersign binary")
	pollers := flag.Int("pollers", 500, "concurrent pollers")
	every := flag.Duration("every", time.Second, "interval of each poller")
	round := flag.Duration("round", 15*time.Second, "length of a round of concurrent polling")
	rounds := flag.Int("rounds", 3, "rounds of concurrent polling")
	pairs := flag.Int("pairs", 500, "polls of each run per round of the 10 vs 10,000 comparison")
	seqRounds := flag.Int("seq-rounds", 5, "rounds of the 10 vs 10,000 comparison")
	out := flag.String("out", "", "folder for the results JSON")
	cpuprofile := flag.String("cpuprofile", "", "serve in process instead of the binary and write a CPU profile of the whole run here (no results kept)")
	flag.Parse()
	if *cpuprofile != "" {
		*out = ""
	}
	if err := run(*bin, *cpuprofile, *pollers, *every, *round, *rounds, *pairs, *seqRounds, *out); err != nil {
		fmt.Fprintln(os.Stderr, "pollers:", err)
		os.Exit(1)
	}
}

func run(bin, cpuprofile string, pollers int, every, round time.Duration, rounds, pairs, seqRounds int, out string) error {
	tmp, err := os.MkdirTemp("", "countersign-pollers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, "cs.db")
	rep := kit.NewReport("pollers")

	kit.Section("seeding %d running runs of 10 steps and one of 10,000", pollers)
	s, err := kit.OpenSeeder(path)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	held := func(t *kit.Template) func(int) kit.Row {
		return func(int) kit.Row {
			return kit.Row{T: t, Status: engine.StatusRunning, InitiatedBy: "admin", CreatedAt: now,
				ClaimedBy: "bench-worker", LeaseUntil: now.Add(24 * time.Hour)}
		}
	}
	small, err := s.Insert(pollers, 1000, held(kit.RunningTemplate(now, 10)))
	if err != nil {
		return err
	}
	large, err := s.Insert(1, 1, held(kit.RunningTemplate(now, 10_000)))
	if err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return err
	}

	srv, err := kit.Serve(bin, path, cpuprofile, nil)
	if err != nil {
		return err
	}
	defer srv.Stop()
	c := kit.NewClient(srv.URL(), pollers+50)
	if err := c.Login(srv.User(), srv.Password()); err != nil {
		return err
	}

	kit.Section("one client: 10 vs 10,000 earlier steps, %d rounds of %d polls of each", seqRounds, pairs)
	poll := func(id string, after int) (time.Duration, error) {
		status, body, d, err := c.Get(fmt.Sprintf("/runs/%s/steps?after=%d", id, after), true)
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("poll: %d %s", status, body)
		}
		return d, err
	}
	for i := 0; i < 100; i++ { // warm up
		if _, err := poll(small[0], 10); err != nil {
			return err
		}
		if _, err := poll(large[0], 10_000); err != nil {
			return err
		}
	}
	var s50, s99, l50, l99, r50, r99 []float64
	for r := 0; r < seqRounds; r++ {
		var ds, dl []time.Duration
		for i := 0; i < pairs; i++ {
			a, b := small[0], large[0]
			aAfter, bAfter := 10, 10_000
			if i%2 == 1 {
				a, b, aAfter, bAfter = b, a, bAfter, aAfter
			}
			da, err := poll(a, aAfter)
			if err != nil {
				return err
			}
			db, err := poll(b, bAfter)
			if err != nil {
				return err
			}
			if i%2 == 1 {
				da, db = db, da
			}
			ds, dl = append(ds, da), append(dl, db)
		}
		sl, ll := kit.Summarise(ds), kit.Summarise(dl)
		fmt.Printf("  round %d: 10 steps %s | 10,000 steps %s\n", r+1, sl, ll)
		s50, s99 = append(s50, kit.Ms(sl.P50)), append(s99, kit.Ms(sl.P99))
		l50, l99 = append(l50, kit.Ms(ll.P50)), append(l99, kit.Ms(ll.P99))
		r50, r99 = append(r50, float64(ll.P50)/float64(sl.P50)), append(r99, float64(ll.P99)/float64(sl.P99))
	}
	rep.Add("poll p50, 10 earlier steps (median of rounds)", kit.Median(s50), "ms")
	rep.Add("poll p99, 10 earlier steps", kit.Median(s99), "ms")
	rep.Add("poll p50, 10,000 earlier steps", kit.Median(l50), "ms")
	rep.Add("poll p99, 10,000 earlier steps", kit.Median(l99), "ms")
	rep.Check("poll p50 ratio 10,000 / 10 steps", kit.Median(r50), 1.2, "x")
	rep.Check("poll p99 ratio 10,000 / 10 steps", kit.Median(r99), 1.2, "x")

	kit.Section("%d concurrent pollers, one poll every %s each, %d rounds of %s", pollers, every, rounds, round)
	paths := make([]string, len(small))
	for i, id := range small {
		paths[i] = fmt.Sprintf("/runs/%s/steps?after=10", id)
	}
	var p50s, p99s, maxs, rates, cpus, others []float64
	totalErrs := 0
	for r := 0; r < rounds; r++ {
		ctx, cancel := context.WithTimeout(context.Background(), round+every)
		watch := kit.WatchCPU(srv.PID())
		start := time.Now()
		samples := kit.Poll(ctx, c, paths, every)
		cancel()
		use := watch.Stop()
		// Leave out the first interval, while the pollers' phases start.
		ds, errs := kit.Between(samples, start.Add(every), start.Add(every+round))
		l := kit.Summarise(ds)
		fmt.Printf("  round %d: %s errors=%d rate=%.0f/s\n           %s\n", r+1, l, errs,
			float64(len(ds)+errs)/round.Seconds(), use)
		p50s, p99s, maxs = append(p50s, kit.Ms(l.P50)), append(p99s, kit.Ms(l.P99)), append(maxs, kit.Ms(l.Max))
		rates = append(rates, float64(len(ds)+errs)/round.Seconds())
		cpus, others = append(cpus, use.Server), append(others, use.Others)
		totalErrs += errs
	}
	rss, peak, _ := srv.RSS()
	rep.Add(fmt.Sprintf("%d pollers: polls per second", pollers), kit.Median(rates), "req/s")
	rep.Add(fmt.Sprintf("%d pollers: p50 (median of rounds)", pollers), kit.Median(p50s), "ms")
	rep.Add(fmt.Sprintf("%d pollers: max (median of rounds)", pollers), kit.Median(maxs), "ms")
	rep.Add(fmt.Sprintf("%d pollers: server CPU", pollers), kit.Median(cpus), "% of a core")
	rep.Add(fmt.Sprintf("%d pollers: other processes' CPU meanwhile", pollers), kit.Median(others), "% of a core")
	rep.Add("server RSS after the load (peak)", float64(peak)/(1<<20), "MB")
	rep.Add("server RSS after the load", float64(rss)/(1<<20), "MB")
	rep.Check(fmt.Sprintf("%d pollers: p99 (median of rounds)", pollers), kit.Median(p99s), 10, "ms")
	rep.Check(fmt.Sprintf("%d pollers: errors", pollers), float64(totalErrs), 0, "")
	return rep.Write(out)
}
