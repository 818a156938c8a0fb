package web_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"countersign/engine"
)

// pollOf checks the parts every poll answer has: the header out of band,
// the inbox badge out of band, and the poller. It returns the steps' seqs
// and the poller's hx-get ("" when it stopped). The card's place comes only
// when it changes (see TestWaitingPoll).
func pollOf(t *testing.T, res *response, status string) (seqs []int64, next string) {
	t.Helper()
	mustStatus(t, res, http.StatusOK)
	d := res.doc
	if d.Find("nav").Length() != 0 {
		t.Error("a poll got a whole page")
	}
	h := d.Find(`#run-header[hx-swap-oob="outerHTML"]`)
	if h.Length() != 1 || h.AttrOr("data-status", "") != status {
		t.Errorf("out-of-band header with status %q, want %q", h.AttrOr("data-status", ""), status)
	}
	if d.Find(`#inbox-badge[hx-swap-oob="outerHTML"]`).Length() != 1 {
		t.Error("no out-of-band inbox badge")
	}
	p := d.Find(`#poller`)
	if p.Length() != 1 {
		t.Fatalf("no poller:\n%s", res.body)
	}
	if _, oob := p.Attr("hx-swap-oob"); oob {
		t.Error("the poller replaces the one that asked; it is not out of band")
	}
	next, _ = p.Attr("hx-get")
	steps := d.Find(`ol[hx-swap-oob="beforeend:#steps"]`)
	if n := d.Find(`li` + testid("step")).Length(); n > 0 && steps.Length() != 1 {
		t.Error("steps are not appended to #steps")
	}
	return stepSeqs(t, d.Selection), next
}

