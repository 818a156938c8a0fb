package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"countersign/engine"
	"countersign/store"
)

// rawPost posts a form from a goroutine: no testing.T involved.
func rawPost(hc *http.Client, u string, form url.Values) (int, string, error) {
	resp, err := hc.PostForm(u, form)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func rawGet(hc *http.Client, u string) (int, string, error) {
	resp, err := hc.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestHundredConcurrentDecisions sends 100 decisions on one waiting turn at
// once, from 100 operators, approving and denying: exactly one wins, one
// decision event is written, the write runs at most once, and the other 99
// are told 409 who decided.
func TestHundredConcurrentDecisions(t *testing.T) {
	a := newTestApp(t)
	run := a.waitingRun("editor", publishAbout, "olga")
	const n = 100
	clients := make([]*client, n)
	forms := make([]url.Values, n)
	for i := range clients {
		name := fmt.Sprintf("op%03d", i)
		a.addUser(name, store.RoleOperator)
		clients[i] = a.as(name)
		page := clients[i].get("/runs/" + run.ID)
		digest := page.doc.Find(`#approval-card input[name="digest"]`).AttrOr("value", "")
		if digest != run.PendingDigest {
			t.Fatalf("card digest %q, want %q", digest, run.PendingDigest)
		}
		decision := "approve"
		if i%2 == 1 {
			decision = "deny"
		}
		forms[i] = url.Values{"_csrf": {clients[i].csrf}, "run_id": {run.ID}, "digest": {digest},
			"decision": {decision}, "reason": {"from " + name}}
	}

	codes := make([]int, n)
	bodies := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range clients {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-gate
			codes[i], bodies[i], errs[i] = rawPost(clients[i].http, a.srv.URL+"/tool/resume", forms[i])
		}(i)
	}
	close(gate)
	wg.Wait()

	won, conflicts := -1, 0
	for i := range codes {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		switch codes[i] {
		case http.StatusSeeOther:
			if won >= 0 {
				t.Fatalf("two decisions won: %d and %d", won, i)
			}
			won = i
		case http.StatusConflict:
			conflicts++
			if !strings.Contains(bodies[i], "Already decided") && !strings.Contains(bodies[i], "already decided") {
				t.Fatalf("409 does not say the turn was already decided:\n%s", clip(bodies[i], 1500))
			}
		default:
			t.Fatalf("request %d: status %d\n%s", i, codes[i], clip(bodies[i], 1500))
		}
	}
	if won < 0 || conflicts != n-1 {
		t.Fatalf("won=%d conflicts=%d", won, conflicts)
	}
	final := a.waitTerminal(run.ID)
	evs, err := a.db.Events(context.Background(), run.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	decisions := 0
	for _, ev := range evs {
		if ev.Event.Kind == engine.EventDecision {
			decisions++
			if ev.Event.By != fmt.Sprintf("op%03d", won) {
				t.Fatalf("decision event by %s, but op%03d won", ev.Event.By, won)
			}
		}
	}
	revisions, err := a.db.Pages().Revisions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wantWrites := 1 - won%2 // even clients approved
	if decisions != 1 || revisions != wantWrites || final.Status != engine.StatusCompleted {
		t.Fatalf("decisions=%d writes=%d (want %d) status=%s", decisions, revisions, wantWrites, final.Status)
	}
}

// pollResult is what one poller saw of one run.
type pollResult struct {
	id   string
	seqs []int64
	err  error
}

// TestManyRunsWithPollers starts 200 runs at once over HTTP, each followed by
// a poller that approves whatever waits, and checks that every run settles,
// the pollers saw every event exactly once, and no request failed (no
// "database is locked" reaches anyone).
func TestManyRunsWithPollers(t *testing.T) {
	a := newTestApp(t)
	const n = 200
	prompts := []struct{ agent, prompt string }{
		{"researcher", readOnlyPrompt}, {"editor", publishAbout}, {"researcher", "List all pages."},
		{"editor", "Check the word count of the release notes and publish them."},
	}
	ops := []*client{a.as("olga"), a.as("oscar"), a.as("admin")}
	results := make([]pollResult, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := ops[i%len(ops)]
			p := prompts[i%len(prompts)]
			<-gate
			results[i] = pollRun(a.srv.URL, c, p.agent, p.prompt)
		}(i)
	}
	close(gate)
	wg.Wait()

	for i, r := range results {
		if r.err != nil {
			t.Fatalf("run %d: %v", i, r.err)
		}
		run := a.run(r.id)
		if !run.Status.Terminal() {
			t.Fatalf("run %s did not settle: %s", r.id, run.Status)
		}
		if run.Status != engine.StatusCompleted {
			t.Fatalf("run %s %s: %s", r.id, run.Status, run.Error)
		}
		evs, err := a.db.Events(context.Background(), r.id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.seqs) != len(evs) {
			t.Fatalf("run %s: pollers saw %d steps, the store has %d", r.id, len(r.seqs), len(evs))
		}
		for j, s := range r.seqs {
			if s != int64(j+1) || evs[j].Seq != s {
				t.Fatalf("run %s: step %d has seq %d", r.id, j, s)
			}
		}
	}
	if strings.Contains(a.log.String(), "database is locked") {
		t.Fatal("the server logged 'database is locked'")
	}
}

// pollRun starts a run as c and polls it the way the run page does, from
// after=0, approving each waiting turn, until polling stops on a run that
// has ended. It returns every step seq it was sent, in order.
func pollRun(base string, c *client, agent, prompt string) pollResult {
	hc := c.http
	code, status, err := rawPostLocation(hc, base+"/runs", url.Values{"_csrf": {c.csrf}, "agent": {agent}, "model": {"demo"}, "prompt": {prompt}})
	if err != nil {
		return pollResult{err: err}
	}
	if !strings.HasPrefix(code, "/runs/") {
		return pollResult{err: fmt.Errorf("start run: status %d, location %q", status, code)}
	}
	r := pollResult{id: strings.TrimPrefix(code, "/runs/")}
	after := int64(0)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		status, body, err := rawGet(hc, fmt.Sprintf("%s/runs/%s/steps?after=%d", base, r.id, after))
		if err != nil || status != http.StatusOK {
			return pollResult{id: r.id, err: fmt.Errorf("poll: %d %v %s", status, err, clip(body, 500))}
		}
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		if err != nil {
			return pollResult{id: r.id, err: err}
		}
		doc.Find(`li[data-testid="step"]`).Each(func(_ int, s *goquery.Selection) {
			seq, _ := strconv.ParseInt(s.AttrOr("data-seq", ""), 10, 64)
			r.seqs = append(r.seqs, seq)
			after = seq
		})
		active := doc.Find(`#poller[hx-get]`).Length() > 0
		runStatus := doc.Find(`[data-testid="run-status"]`).AttrOr("data-status", "")
		if digest, ok := doc.Find(`#approval-card input[name="digest"]`).Attr("value"); ok && runStatus == "waiting_for_approval" {
			code, body, err := rawPost(hc, base+"/tool/resume", url.Values{"_csrf": {c.csrf}, "run_id": {r.id},
				"digest": {digest}, "decision": {"approve"}})
			if err != nil || code != http.StatusSeeOther {
				return pollResult{id: r.id, err: fmt.Errorf("approve: %d %v %s", code, err, clip(body, 500))}
			}
			continue
		}
		if !active && runStatus != "queued" && runStatus != "running" && runStatus != "waiting_for_approval" {
			return r
		}
		time.Sleep(25 * time.Millisecond)
	}
	return pollResult{id: r.id, err: fmt.Errorf("run %s did not settle", r.id)}
}

// rawPostLocation posts a form and returns the redirect location.
func rawPostLocation(hc *http.Client, u string, form url.Values) (string, int, error) {
	resp, err := hc.PostForm(u, form)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.Header.Get("Location"), resp.StatusCode, nil
}
