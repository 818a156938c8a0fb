package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"countersign/engine"
	"countersign/store"
)

// seen is what a run's outcome looks like on its page and in the history.
type seen struct {
	label, status, deciders string
}

// outcomeOnRunPage reads the outcome badge and deciders of the run page.
func outcomeOnRunPage(t *testing.T, c *client, id string) (seen, *response) {
	t.Helper()
	res := c.get("/runs/" + id)
	mustStatus(t, res, http.StatusOK)
	return seen{
		label:    text(res.doc, testid("run-status")),
		status:   attr(res.doc, testid("run-status"), "data-status"),
		deciders: text(res.doc, testid("run-deciders")),
	}, res
}

// historyRow finds the row of run id on the first page of the history at path.
func historyRow(t *testing.T, c *client, path, id string) *goquery.Selection {
	t.Helper()
	res := c.get(path)
	mustStatus(t, res, http.StatusOK)
	row := res.doc.Find(testid("run-row") + `[data-run-id="` + id + `"]`)
	if row.Length() != 1 {
		t.Fatalf("run %s is not on %s", id, path)
	}
	return row
}

// outcomeInHistory reads the outcome badge and deciders of run id's row.
func outcomeInHistory(t *testing.T, c *client, id string) seen {
	t.Helper()
	row := historyRow(t, c, "/runs", id)
	return seen{
		label:    strings.TrimSpace(row.Find(testid("row-status")).Text()),
		status:   row.Find(testid("row-status")).AttrOr("data-status", ""),
		deciders: strings.TrimSpace(row.Find(testid("row-deciders")).Text()),
	}
}

// TestOutcomesOfRealRuns: runs of the demo model that end clean, with a
// denied call, with a failed write, decided by two people, or with a write
// a rule let through, each show their outcome and deciders on the run page
// and in the history.
func TestOutcomesOfRealRuns(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	olga, oscar, vera := a.as(olgaName), a.as(oscarName), a.as(veraName)

	clean := a.waitingRun("editor", publishAbout, olgaName)
	mustRedirect(t, decide(t, olga, clean.ID, "approve", ""), "/runs/"+clean.ID)

	denied := a.waitingRun("editor", deleteOld, olgaName)
	mustRedirect(t, decide(t, oscar, denied.ID, "deny", "keep it"), "/runs/"+denied.ID)

	two := a.waitingRun("editor", "Create a page announcing the winter sale, then publish it.", olgaName)
	mustRedirect(t, decide(t, oscar, two.ID, "approve", ""), "/runs/"+two.ID)
	a.waitStatus(two.ID, engine.StatusWaiting)
	mustRedirect(t, decide(t, olga, two.ID, "approve", ""), "/runs/"+two.ID)
	a.waitStatus(two.ID, engine.StatusCompleted)

	// The page exists by now: the create is approved and fails.
	failed := a.waitingRun("editor", "Create a page announcing the winter sale.", olgaName)
	mustRedirect(t, decide(t, oscar, failed.ID, "approve", ""), "/runs/"+failed.ID)

	waived := a.startRun("editor-quick", "Check the word count of the release notes and publish them.", olgaName)

	want := map[string]seen{
		clean.ID:  {"completed", "completed", olgaName},
		denied.ID: {"completed · 1 denied", "completed", oscarName},
		failed.ID: {"completed · write failed", "completed", oscarName},
		two.ID:    {"completed", "completed", oscarName + ", " + olgaName},
		waived.ID: {"completed", "completed", ""},
	}
	for id, w := range want {
		a.waitStatus(id, engine.StatusCompleted)
		got, page := outcomeOnRunPage(t, vera, id)
		if got != w {
			t.Errorf("run page of %s: %+v, want %+v", a.run(id).Prompt, got, w)
		}
		if page.doc.Find(testid("run-termination")).Length() != 0 {
			t.Errorf("run page of %s repeats how it ended: %q", a.run(id).Prompt, text(page.doc, testid("run-termination")))
		}
		if got := outcomeInHistory(t, vera, id); got != w {
			t.Errorf("history row of %s: %+v, want %+v", a.run(id).Prompt, got, w)
		}
	}
	if got := a.run(waived.ID).Tally; got.Waived != 1 {
		t.Errorf("the rule's write is not counted as waived: %+v", got)
	}
	// A page a decision reached while it was open shows the deciders after
	// the poll too: the header fragment carries them.
	frag := vera.get("/runs/"+two.ID+"/steps?after=0", htmx())
	mustStatus(t, frag, http.StatusOK)
	if got := text(frag.doc, testid("run-deciders")); got != oscarName+", "+olgaName {
		t.Errorf("polled header deciders %q", got)
	}
}