// TestPolling: GET /runs/{id}/steps?after=N returns the steps after N only,
// and a poller that goes on while the run is queued or running and stops
// when it waits or ends.
func TestPolling(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	ctx := context.Background()
	vera := a.as(veraName)
	r := a.createRun("editor", "Append steps by hand.", olgaName, time.Now())
	base := "/runs/" + r.ID + "/steps?after="

	// Queued: the page polls from its last step.
	page := vera.get("/runs/" + r.ID)
	if got := attr(page.doc, testid("poller"), "hx-get"); got != base+"1" {
		t.Errorf("queued run page polls %q, want %q", got, base+"1")
	}
	seqs, next := pollOf(t, vera.get(base+"0", htmx()), "queued")
	if !slices.Equal(seqs, []int64{1}) || next != base+"1" {
		t.Errorf("queued after=0: seqs %v, next %q", seqs, next)
	}
	seqs, next = pollOf(t, vera.get(base+"1", htmx()), "queued")
	if len(seqs) != 0 || next != base+"1" {
		t.Errorf("queued after=1: seqs %v, next %q", seqs, next)
	}

	// Running: new steps come, and only those.
	const owner = "test-worker"
	if _, err := a.db.AcquireRun(ctx, r.ID, owner, time.Now(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, _, err := a.db.AppendEvent(ctx, r.ID, owner, engine.Event{Kind: engine.EventModelTurn, Text: "turn " + strconv.Itoa(i)},
			time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	seqs, next = pollOf(t, vera.get(base+"1", htmx()), "running")
	if !slices.Equal(seqs, []int64{2, 3, 4}) || next != base+"4" {
		t.Errorf("running after=1: seqs %v, next %q", seqs, next)
	}
	seqs, next = pollOf(t, vera.get(base+"3", htmx()), "running")
	if !slices.Equal(seqs, []int64{4}) || next != base+"4" {
		t.Errorf("running after=3: seqs %v, next %q", seqs, next)
	}

	// Ended: the last step comes and polling stops.
	if err := a.db.FinishRun(ctx, r.ID, owner, engine.Finish{Status: engine.StatusCompleted, Termination: engine.TermCompleted,
		Now: time.Now(), Event: engine.Event{Kind: engine.EventFinished, Text: "done"}}); err != nil {
		t.Fatal(err)
	}
	res := vera.get(base+"4", htmx())
	seqs, next = pollOf(t, res, "completed")
	if !slices.Equal(seqs, []int64{5}) || next != "" {
		t.Errorf("completed after=4: seqs %v, next %q", seqs, next)
	}
	if got := text(res.doc, testid("final-answer")); got != "done" {
		t.Errorf("final answer %q", got)
	}
	if got := attr(res.doc, "#run-header", "data-terminal"); got != "true" {
		t.Errorf("header data-terminal %q", got)
	}
	if _, ok := vera.get("/runs/" + r.ID).doc.Find(testid("poller")).Attr("hx-get"); ok {
		t.Error("the page of an ended run polls")
	}

	t.Run("waiting slows polling and brings the card", func(t *testing.T) {
		a, vera := a.with(t), vera.with(t)
		w := a.waitingRun("editor", publishAbout, olgaName)
		res := vera.get("/runs/"+w.ID+"/steps?after=0", htmx())
		seqs, next := pollOf(t, res, "waiting_for_approval")
		if want := "/runs/" + w.ID + "/steps?after=3&turn=" + w.PendingDigest; !slices.Equal(seqs, []int64{1, 2, 3}) || next != want {
			t.Errorf("waiting after=0: seqs %v, next %q, want the slow poll %q", seqs, next, want)
		}
		if got := attr(res.doc, "#poller", "hx-trigger"); got != "every 2s" {
			t.Errorf("a waiting run polls %q, want every 2s", got)
		}
		if got := stepKinds(res.doc.Selection); !slices.Equal(got, []string{"prompt", "model_turn", "suspended"}) {
			t.Errorf("kinds %v", got)
		}
		if res.doc.Find(`#approval-card[hx-swap-oob]`+testid("approval-card")).Length() != 1 {
			t.Error("the card does not come with the poll")
		}
		if got := text(res.doc, testid("inbox-badge")); got != "1" {
			t.Errorf("badge %q, want 1", got)
		}
	})

	t.Run("bad after", func(t *testing.T) {
		vera := vera.with(t)
		for _, after := range []string{"abc", "-1", "", "1.5", "99999999999999999999"} {
			res := vera.get("/runs/"+r.ID+"/steps?after="+after, htmx())
			mustCleanError(t, res, http.StatusBadRequest)
		}
		mustCleanError(t, vera.get("/runs/"+r.ID+"/steps?after=abc"), http.StatusBadRequest)
		mustCleanError(t, vera.get("/runs/01JNOSUCHRUN000000000000000/steps?after=0"), http.StatusNotFound)
	})

	t.Run("1,000 steps: the tail only", func(t *testing.T) {
		a, vera := a.with(t), vera.with(t)
		long := a.createRun("editor", "A long run.", olgaName, time.Now())
		if _, err := a.db.AcquireRun(ctx, long.ID, owner, time.Now(), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		for i := range 1000 {
			if _, _, err := a.db.AppendEvent(ctx, long.ID, owner, engine.Event{Kind: engine.EventModelTurn,
				Text: "turn " + strconv.Itoa(i)}, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.db.FinishRun(ctx, long.ID, owner, engine.Finish{Status: engine.StatusCompleted,
			Termination: engine.TermCompleted, Now: time.Now(), Event: engine.Event{Kind: engine.EventFinished, Text: "done"}}); err != nil {
			t.Fatal(err)
		}
		const n = 1002 // prompt, 1,000 turns, finished
		base := "/runs/" + long.ID + "/steps?after="
		seqs, next := pollOf(t, vera.get(base+strconv.Itoa(n-2), htmx()), "completed")
		if !slices.Equal(seqs, []int64{n - 1, n}) || next != "" {
			t.Errorf("after=%d: seqs %v, next %q", n-2, seqs, next)
		}
		seqs, next = pollOf(t, vera.get(base+strconv.Itoa(n), htmx()), "completed")
		if len(seqs) != 0 || next != "" {
			t.Errorf("after=%d: seqs %v, next %q", n, seqs, next)
		}
		// From the start a poll sends one page and asks for the rest.
		seqs, next = pollOf(t, vera.get(base+"0", htmx()), "completed")
		if len(seqs) != 500 || seqs[0] != 1 || seqs[499] != 500 || next != base+"500" {
			t.Errorf("after=0: %d steps, next %q", len(seqs), next)
		}
		page := vera.get("/runs/" + long.ID)
		if got := page.doc.Find("#steps " + `li` + testid("step")).Length(); got != n {
			t.Errorf("run page shows %d steps, want %d", got, n)
		}
	})
}
