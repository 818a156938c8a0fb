// Command rss measures what runs waiting for approval cost the real server
// binary: its resident memory with 0 and with 100,000 waiting runs in the
// database (goal: within 10 MB), the latency of a decision on one of them,
// and what a poll and the inbox cost with each.
//
// The waiting runs are clones of one real suspension: a run of the editor
// agent ("Update the pricing page …") is driven by the runtime, in process,
// until it waits for approval on update_page; its row, state and six events
// are then copied 100,000 times straight into SQLite. Both databases also
// hold one running run of 10 steps (held by a worker whose lease does not
// expire) to poll.
//
// The servers are started alternately, -rounds times each, and each gets the
// same requests before its memory is read: sign-in, then -warm rounds of
// the playground, the inbox, the history, the inbox badge and a poll.
// Memory is read twice: right after sign-in (idle) and after those
// requests. Decisions come last: on runs the server itself started and
// suspended (both databases) and, with 100,000 waiting, on seeded ones.
//
//	go run ./bench/rss -bin bin/countersign
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"countersign/bench/internal/kit"
	"countersign/engine"
	"countersign/engine/models/demo"
	"countersign/engine/tools"
	"countersign/store"
)

func main() {
	bin := flag.String("bin", "bin/countersign", "the countersign binary")
	waiting := flag.Int("waiting", 100_000, "waiting runs in the full database")
	rounds := flag.Int("rounds", 3, "starts of each server")
	warm := flag.Int("warm", 20, "rounds of requests before memory is read")
	decisions := flag.Int("decisions", 10, "decisions measured on each kind of run")
	out := flag.String("out", "", "folder for the results JSON")
	flag.Parse()
	if err := run(*bin, *waiting, *rounds, *warm, *decisions, *out); err != nil {
		fmt.Fprintln(os.Stderr, "rss:", err)
		os.Exit(1)
	}
}

