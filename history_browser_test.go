package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"countersign/engine"
	"countersign/store"
)

// seedHistoryRuns stores ended runs with what makes a history row wide: long
// prompts (one with a long unbroken word), long outcome labels, two
// deciders, a long model name. It goes through the store before the server
// starts: each run is created queued and then acquired by the seeder, and a
// running server's reaper could take a queued run in between.
func seedHistoryRuns(t *testing.T, dbPath string) int {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	call := &engine.ToolCall{ID: "c1", Name: "publish_page", Arguments: `{"slug":"pricing"}`}
	started := engine.Event{Kind: engine.EventToolStarted, Call: call, Write: true}
	failed := engine.Event{Kind: engine.EventToolFinished, Call: call, Write: true, IsError: true, Result: "boom", Outcome: engine.OutcomeToolError}
	denied := engine.Event{Kind: engine.EventToolFinished, Call: call, Write: true, IsError: true, Outcome: engine.OutcomeDenied}
	expired := engine.Event{Kind: engine.EventToolFinished, Call: call, Write: true, IsError: true, Outcome: engine.OutcomeExpired}
	prompts := []string{
		"Update the pricing page to say the Team plan now costs $12 per seat, and make sure the FAQ and the release notes say the same thing everywhere they mention the price of a seat.",
		"Publish the about page.",
		"Check https://example.com/a/very/long/address/that/does/not/break/anywhere/at/all/because/it/has/no/spaces/whatsoever/in/it",
		strings.Repeat("Rewrite every page about the winter sale so it reads well. ", 6),
	}
	base := time.Now().Add(-3 * time.Hour)
	n := 0
	for i := range 12 {
		at := base.Add(time.Duration(i) * 7 * time.Minute)
		agent, model := "editor", "demo"
		if i%3 == 1 {
			agent, model = "editor-4eyes", "openai/gpt-4o-mini-2024-07-18"
		}
		r, err := db.CreateRun(ctx, engine.NewRun{Agent: agent, Model: model, Prompt: prompts[i%len(prompts)], InitiatedBy: "admin"},
			engine.Event{Kind: engine.EventPrompt, Text: prompts[i%len(prompts)]}, at)
		if err != nil {
			t.Fatal(err)
		}
		now := at.Add(time.Second)
		if _, err := db.AcquireRun(ctx, r.ID, "seed", now, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		decide := func(by string, v engine.Verdict) {
			now = now.Add(time.Second)
			d := fmt.Sprintf("d%d", now.UnixMilli())
			if err := db.SuspendRun(ctx, r.ID, "seed", engine.Suspend{Suspension: engine.Suspension{State: []byte("{}"), Digest: d},
				Event: engine.Event{Kind: engine.EventSuspended, Digest: d}, Now: now}); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ClaimRun(ctx, r.ID, engine.Claim{Digest: d, Owner: "seed", LeaseUntil: now.Add(time.Hour), Now: now,
				Event: engine.Event{Kind: engine.EventDecision, By: by, Decision: v, Digest: d}}); err != nil {
				t.Fatal(err)
			}
		}
		appendEv := func(ev engine.Event) {
			if _, _, err := db.AppendEvent(ctx, r.ID, "seed", ev, now.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		fin := engine.Finish{Status: engine.StatusCompleted, Termination: engine.TermCompleted,
			Event: engine.Event{Kind: engine.EventFinished, Text: "done"}}
		switch i % 4 {
		case 0:
			decide("administrator-on-call", engine.VerdictDeny)
			appendEv(denied)
			decide("operator.two", engine.VerdictApprove)
			appendEv(started)
			appendEv(failed)
			appendEv(started)
			appendEv(failed)
			decide(engine.ExpiredBy, engine.VerdictExpire)
			appendEv(expired)
		case 1:
			decide("admin", engine.VerdictApprove)
			appendEv(started)
			fin = engine.Finish{Status: engine.StatusFailed, Termination: engine.TermInterrupted, Error: "interrupted",
				Event: engine.Event{Kind: engine.EventFailed, Termination: engine.TermInterrupted, Error: "interrupted"}}
		case 2:
			decide("admin", engine.VerdictApprove)
			appendEv(started)
			appendEv(engine.Event{Kind: engine.EventToolFinished, Call: call, Write: true, Result: "ok", Outcome: engine.OutcomeOK})
		}
		fin.Now = now.Add(83 * time.Second)
		if err := db.FinishRun(ctx, r.ID, "seed", fin); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// TestHistoryFitsTheScreen: the history of a dozen wide runs fits 1024 and
// 1280 pixels without scrolling sideways (neither the page nor the table),
// with the prompt as its widest column, clamped to two lines; on a phone it
// is a list of labelled cards that fits too.
func TestHistoryFitsTheScreen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "countersign.db")
	runs := seedHistoryRuns(t, path)
	srv := startServer(t, path)
	if srv.Password == "" {
		t.Fatal("no admin password logged")
	}

	b := newBrowser(t)
	b.signIn(srv.URL, "admin", srv.Password)
	for _, size := range [][2]int64{{1024, 768}, {1280, 800}} {
		b.do(fmt.Sprintf("set the viewport to %dx%d", size[0], size[1]), chromedp.EmulateViewport(size[0], size[1]))
		b.navigate(srv.URL + "/runs")
		if got := b.count(`[data-testid=run-row]`); got != runs {
			t.Fatalf("%d px: %d rows, want %d", size[0], got, runs)
		}
		if sw, iw := eval[int](b, `document.documentElement.scrollWidth`), eval[int](b, `window.innerWidth`); sw > iw {
			t.Errorf("%d px: the page scrolls sideways: scrollWidth %d > innerWidth %d", size[0], sw, iw)
		}
		if sw, cw := eval[int](b, `document.querySelector(".table-wrap").scrollWidth`), eval[int](b, `document.querySelector(".table-wrap").clientWidth`); sw > cw {
			t.Errorf("%d px: the table scrolls sideways: scrollWidth %d > clientWidth %d", size[0], sw, cw)
		}
		widths := eval[map[string]float64](b, `Object.fromEntries(Array.from(
			document.querySelectorAll("[data-testid=history] thead th"), th => [th.textContent.trim(), th.getBoundingClientRect().width]))`)
		prompt := widths["Prompt"]
		for name, w := range widths {
			if name != "Prompt" && w >= prompt {
				t.Errorf("%d px: column %q is %.0f px wide, the prompt only %.0f: %v", size[0], name, w, prompt, widths)
			}
		}
		// Clamped to two lines, the whole prompt in the title.
		tall := eval[int](b, `Array.from(document.querySelectorAll("[data-testid=run-link]")).filter(a =>
			a.getBoundingClientRect().height > 2.6 * parseFloat(getComputedStyle(a).lineHeight)).length`)
		if tall != 0 {
			t.Errorf("%d px: %d prompts take more than two lines", size[0], tall)
		}
		if n := b.count(`[data-testid=run-link][title^="Update the pricing page to say the Team plan now costs $12 per seat, and make sure"]`); n == 0 {
			t.Errorf("%d px: no prompt carries its full text in its title", size[0])
		}
		// The outcome is readable, not cut: the badge fits in its cell.
		cut := eval[int](b, `Array.from(document.querySelectorAll("[data-testid=row-status]")).filter(s =>
			s.scrollWidth > s.clientWidth + 1 || s.getBoundingClientRect().right > s.closest("td").getBoundingClientRect().right + 1).length`)
		if cut != 0 {
			t.Errorf("%d px: %d outcome badges overflow", size[0], cut)
		}
	}

	b.do("set a phone's viewport", chromedp.EmulateViewport(390, 844))
	b.navigate(srv.URL + "/runs")
	if sw, iw := eval[int](b, `document.documentElement.scrollWidth`), eval[int](b, `window.innerWidth`); sw > iw {
		t.Errorf("390 px: the page scrolls sideways: scrollWidth %d > innerWidth %d", sw, iw)
	}
	if got := eval[string](b, `getComputedStyle(document.querySelector("[data-testid=history] thead")).display`); got != "none" {
		t.Errorf("390 px: the table head shows (%s); want labelled cards", got)
	}
	if got := eval[string](b, `getComputedStyle(document.querySelector("[data-testid=row-deciders]"), "::before").content`); got != `"Decided by"` {
		t.Errorf("390 px: the deciders cell is labelled %s", got)
	}
}