// storedRun records a run straight through the store, as the runtime would
// have: created at at by olga, claimed, the events in order (a decision
// suspends the run first and is claimed), then finished with term (failed
// unless completed; left running when term is empty). It returns the run
// as stored.
func storedRun(t *testing.T, a *testApp, prompt string, at time.Time, term engine.Termination, evs ...engine.Event) engine.Run {
	t.Helper()
	ctx := context.Background()
	r := a.createRun("editor", prompt, olgaName, at)
	now := at
	tick := func() time.Time { now = now.Add(time.Second); return now }
	if _, err := a.db.AcquireRun(ctx, r.ID, "test-worker", tick(), now.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		ev.At = tick()
		if ev.Kind != engine.EventDecision {
			if _, _, err := a.db.AppendEvent(ctx, r.ID, "test-worker", ev, now.Add(24*time.Hour)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		digest := fmt.Sprintf("turn-%d", i)
		ev.Digest = digest
		if err := a.db.SuspendRun(ctx, r.ID, "test-worker", engine.Suspend{Suspension: engine.Suspension{State: []byte("{}"), Digest: digest},
			Event: engine.Event{Kind: engine.EventSuspended, Digest: digest}, Now: ev.At}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.db.ClaimRun(ctx, r.ID, engine.Claim{Digest: digest, Owner: "test-worker", LeaseUntil: ev.At.Add(24 * time.Hour),
			Now: ev.At, Event: ev}); err != nil {
			t.Fatal(err)
		}
	}
	if term != "" {
		f := engine.Finish{Status: engine.StatusFailed, Termination: term, Error: string(term), Now: tick(),
			Event: engine.Event{Kind: engine.EventFailed, Termination: term, Error: string(term)}}
		if term == engine.TermCompleted {
			f = engine.Finish{Status: engine.StatusCompleted, Termination: term, Now: f.Now,
				Event: engine.Event{Kind: engine.EventFinished, Termination: term, Text: "done"}}
		}
		if err := a.db.FinishRun(ctx, r.ID, "test-worker", f); err != nil {
			t.Fatal(err)
		}
	}
	return a.run(r.ID)
}

var (
	testCall   = &engine.ToolCall{ID: "c1", Name: "publish_page", Arguments: `{"slug":"about"}`}
	evStarted  = engine.Event{Kind: engine.EventToolStarted, Call: testCall, Write: true}
	evWaived   = engine.Event{Kind: engine.EventToolStarted, Call: testCall, Write: true, WaivedBy: "rule drafts"}
	evOK       = engine.Event{Kind: engine.EventToolFinished, Call: testCall, Write: true, Result: "ok", Outcome: engine.OutcomeOK}
	evFailed   = engine.Event{Kind: engine.EventToolFinished, Call: testCall, Write: true, IsError: true, Result: "boom", Outcome: engine.OutcomeToolError}
	evDenied   = engine.Event{Kind: engine.EventToolFinished, Call: testCall, Write: true, IsError: true, Outcome: engine.OutcomeDenied}
	evExpired  = engine.Event{Kind: engine.EventToolFinished, Call: testCall, Write: true, IsError: true, Outcome: engine.OutcomeExpired}
	evExpiry   = engine.Event{Kind: engine.EventDecision, Decision: engine.VerdictExpire, By: engine.ExpiredBy}
	approvedBy = func(by string) engine.Event {
		return engine.Event{Kind: engine.EventDecision, Decision: engine.VerdictApprove, By: by}
	}
	deniedBy = func(by string) engine.Event {
		return engine.Event{Kind: engine.EventDecision, Decision: engine.VerdictDeny, By: by}
	}
	cancelEvent = engine.Event{Kind: engine.EventFailed, Termination: engine.TermCancelled}
)

// TestOutcomesOfRareEnds: the terminations a demo run does not reach in a
// test (an expired turn, a run interrupted during a write, the iteration
// limit, a cancellation) show their outcome, and the header does not repeat
// how the run ended beside it.
func TestOutcomesOfRareEnds(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	vera := a.as(veraName)
	at := time.Now().Add(-time.Hour)
	expired := storedRun(t, a, "expired", at, engine.TermCompleted, evExpiry, evExpired)
	interrupted := storedRun(t, a, "interrupted", at.Add(time.Minute), engine.TermInterrupted, approvedBy(oscarName), evStarted)
	limit := storedRun(t, a, "limit", at.Add(2*time.Minute), engine.TermMaxIterations, approvedBy(olgaName), evStarted, evOK)
	both := storedRun(t, a, "both", at.Add(3*time.Minute), engine.TermCompleted,
		deniedBy(oscarName), evDenied, approvedBy(olgaName), evStarted, evFailed, approvedBy(oscarName), evStarted, evFailed)
	cancelled := a.createRun("editor", "cancelled", olgaName, at.Add(4*time.Minute))
	if _, err := a.db.RequestCancel(context.Background(), cancelled.ID, cancelEvent, at.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		id          string
		want        seen
		termination string
	}{
		{expired.ID, seen{"completed · 1 expired", "completed", ""}, ""},
		{interrupted.ID, seen{"failed · interrupted during a write", "failed", oscarName}, ""},
		{limit.ID, seen{"failed · too many steps", "failed", olgaName}, ""},
		{both.ID, seen{"completed · 1 denied · 2 writes failed", "completed", oscarName + ", " + olgaName}, ""},
		{cancelled.ID, seen{"cancelled", "cancelled", ""}, ""},
	}
	for _, c := range cases {
		got, page := outcomeOnRunPage(t, vera, c.id)
		if got != c.want {
			t.Errorf("run page of %s: %+v, want %+v", a.run(c.id).Prompt, got, c.want)
		}
		if term := text(page.doc, testid("run-termination")); term != c.termination {
			t.Errorf("run page of %s: ended %q, want %q", a.run(c.id).Prompt, term, c.termination)
		}
		if got := outcomeInHistory(t, vera, c.id); got != c.want {
			t.Errorf("history row of %s: %+v, want %+v", a.run(c.id).Prompt, got, c.want)
		}
	}
	if tone := attr(vera.get("/runs/"+both.ID).doc, testid("run-status"), "data-tone"); tone != "warn" {
		t.Errorf("a run completed with denials has tone %q, want warn", tone)
	}
}

// TestHistoryOutcomeFilter: the outcome and decided-by filters narrow the
// rows and the count, keep themselves in the form and across pages, and an
// unknown outcome is refused.
func TestHistoryOutcomeFilter(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	vera := a.as(veraName)
	at := time.Now().Add(-2 * time.Hour)
	tick := func() time.Time { at = at.Add(time.Minute); return at }
	var cleanIDs []string
	for i := range 52 {
		r := storedRun(t, a, fmt.Sprintf("clean %d", i), tick(), engine.TermCompleted, approvedBy(olgaName), evStarted, evOK)
		cleanIDs = append(cleanIDs, r.ID)
	}
	slices.Reverse(cleanIDs)
	denied := storedRun(t, a, "denied", tick(), engine.TermCompleted, deniedBy(oscarName), evDenied)
	failed := storedRun(t, a, "failed", tick(), engine.TermCompleted, approvedBy(oscarName), evStarted, evFailed)
	expired := storedRun(t, a, "expired", tick(), engine.TermCompleted, evExpiry, evExpired)
	waived := storedRun(t, a, "waived", tick(), engine.TermCompleted, evWaived, evOK)
	interrupted := storedRun(t, a, "interrupted", tick(), engine.TermInterrupted, approvedBy(olgaName), evStarted)
	running := storedRun(t, a, "running", tick(), "", approvedBy(oscarName), evStarted)

	cases := []struct {
		query url.Values
		want  []string
	}{
		{url.Values{"outcome": {"clean"}}, append([]string{waived.ID}, cleanIDs...)},
		{url.Values{"outcome": {"denied"}}, []string{denied.ID}},
		{url.Values{"outcome": {"write_failed"}}, []string{failed.ID}},
		{url.Values{"outcome": {"expired"}}, []string{expired.ID}},
		{url.Values{"outcome": {"waived"}}, []string{waived.ID}},
		{url.Values{"outcome": {"interrupted"}}, []string{interrupted.ID}},
		{url.Values{"decided_by": {oscarName}}, []string{running.ID, failed.ID, denied.ID}},
		{url.Values{"decided_by": {"Oscar"}}, []string{running.ID, failed.ID, denied.ID}},
		{url.Values{"decided_by": {veraName}}, nil},
		{url.Values{"decided_by": {olgaName}, "outcome": {"interrupted"}}, []string{interrupted.ID}},
		{url.Values{"decided_by": {oscarName}, "status": {"running"}}, []string{running.ID}},
	}
	for _, c := range cases {
		t.Run(c.query.Encode(), func(t *testing.T) {
			vera := vera.with(t)
			path := "/runs?" + c.query.Encode()
			ids, count, next, res := historyPage(t, vera, path)
			if count != matchCount(len(c.want)) {
				t.Errorf("match count %q, want %q", count, matchCount(len(c.want)))
			}
			if len(c.want) > 50 {
				if u, _ := url.Parse(next); u == nil || u.Query().Get("outcome") != c.query.Get("outcome") {
					t.Errorf("next-page link %q drops the outcome", next)
				}
			}
			if all, _ := walkHistory(t, vera, path); !slices.Equal(all, c.want) {
				t.Errorf("rows\n%v\nwant\n%v", all, c.want)
			}
			if len(ids) == 0 && res.doc.Find(testid("history-empty")).Length() != 1 {
				t.Error("no empty-history notice")
			}
			if o := c.query.Get("outcome"); o != "" {
				if got := attr(res.doc, testid("filter-outcome")+" option[selected]", "value"); got != o {
					t.Errorf("outcome filter shows %q", got)
				}
			}
			if got := attr(res.doc, testid("filter-decided-by"), "value"); got != c.query.Get("decided_by") {
				t.Errorf("decided-by filter shows %q", got)
			}
		})
	}
	// A run that has not ended shows no duration that would keep growing.
	if got := strings.TrimSpace(historyRow(t, vera, "/runs", running.ID).Find(testid("row-duration")).Text()); got != "" {
		t.Errorf("a running run took %q", got)
	}
	if got := strings.TrimSpace(historyRow(t, vera, "/runs", denied.ID).Find(testid("row-duration")).Text()); got != "4.0s" {
		t.Errorf("an ended run took %q, want 4.0s (created, claimed, decided, denied, finished a second apart)", got)
	}
	// The form offers every outcome the store knows, and "any".
	var offered []string
	vera.get("/runs").doc.Find(testid("filter-outcome") + " option").Each(func(_ int, s *goquery.Selection) {
		offered = append(offered, s.AttrOr("value", "?"))
	})
	if want := append([]string{""}, store.Outcomes...); !slices.Equal(offered, want) {
		t.Errorf("outcome options %q, want %q", offered, want)
	}
	for _, q := range []string{"outcome=exploded", "outcome=CLEAN", "outcome=clean&status=nope"} {
		mustCleanError(t, vera.get("/runs?"+q), http.StatusBadRequest)
	}
}

// TestHistoryRowShowsTimesAndShortIDs: a row shows the prompt as a link to
// the run with the full prompt in its title, the first 8 characters of the
// id with the full id in the title, the creation time relative to now with
// the exact time on hover, and a compact duration.
func TestHistoryRowShowsTimesAndShortIDs(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
	a := newTestApp(t, withoutWorkers(), withClock(func() time.Time { return now }))
	vera := a.as(veraName)
	created := now.Add(-12 * time.Minute)
	long := strings.Repeat("Rewrite the pricing page so that it reads well. ", 12)
	r := a.createRun("editor", long, olgaName, created)
	if err := a.db.FinishRun(context.Background(), r.ID, "", engine.Finish{Status: engine.StatusCancelled,
		Termination: engine.TermCancelled, Now: created.Add(65 * time.Second), Event: cancelEvent}); err != nil {
		t.Fatal(err)
	}
	row := historyRow(t, vera, "/runs", r.ID)
	link := row.Find(testid("run-link"))
	if link.AttrOr("href", "") != "/runs/"+r.ID || link.AttrOr("title", "") != long || strings.TrimSpace(link.Text()) != strings.TrimSpace(long) {
		t.Errorf("prompt link href %q title %q", link.AttrOr("href", ""), link.AttrOr("title", ""))
	}
	short := row.Find(testid("run-short-id"))
	if strings.TrimSpace(short.Text()) != r.ID[len(r.ID)-8:] || short.AttrOr("title", "") != r.ID {
		t.Errorf("short id %q title %q, want %q and %q", short.Text(), short.AttrOr("title", ""), r.ID[len(r.ID)-8:], r.ID)
	}
	when := row.Find(testid("row-created") + " time")
	if strings.TrimSpace(when.Text()) != "12 min ago" || when.AttrOr("title", "") != "2026-12-02 15:48:00 UTC" ||
		when.AttrOr("datetime", "") != "2026-12-02T15:48:00Z" {
		t.Errorf("created %q title %q datetime %q", when.Text(), when.AttrOr("title", ""), when.AttrOr("datetime", ""))
	}
	if got := strings.TrimSpace(row.Find(testid("row-duration")).Text()); got != "1 min 5s" {
		t.Errorf("duration %q, want 1 min 5s", got)
	}
	if got := strings.TrimSpace(row.Find(testid("row-agent")).Text() + " " + row.Find(testid("row-model")).Text()); got != "editor demo" {
		t.Errorf("agent and model %q", got)
	}
}

// TestRunHeaderTimes: a waiting run says when it started and how long it
// has waited, with no growing duration; a finished run says how long it
// took. A viewer is told the run waits for an operator, an operator to
// review the calls.
func TestRunHeaderTimes(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	a := newTestApp(t, withoutWorkers(), withClock(now))
	w := a.waitingRun("editor", publishAbout, olgaName) // driven on the real clock
	// Started five minutes before it was suspended; ten minutes pass.
	if _, err := a.rawDB().Exec(`UPDATE agent_run SET created_at = created_at - 300000 WHERE id = ?`, w.ID); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	clock = w.UpdatedAt.Add(10*time.Minute + 20*time.Second)
	mu.Unlock()

	vera := a.as(veraName)
	page := vera.get("/runs/" + w.ID)
	mustStatus(t, page, http.StatusOK)
	whenLine := strings.Join(strings.Fields(text(page.doc, testid("run-when"))), " ")
	if whenLine != "Started 15 min ago · waiting for 10 min" {
		t.Errorf("time line %q", whenLine)
	}
	if title := attr(page.doc, testid("run-waiting-for")+" time", "title"); !strings.HasPrefix(title, "since "+w.UpdatedAt.UTC().Format("2006-01-02 15:04")) {
		t.Errorf("waiting time's title %q", title)
	}
	if page.doc.Find(testid("run-duration")).Length() != 0 {
		t.Error("a waiting run shows a duration")
	}
	note := text(page.doc, testid("run-waiting-note"))
	if note != "This run waits for an operator's decision." || strings.Contains(note, "review") {
		t.Errorf("a viewer's note %q", note)
	}
	if got := text(a.as(olgaName).get("/runs/"+w.ID).doc, testid("run-waiting-note")); !strings.Contains(got, "review the pending calls") {
		t.Errorf("an operator's note %q, want them asked to review the calls", got)
	}

	done := a.createRun("editor", "finished", olgaName, clock.Add(-time.Hour))
	if _, err := a.db.RequestCancel(context.Background(), done.ID, cancelEvent, clock.Add(-time.Hour+42*time.Second)); err != nil {
		t.Fatal(err)
	}
	page = vera.get("/runs/" + done.ID)
	whenLine = strings.Join(strings.Fields(text(page.doc, testid("run-when"))), " ")
	if whenLine != "Started 1 h ago · took 42s" {
		t.Errorf("finished run's time line %q", whenLine)
	}
	if page.doc.Find(testid("run-waiting-note")).Length() != 0 {
		t.Error("a finished run says it waits")
	}
}
