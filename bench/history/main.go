// Command history measures the run history with 1,000 and with 1,000,000
// ended runs in the database (seeded straight into SQLite; the seeding of
// the million is timed and reported): the first page and a page 10,000 rows
// deep, unfiltered, filtered by status (failed: 10% of the runs) and by
// initiator (user07: 5%). Each is measured twice: store.ListRuns alone (the
// keyset query) and GET /runs through the real web app in process (the
// session, ListRuns, CountRuns for the match count, the render). A sample
// of the small database and one of the large alternate, so each ratio
// large/small is measured in the same conditions; the figures are the
// medians over rounds. The goal is a ratio of at most 1.5 for every pair.
//
// With 1,000 runs there is no page 10,000 rows deep: the small side of a
// deep pair is the deepest full page there is.
//
//	go run ./bench/history [-keep DIR]
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"countersign/bench/internal/kit"
	"countersign/engine"
	"countersign/store"
)

func main() {
	small := flag.Int("small", 1000, "runs in the small database")
	large := flag.Int("large", 1_000_000, "runs in the large database")
	depth := flag.Int("depth", 10_000, "rows before the deep page")
	rounds := flag.Int("rounds", 5, "rounds")
	storeN := flag.Int("store-samples", 60, "samples of each store query per round and size")
	webN := flag.Int("web-samples", 12, "samples of each page per round and size")
	keep := flag.String("keep", "", "keep the large database at this path (for bench/purge)")
	out := flag.String("out", "", "folder for the results JSON")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the large database's pages here")
	flag.Parse()
	if err := run(*small, *large, *depth, *rounds, *storeN, *webN, *keep, *out, *cpuprofile); err != nil {
		fmt.Fprintln(os.Stderr, "history:", err)
		os.Exit(1)
	}
}

// side is one database with its app and the cursors of its pages.
type side struct {
	n      int
	db     *store.DB
	h      http.Handler
	cookie string
}

// query is one of the pages measured: a filter and how deep.
type query struct {
	name   string
	filter store.RunFilter
	deep   bool
}

