// Command purge measures the retention purge of the real server binary on
// 1,000,000 ended runs (six events each): how long it takes, and the p99 of
// concurrent polls while it runs against the p99 of the same polls when
// the server is idle (goal: under 2x).
//
// The server purges at start and then hourly (main.go's purgeLoop, batches
// of 500 runs per transaction). So the server is started twice on the same
// database: first with a retention that keeps everything, for the idle
// polls; then with COUNTERSIGN_RETENTION=1h, which makes every seeded run
// (all ended more than two hours ago) due, for the polls during the purge.
// The purge's time runs from the server's "listening" line (the purge
// starts just before it) to its "purged finished runs" line. The polled
// runs are -pollers running runs of 10 steps, created now and held by a
// worker whose lease does not expire, which the purge does not touch.
//
//	go run ./bench/purge -bin bin/countersign [-db seeded.db]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"countersign/bench/internal/kit"
	"countersign/engine"
	"countersign/store"
)

func main() {
	bin := flag.String("bin", "bin/countersign", "the countersign binary")
	dbPath := flag.String("db", "", "a database seeded by bench/history -keep or bench/seed (it is purged); empty seeds one")
	runs := flag.Int("runs", 1_000_000, "runs to seed when -db is empty")
	pollers := flag.Int("pollers", 100, "concurrent pollers, one poll a second each")
	idle := flag.Duration("idle", 20*time.Second, "how long to poll the idle server")
	limit := flag.Duration("max", 10*time.Minute, "give up on a purge that takes longer")
	out := flag.String("out", "", "folder for the results JSON")
	cpuprofile := flag.String("cpuprofile", "", "instead: purge in process under the pollers, with a CPU profile of it written here")
	flag.Parse()
	if *cpuprofile != "" {
		if err := profile(*dbPath, *runs, *pollers, *cpuprofile); err != nil {
			fmt.Fprintln(os.Stderr, "purge:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*bin, *dbPath, *runs, *pollers, *idle, *limit, *out); err != nil {
		fmt.Fprintln(os.Stderr, "purge:", err)
		os.Exit(1)
	}
}

var rePurged = regexp.MustCompile(`msg="purged finished runs" runs=(\d+)`)

func run(bin, path string, runs, pollers int, idle, limit time.Duration, out string) error {
	rep := kit.NewReport("purge")
	ctx := context.Background()
	if path == "" {
		tmp, err := os.MkdirTemp("", "countersign-purge-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		path = filepath.Join(tmp, "cs.db")
		kit.Section("seeding %d ended runs", runs)
		d, err := kit.SeedHistory(path, runs)
		if err != nil {
			return err
		}
		rep.Add(fmt.Sprintf("seed %d runs", runs), d.Seconds(), "s")
	}

	db, err := store.Open(ctx, path, store.WithBcryptCost(4))
	if err != nil {
		return err
	}
	ended, err := db.CountRuns(ctx, store.RunFilter{})
	if err != nil {
		db.Close()
		return err
	}
	if _, err := db.CreateUser(ctx, "purge-bench", "purge-bench-password", store.RoleViewer); err != nil {
		db.Close()
		return err
	}
	db.Close()
	s, err := kit.OpenSeeder(path)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	ids, err := s.Insert(pollers, 1000, func(int) kit.Row {
		return kit.Row{T: kit.RunningTemplate(now, 10), Status: engine.StatusRunning, InitiatedBy: "admin",
			CreatedAt: now, ClaimedBy: "bench-worker", LeaseUntil: now.Add(24 * time.Hour)}
	})
	if err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return err
	}
	before, _ := os.Stat(path)
	paths := make([]string, len(ids))
	for i, id := range ids {
		paths[i] = "/runs/" + id + "/steps?after=10"
	}

	kit.Section("idle: %d pollers for %s, nothing to purge", pollers, idle)
	srv, err := kit.StartServer(bin, path, map[string]string{"COUNTERSIGN_RETENTION": "876000h"}, nil)
	if err != nil {
		return err
	}
	c := kit.NewClient(srv.URL, pollers+10)
	if err := c.Login("purge-bench", "purge-bench-password"); err != nil {
		srv.Stop()
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, idle+time.Second)
	watch := kit.WatchCPU(srv.PID())
	start := time.Now()
	samples := kit.Poll(pctx, c, paths, time.Second)
	cancel()
	idleUse := watch.Stop()
	srv.Stop()
	idleDs, idleErrs := kit.Between(samples, start.Add(time.Second), start.Add(time.Second+idle))
	idleLat := kit.Summarise(idleDs)
	fmt.Printf("  idle polls: %s errors=%d\n  %s\n", idleLat, idleErrs, idleUse)

	kit.Section("purge: %d ended runs due, %d pollers while it runs", ended, pollers)
	srv, err = kit.StartServer(bin, path, map[string]string{"COUNTERSIGN_RETENTION": "1h"}, nil)
	if err != nil {
		return err
	}
	defer srv.Stop()
	listening, _, err := srv.WaitLineAt(regexp.MustCompile(`countersign listening`), time.Minute)
	if err != nil {
		return err
	}
	c = kit.NewClient(srv.URL, pollers+10)
	if err := c.Login("purge-bench", "purge-bench-password"); err != nil {
		return err
	}
	pctx, cancel = context.WithCancel(ctx)
	pollStart := time.Now()
	done := make(chan []kit.Sample)
	go func() { done <- kit.Poll(pctx, c, paths, time.Second) }()
	watch = kit.WatchCPU(srv.PID())
	purgedAt, line, err := srv.WaitLineAt(rePurged, limit)
	busyUse := watch.Stop()
	cancel()
	samples = <-done
	if err != nil {
		return fmt.Errorf("purge did not end: %w", err)
	}
	purged, _ := strconv.Atoi(rePurged.FindStringSubmatch(line)[1])
	took := purgedAt.Sub(listening)
	// Polls during the purge: from the first full interval after the
	// pollers started to the end of the purge.
	busyDs, busyErrs := kit.Between(samples, pollStart.Add(time.Second), purgedAt)
	busyLat := kit.Summarise(busyDs)
	fmt.Printf("  polls during the purge: %s errors=%d\n  %s\n", busyLat, busyErrs, busyUse)
	after, _ := os.Stat(path)

	kit.Section("results")
	rep.Add("runs purged", float64(purged), "runs")
	rep.Add("purge time", took.Seconds(), "s")
	rep.Add("purge rate", float64(purged)/took.Seconds(), "runs/s")
	rep.Add("database file before", float64(before.Size())/(1<<20), "MB")
	rep.Add("database file after (not vacuumed)", float64(after.Size())/(1<<20), "MB")
	rep.Add(fmt.Sprintf("poll p50 idle (%d pollers)", pollers), kit.Ms(idleLat.P50), "ms")
	rep.Add("poll p99 idle", kit.Ms(idleLat.P99), "ms")
	rep.Add("poll p50 during the purge", kit.Ms(busyLat.P50), "ms")
	rep.Add("poll p99 during the purge", kit.Ms(busyLat.P99), "ms")
	rep.Add("poll max during the purge", kit.Ms(busyLat.Max), "ms")
	rep.Add("polls during the purge", float64(busyLat.N), "polls")
	rep.Add("server CPU idle", idleUse.Server, "% of a core")
	rep.Add("server CPU during the purge", busyUse.Server, "% of a core")
	rep.Add("other processes' CPU idle", idleUse.Others, "% of a core")
	rep.Add("other processes' CPU during the purge", busyUse.Others, "% of a core")
	rep.Check("poll p99 during the purge / idle", float64(busyLat.P99)/float64(idleLat.P99), 2, "x")
	rep.Check("poll errors idle and during the purge", float64(idleErrs+busyErrs), 0, "")
	if purged != ended {
		rep.Note("purged %d of the %d ended runs", purged, ended)
	}
	return rep.Write(out)
}

// profile serves the database in process, with a CPU profile, and purges it
// there as main.go's purgeLoop does (batches of 500) under the pollers.
func profile(path string, runs, pollers int, cpuprofile string) error {
	ctx := context.Background()
	if path == "" {
		tmp, err := os.MkdirTemp("", "countersign-purge-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		path = filepath.Join(tmp, "cs.db")
		if _, err := kit.SeedHistory(path, runs); err != nil {
			return err
		}
	}
	s, err := kit.OpenSeeder(path)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	ids, err := s.Insert(pollers, 1000, func(int) kit.Row {
		return kit.Row{T: kit.RunningTemplate(now, 10), Status: engine.StatusRunning, InitiatedBy: "admin",
			CreatedAt: now, ClaimedBy: "bench-worker", LeaseUntil: now.Add(24 * time.Hour)}
	})
	if err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return err
	}
	p, err := kit.StartInProc(path, cpuprofile)
	if err != nil {
		return err
	}
	defer p.Stop()
	c := kit.NewClient(p.URL, pollers+10)
	if err := c.Login(kit.InProcUser, p.Password); err != nil {
		return err
	}
	paths := make([]string, len(ids))
	for i, id := range ids {
		paths[i] = "/runs/" + id + "/steps?after=10"
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan []kit.Sample)
	start := time.Now()
	go func() { done <- kit.Poll(pctx, c, paths, time.Second) }()
	n, err := p.DB.PurgeFinishedBefore(ctx, time.Now().Add(-time.Hour), 0)
	took := time.Since(start)
	cancel()
	samples := <-done
	if err != nil {
		return err
	}
	ds, errs := kit.Between(samples, start.Add(time.Second), start.Add(took))
	fmt.Printf("  purged %d runs in %.1fs in process; polls meanwhile: %s errors=%d\n", n, took.Seconds(), kit.Summarise(ds), errs)
	return nil
}