func run(bin string, waiting, rounds, warm, decisions int, out string) error {
	tmp, err := os.MkdirTemp("", "countersign-rss-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	rep := kit.NewReport("rss")

	kit.Section("preparing a database with 0 and one with %d waiting runs", waiting)
	tmpl, err := realSuspension(filepath.Join(tmp, "template.db"))
	if err != nil {
		return err
	}
	fmt.Printf("  one real suspension: %d events, state %d bytes, digest %s…\n", len(tmpl.Payloads), len(tmpl.State), tmpl.Digest[:12])
	dbs := map[string]string{"0": filepath.Join(tmp, "zero.db"), "full": filepath.Join(tmp, "full.db")}
	polled := map[string]string{}
	var seeded []string
	for key, path := range dbs {
		s, err := kit.OpenSeeder(path)
		if err != nil {
			return err
		}
		now := time.Now().UTC()
		if key == "full" {
			start := time.Now()
			first := now.Add(-72 * time.Hour)
			step := 72 * time.Hour / time.Duration(waiting)
			seeded, err = s.Insert(waiting, 10_000, func(i int) kit.Row {
				return kit.Row{T: tmpl, Status: engine.StatusWaiting, InitiatedBy: fmt.Sprintf("user%02d", i%kit.Initiators),
					CreatedAt: first.Add(time.Duration(i) * step)}
			})
			if err != nil {
				return err
			}
			rep.Add(fmt.Sprintf("seed %d waiting runs", waiting), time.Since(start).Seconds(), "s")
		}
		ids, err := s.Insert(1, 1, func(int) kit.Row {
			return kit.Row{T: kit.RunningTemplate(now, 10), Status: engine.StatusRunning, InitiatedBy: "admin",
				CreatedAt: now, ClaimedBy: "bench-worker", LeaseUntil: now.Add(24 * time.Hour)}
		})
		if err != nil {
			return err
		}
		polled[key] = ids[0]
		if err := s.Close(); err != nil {
			return err
		}
	}

	passwords := map[string]string{}
	type mem struct{ idle, warm, peak []float64 }
	mems := map[string]*mem{"0": {}, "full": {}}
	polls := map[string][]time.Duration{}
	inbox := map[string][]time.Duration{}
	freshDecide := map[string][]time.Duration{}
	var seededDecide []time.Duration
	for r := 0; r < rounds; r++ {
		for _, key := range []string{"0", "full"} {
			srv, err := kit.StartServer(bin, dbs[key], nil, nil)
			if err != nil {
				return err
			}
			if srv.Password != "" {
				passwords[key] = srv.Password
			}
			c := kit.NewClient(srv.URL, 4)
			if err := c.Login("admin", passwords[key]); err != nil {
				srv.Stop()
				return err
			}
			time.Sleep(time.Second)
			idle, _, _ := srv.RSS()
			for w := 0; w < warm; w++ {
				for _, p := range []string{"/runs/new", "/inbox", "/runs", "/inbox/count"} {
					status, _, d, err := c.Get(p, false)
					if err == nil && status != http.StatusOK {
						err = fmt.Errorf("GET %s: %d", p, status)
					}
					if err != nil {
						srv.Stop()
						return err
					}
					if p == "/inbox" {
						inbox[key] = append(inbox[key], d)
					}
				}
				for k := 0; k < 5; k++ {
					status, _, d, err := c.Get("/runs/"+polled[key]+"/steps?after=10", true)
					if err == nil && status != http.StatusOK {
						err = fmt.Errorf("poll: %d", status)
					}
					if err != nil {
						srv.Stop()
						return err
					}
					polls[key] = append(polls[key], d)
				}
			}
			time.Sleep(time.Second)
			warmRSS, peak, _ := srv.RSS()
			m := mems[key]
			m.idle, m.warm, m.peak = append(m.idle, mb(idle)), append(m.warm, mb(warmRSS)), append(m.peak, mb(peak))
			fmt.Printf("  round %d, %s waiting: RSS %.1f MB idle, %.1f MB after the requests (peak %.1f MB)\n", r+1, key, mb(idle), mb(warmRSS), mb(peak))

			if r == rounds-1 {
				ds, err := decideFresh(c, decisions)
				if err != nil {
					srv.Stop()
					return err
				}
				freshDecide[key] = ds
				if key == "full" {
					for i := 0; i < decisions; i++ {
						id := seeded[(i*7919)%len(seeded)]
						d, err := decide(c, id, tmpl.Digest)
						if err != nil {
							srv.Stop()
							return err
						}
						seededDecide = append(seededDecide, d)
					}
				}
			}
			srv.Stop()
		}
	}

	kit.Section("results")
	z, f := mems["0"], mems["full"]
	rep.Add("RSS idle after sign-in, 0 waiting (median of starts)", kit.Median(z.idle), "MB")
	rep.Add(fmt.Sprintf("RSS idle after sign-in, %d waiting", waiting), kit.Median(f.idle), "MB")
	rep.Add("RSS after the requests, 0 waiting", kit.Median(z.warm), "MB")
	rep.Add(fmt.Sprintf("RSS after the requests, %d waiting", waiting), kit.Median(f.warm), "MB")
	rep.Add("peak RSS, 0 waiting", kit.Median(z.peak), "MB")
	rep.Add(fmt.Sprintf("peak RSS, %d waiting", waiting), kit.Median(f.peak), "MB")
	rep.Check("RSS difference idle after sign-in", kit.Median(f.idle)-kit.Median(z.idle), 10, "MB")
	rep.Check("RSS difference after the same requests", kit.Median(f.warm)-kit.Median(z.warm), 10, "MB")
	for _, key := range []string{"0", "full"} {
		label := "0 waiting"
		if key == "full" {
			label = fmt.Sprintf("%d waiting", waiting)
		}
		rep.Add("decision POST /tool/resume p50, fresh run, "+label, kit.Ms(kit.Quantile(freshDecide[key], 0.5)), "ms")
		rep.Add("decision POST /tool/resume max, fresh run, "+label, kit.Ms(kit.Quantile(freshDecide[key], 1)), "ms")
		rep.Add("poll p50, "+label, kit.Ms(kit.Quantile(polls[key], 0.5)), "ms")
		rep.Add("inbox page p50, "+label, kit.Ms(kit.Quantile(inbox[key], 0.5)), "ms")
	}
	rep.Add(fmt.Sprintf("decision POST /tool/resume p50, one of the %d seeded", waiting), kit.Ms(kit.Quantile(seededDecide, 0.5)), "ms")
	rep.Add(fmt.Sprintf("decision POST /tool/resume max, one of the %d seeded", waiting), kit.Ms(kit.Quantile(seededDecide, 1)), "ms")
	rep.Add("poll p50 ratio full / 0 waiting", float64(kit.Quantile(polls["full"], 0.5))/float64(kit.Quantile(polls["0"], 0.5)), "x")
	return rep.Write(out)
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

var reDigest = regexp.MustCompile(`name="digest" value="([0-9a-f]+)"`)

// decideFresh starts n runs through the playground form, waits until each
// waits for approval, and approves each, timing the POST /tool/resume.
func decideFresh(c *kit.Client, n int) ([]time.Duration, error) {
	var ids []string
	for i := 0; i < n; i++ {
		prompt := fmt.Sprintf("Update the pricing page to say the Team plan now costs $%d per seat.", 200+i)
		_, loc, _, err := c.Post("/runs", url.Values{"agent": {"editor"}, "model": {demo.Name}, "prompt": {prompt}})
		if err != nil {
			return nil, err
		}
		ids = append(ids, strings.TrimPrefix(loc, "/runs/"))
	}
	var ds []time.Duration
	for _, id := range ids {
		digest, err := waitDigest(c, id)
		if err != nil {
			return nil, err
		}
		d, err := decide(c, id, digest)
		if err != nil {
			return nil, err
		}
		ds = append(ds, d)
	}
	return ds, nil
}

func waitDigest(c *kit.Client, id string) (string, error) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		_, body, _, err := c.Get("/runs/"+id, false)
		if err != nil {
			return "", err
		}
		if m := reDigest.FindStringSubmatch(body); m != nil {
			return m[1], nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "", fmt.Errorf("run %s did not wait for approval", id)
}

// decide approves the pending turn of run id and returns how long the POST
// took (the claim is committed when it answers).
func decide(c *kit.Client, id, digest string) (time.Duration, error) {
	status, _, d, err := c.Post("/tool/resume", url.Values{"run_id": {id}, "digest": {digest}, "decision": {"approve"}, "reason": {"bench"}})
	if err != nil {
		return 0, err
	}
	if status != http.StatusSeeOther {
		return 0, fmt.Errorf("decide %s: %d", id, status)
	}
	return d, nil
}

// realSuspension drives one run of the editor agent with the runtime until
// it waits for approval and returns it as a template: its state, digest and
// events as the store wrote them.
func realSuspension(path string) (*kit.Template, error) {
	ctx := context.Background()
	db, err := store.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if _, err := db.Pages().SeedPages(ctx, tools.SeedPages()); err != nil {
		return nil, err
	}
	_, rt, err := kit.App(db)
	if err != nil {
		return nil, err
	}
	rt.Start()
	const prompt = "Update the pricing page to say the Team plan now costs $12 per seat."
	run, err := rt.StartRun(ctx, engine.NewRun{Agent: "editor", Model: demo.Name, Prompt: prompt, InitiatedBy: "user00"})
	if err != nil {
		rt.Close()
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := db.Run(ctx, run.ID)
		if err != nil {
			rt.Close()
			return nil, err
		}
		if r.Status == engine.StatusWaiting {
			run = r
			break
		}
		if time.Now().After(deadline) || r.Status.Terminal() {
			rt.Close()
			return nil, fmt.Errorf("the template run is %s", r.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	rt.Close()
	sus, err := db.SuspendedState(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	evs, err := db.Events(ctx, run.ID, 0, 0)
	if err != nil {
		return nil, err
	}
	t := &kit.Template{Agent: run.Agent, Model: run.Model, Prompt: run.Prompt, State: sus.State, Digest: sus.Digest,
		Iterations: run.Iterations, Usage: run.Usage}
	for _, e := range evs {
		p, err := kit.EncodeEvent(e.Event)
		if err != nil {
			return nil, err
		}
		t.Kinds, t.Payloads = append(t.Kinds, string(e.Event.Kind)), append(t.Payloads, p)
	}
	return t, nil
}