func run(smallN, largeN, depth, rounds, storeN, webN int, keep, out, cpuprofile string) error {
	tmp, err := os.MkdirTemp("", "countersign-history-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	rep := kit.NewReport("history")
	ctx := context.Background()

	kit.Section("seeding %d and %d ended runs (six events each)", smallN, largeN)
	largePath := filepath.Join(tmp, "large.db")
	if keep != "" {
		os.Remove(keep)
		os.Remove(keep + "-wal")
		os.Remove(keep + "-shm")
		largePath = keep
	}
	sides := map[string]*side{}
	for _, c := range []struct {
		key  string
		n    int
		path string
	}{{"small", smallN, filepath.Join(tmp, "small.db")}, {"large", largeN, largePath}} {
		d, err := kit.SeedHistory(c.path, c.n)
		if err != nil {
			return err
		}
		fi, err := os.Stat(c.path)
		if err != nil {
			return err
		}
		rep.Add(fmt.Sprintf("seed %d runs (%d events)", c.n, 6*c.n), d.Seconds(), "s")
		rep.Add(fmt.Sprintf("database size with %d runs", c.n), float64(fi.Size())/(1<<20), "MB")
		db, err := store.Open(ctx, c.path, store.WithBcryptCost(4))
		if err != nil {
			return err
		}
		defer db.Close()
		if _, err := db.CreateUser(ctx, "bench", "bench-password", store.RoleViewer); err != nil {
			return err
		}
		h, _, err := kit.App(db)
		if err != nil {
			return err
		}
		cookie, err := kit.SignIn(h, "bench", "bench-password")
		if err != nil {
			return err
		}
		sides[c.key] = &side{n: c.n, db: db, h: h, cookie: cookie}
	}
	small, large := sides["small"], sides["large"]

	queries := []query{
		{name: "unfiltered"},
		{name: "status=failed", filter: store.RunFilter{Status: engine.StatusFailed}},
		{name: "initiator=user07", filter: store.RunFilter{InitiatedBy: "user07"}},
	}
	var all []query
	for _, q := range queries {
		all = append(all, q, query{name: q.name, filter: q.filter, deep: true})
	}

	// The cursor of each deep page, found by walking the pages before it.
	cursor := func(s *side, q query) (string, int, error) {
		if !q.deep {
			return "", 0, nil
		}
		total, err := s.db.CountRuns(ctx, q.filter)
		if err != nil {
			return "", 0, err
		}
		want := min(depth, total-store.DefaultRunLimit)
		f := q.filter
		f.Limit = store.MaxRunLimit
		skipped := 0
		for skipped < want {
			f.Limit = min(store.MaxRunLimit, want-skipped)
			p, err := s.db.ListRuns(ctx, f)
			if err != nil {
				return "", 0, err
			}
			skipped += len(p.Runs)
			f.Before = p.Next
		}
		return f.Before, skipped, nil
	}
	type pair struct{ small, large string }
	cursors := map[int]pair{}
	for i, q := range all {
		cs, ds, err := cursor(small, q)
		if err != nil {
			return err
		}
		cl, dl, err := cursor(large, q)
		if err != nil {
			return err
		}
		cursors[i] = pair{cs, cl}
		if q.deep {
			fmt.Printf("  deep page %s: %d rows deep with %d runs, %d rows deep with %d runs\n", q.name, ds, small.n, dl, large.n)
		}
	}

	list := func(s *side, q query, before string) (time.Duration, error) {
		f := q.filter
		f.Before = before
		start := time.Now()
		p, err := s.db.ListRuns(ctx, f)
		d := time.Since(start)
		if err == nil && len(p.Runs) != store.DefaultRunLimit {
			err = fmt.Errorf("%s: %d runs on the page", q.name, len(p.Runs))
		}
		return d, err
	}
	page := func(s *side, q query, before string) (time.Duration, error) {
		v := url.Values{}
		if q.filter.Status != "" {
			v.Set("status", string(q.filter.Status))
		}
		if q.filter.InitiatedBy != "" {
			v.Set("initiator", q.filter.InitiatedBy)
		}
		if before != "" {
			v.Set("before", before)
		}
		req := httptest.NewRequest(http.MethodGet, "/runs?"+v.Encode(), nil)
		req.Header.Set("Cookie", s.cookie)
		rec := httptest.NewRecorder()
		start := time.Now()
		s.h.ServeHTTP(rec, req)
		d := time.Since(start)
		if rec.Code != http.StatusOK {
			return d, fmt.Errorf("GET /runs?%s: %d", v.Encode(), rec.Code)
		}
		return d, nil
	}

	for _, layer := range []struct {
		name    string
		samples int
		fn      func(*side, query, string) (time.Duration, error)
	}{{"store.ListRuns", storeN, list}, {"GET /runs", webN, page}} {
		kit.Section("%s: %d vs %d runs, %d rounds of %d samples each", layer.name, small.n, large.n, rounds, layer.samples)
		var prof *os.File
		if cpuprofile != "" && layer.name == "GET /runs" {
			if prof, err = os.Create(cpuprofile); err != nil {
				return err
			}
			if err := pprof.StartCPUProfile(prof); err != nil {
				return err
			}
		}
		for i, q := range all {
			c := cursors[i]
			// Warm both sides.
			if _, err := layer.fn(small, q, c.small); err != nil {
				return err
			}
			if _, err := layer.fn(large, q, c.large); err != nil {
				return err
			}
			var sm, lg, ratio []float64
			for r := 0; r < rounds; r++ {
				var ds, dl []time.Duration
				for k := 0; k < layer.samples; k++ {
					a, err := layer.fn(small, q, c.small)
					if err != nil {
						return err
					}
					b, err := layer.fn(large, q, c.large)
					if err != nil {
						return err
					}
					ds, dl = append(ds, a), append(dl, b)
				}
				p50s, p50l := kit.Quantile(ds, 0.5), kit.Quantile(dl, 0.5)
				sm, lg = append(sm, kit.Ms(p50s)), append(lg, kit.Ms(p50l))
				ratio = append(ratio, float64(p50l)/float64(p50s))
			}
			where := "first page"
			if q.deep {
				where = "deep page"
			}
			name := fmt.Sprintf("%s %s %s", layer.name, where, q.name)
			rep.Add(fmt.Sprintf("%s, %d runs (p50)", name, small.n), kit.Median(sm), "ms")
			rep.Add(fmt.Sprintf("%s, %d runs (p50)", name, large.n), kit.Median(lg), "ms")
			rep.Check(fmt.Sprintf("%s ratio", name), kit.Median(ratio), 1.5, "x")
		}
		if prof != nil {
			pprof.StopCPUProfile()
			prof.Close()
		}
	}

	kit.Section("what the history page counts")
	for _, q := range queries {
		var ds []time.Duration
		for k := 0; k < 5; k++ {
			start := time.Now()
			if _, err := large.db.CountRuns(ctx, q.filter); err != nil {
				return err
			}
			ds = append(ds, time.Since(start))
		}
		rep.Add(fmt.Sprintf("store.CountRuns %s, %d runs (median of 5)", q.name, large.n), kit.Ms(kit.Quantile(ds, 0.5)), "ms")
	}
	return rep.Write(out)
}
