package web_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"countersign/engine"
	"countersign/engine/tools"
)

// TestWaitingPoll: a waiting run page polls slowly with the turn it shows.
// While the run still waits on that turn and nothing new was recorded the
// answer is a 204 that swaps nothing; once someone else decided, the poll
// brings the decision step, the header and the notice of who decided in
// place of the card, and polls quickly again.
func TestWaitingPoll(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	w := a.waitingRun("editor", publishAbout, olgaName)
	olga, oscar := a.as(olgaName), a.as(oscarName)
	page := olga.get("/runs/" + w.ID)
	poll := attr(page.doc, testid("poller"), "hx-get")
	if want := "/runs/" + w.ID + "/steps?after=3&turn=" + w.PendingDigest; poll != want {
		t.Fatalf("the waiting page polls %q, want %q", poll, want)
	}

	res := olga.get(poll, htmx())
	mustStatus(t, res, http.StatusNoContent)
	if res.body != "" {
		t.Errorf("a 204 with a body: %q", res.body)
	}

	// Asked from an earlier step, the same turn sends the steps and the
	// header but leaves the card alone: the operator may be typing in it.
	res = olga.get("/runs/"+w.ID+"/steps?after=2&turn="+w.PendingDigest, htmx())
	seqs, next := pollOf(t, res, "waiting_for_approval")
	if !slices.Equal(seqs, []int64{3}) || next != poll {
		t.Errorf("same turn after=2: seqs %v, next %q", seqs, next)
	}
	if res.doc.Find("#approval-card").Length() != 0 {
		t.Error("a poll on the same turn re-rendered the card")
	}

	// A page that shows no card (or another turn's) gets the card of the turn.
	res = olga.get("/runs/"+w.ID+"/steps?after=3&turn=other", htmx())
	pollOf(t, res, "waiting_for_approval")
	if got := res.doc.Find(`#approval-card[hx-swap-oob] input[name="digest"]`).AttrOr("value", ""); got != w.PendingDigest {
		t.Errorf("a page on another turn got the card of %q, want %q", got, w.PendingDigest)
	}

	// Oscar decides; no worker resumes the run here, so it stays running.
	mustRedirect(t, decide(t, oscar, w.ID, "approve", ""), "/runs/"+w.ID)
	res = olga.get(poll, htmx())
	seqs, next = pollOf(t, res, "running")
	if !slices.Equal(seqs, []int64{4}) || stepKinds(res.doc.Selection)[0] != "decision" {
		t.Errorf("after oscar's decision: seqs %v, kinds %v", seqs, stepKinds(res.doc.Selection))
	}
	if next != "/runs/"+w.ID+"/steps?after=4" || attr(res.doc, "#poller", "hx-trigger") != "every 1s" {
		t.Errorf("after the decision the page polls %q every %q, want the quick poll after 4", next, attr(res.doc, "#poller", "hx-trigger"))
	}
	notice := res.doc.Find(`#approval-card[hx-swap-oob="outerHTML"]` + testid("decided-notice"))
	ev, _, _ := a.db.LastDecision(context.Background(), w.ID)
	want := "Decided by oscar at " + humanTime(ev) + ": approved."
	if got := strings.TrimSpace(notice.Text()); got != want || notice.AttrOr("data-by", "") != oscarName {
		t.Errorf("notice %q by %q, want %q", got, notice.AttrOr("data-by", ""), want)
	}
	if res.doc.Find(testid("approval-card")+", "+testid("decision-form")).Length() != 0 {
		t.Error("the poll still shows a card with buttons")
	}

	// Polling on from there leaves the notice in place.
	res = olga.get(next, htmx())
	pollOf(t, res, "running")
	if res.doc.Find("#approval-card").Length() != 0 {
		t.Error("a quick poll touched the card's place")
	}
}

// TestLateDecision: olga's card is stale because oscar decided first. Her
// click gets a 409 whose parts all come out of band (htmx swaps only those
// for an error): the notice of oscar's decision in place of the card, the
// steps after the ones her page shows, the header and a restarted poller.
// Without JavaScript she gets the run page with the same notice.
func TestLateDecision(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	w := a.waitingRun("editor", publishAbout, olgaName)
	olga, oscar := a.as(olgaName), a.as(oscarName)
	stale := cardForm(t, olga, w.ID, "approve")
	if stale.Get("after") != "3" {
		t.Fatalf("the form says its page shows steps to %q, want 3", stale.Get("after"))
	}
	mustRedirect(t, decide(t, oscar, w.ID, "deny", "not yet"), "/runs/"+w.ID)

	res := olga.post("/tool/resume", stale, htmx())
	mustStatus(t, res, http.StatusConflict)
	d := res.doc
	notice := d.Find(`#approval-card[hx-swap-oob="outerHTML"]` + testid("decided-notice"))
	if !strings.Contains(notice.Text(), "Decided by oscar at ") || !strings.HasSuffix(strings.TrimSpace(notice.Text()), ": denied.") {
		t.Errorf("notice %q", notice.Text())
	}
	if d.Find(testid("decision-form")).Length() != 0 {
		t.Error("the 409 brings a card with buttons")
	}
	if seqs := stepSeqs(t, d.Find(`ol[hx-swap-oob="beforeend:#steps"]`)); !slices.Equal(seqs, []int64{4}) {
		t.Errorf("steps %v, want oscar's decision (4)", seqs)
	}
	if got := attr(d, `#run-header[hx-swap-oob]`, "data-status"); got != "running" {
		t.Errorf("header status %q", got)
	}
	p := d.Find(`#poller[hx-swap-oob="outerHTML"]`)
	if p.AttrOr("hx-get", "") != "/runs/"+w.ID+"/steps?after=4" {
		t.Errorf("poller %q, want polling restarted after 4", p.AttrOr("hx-get", ""))
	}
	if f := d.Find(`#flash[hx-swap-oob] ` + testid("flash")); f.AttrOr("data-kind", "") != "error" || !strings.Contains(f.Text(), "Already decided") {
		t.Errorf("flash %q", f.Text())
	}

	// Without JavaScript: the run page, the notice in place of the card.
	res = olga.post("/tool/resume", stale)
	mustRunPageWith(t, a, res, http.StatusConflict, "Already decided", w.ID)
	if res.doc.Find(testid("decided-notice")).Length() != 1 || res.doc.Find(testid("approval-card")).Length() != 0 {
		t.Errorf("no-JS 409 page: notice %d, cards %d", res.doc.Find(testid("decided-notice")).Length(), res.doc.Find(testid("approval-card")).Length())
	}
}

// TestRefusalOnTheSameTurn: a refusal on the turn still waiting (here the
// initiator's approval of a four-eyes run) brings the card back out of
// band, with why and with what she typed.
func TestRefusalOnTheSameTurn(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	w := a.waitingRun("editor-4eyes", publishAbout, olgaName)
	olga := a.as(olgaName)
	f := cardForm(t, olga, w.ID, "approve")
	f.Set("reason", "ship it <b>now</b>")
	res := olga.post("/tool/resume", f, htmx())
	mustStatus(t, res, http.StatusForbidden)
	card := res.doc.Find(`#approval-card[hx-swap-oob="outerHTML"]` + testid("approval-card"))
	if card.Length() != 1 {
		t.Fatalf("no card out of band:\n%s", res.body)
	}
	if !strings.Contains(card.Find(testid("card-error")).Text(), "another operator to approve") {
		t.Errorf("card error %q", card.Find(testid("card-error")).Text())
	}
	if got := card.Find(testid("reason-input")).Text(); got != "ship it <b>now</b>" {
		t.Errorf("reason kept as %q", got)
	}
	if got := attr(res.doc, `#poller[hx-swap-oob]`, "hx-get"); got != "/runs/"+w.ID+"/steps?after=3&turn="+w.PendingDigest {
		t.Errorf("poller %q, want the slow poll of the same turn", got)
	}
	if a.run(w.ID).Status != engine.StatusWaiting {
		t.Error("the refusal changed the run")
	}
}

// TestDecisionFlashes: a denial is news, not a success; an approval's
// flash is cleared once the run has ended, by the poll that shows it.
func TestDecisionFlashes(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	olga := a.as(olgaName)

	w := a.waitingRun("editor", deleteOld, olgaName)
	res := decide(t, olga, w.ID, "deny", "", htmx())
	mustStatus(t, res, http.StatusOK)
	f := res.doc.Find(`#flash ` + testid("flash"))
	if f.AttrOr("data-kind", "") != "info" || strings.TrimSpace(f.Text()) != "Denied. The agent is told not to retry." {
		t.Errorf("denial flash %q of kind %q", f.Text(), f.AttrOr("data-kind", ""))
	}

	w = a.waitingRun("editor", publishAbout, olgaName)
	res = decide(t, olga, w.ID, "approve", "", htmx())
	if f := res.doc.Find(`#flash ` + testid("flash")); f.AttrOr("data-kind", "") != "ok" {
		t.Errorf("approval flash of kind %q", f.AttrOr("data-kind", ""))
	}
	next := attr(res.doc, "#poller", "hx-get")
	a.waitStatus(w.ID, engine.StatusCompleted)
	res = olga.get(next, htmx())
	pollOf(t, res, "completed")
	flash := res.doc.Find(`#flash[hx-swap-oob="outerHTML"]`)
	if flash.Length() != 1 || strings.TrimSpace(flash.Text()) != "" {
		t.Errorf("the poll that shows the run ended does not clear the flash: %q", flash.Text())
	}
}

// TestStepsOnce: a finished run shows each call's arguments once (in full
// on its tool step, in short in the model turn, not at all in the waiting
// step) and the final answer once.
func TestStepsOnce(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	olga := a.as(olgaName)
	w := a.waitingRun("editor", updatePricing, olgaName)
	mustRedirect(t, decide(t, olga, w.ID, "approve", ""), "/runs/"+w.ID)
	a.waitStatus(w.ID, engine.StatusCompleted)
	d := olga.get("/runs/" + w.ID).doc

	if n := d.Find(testid("tool-args")).Length(); n != d.Find(`[data-kind="tool_started"]`).Length() || n == 0 {
		t.Errorf("%d full argument blocks, want one per tool step", n)
	}
	turn := d.Find(`[data-kind="model_turn"]`).First()
	if turn.Find(testid("tool-args")).Length() != 0 || turn.Find(testid("tool-args-short")).Length() == 0 {
		t.Error("the model turn shows the arguments whole, or not in short")
	}
	if got := turn.Find(testid("tool-args-short")).Text(); !strings.Contains(got, `slug: "pricing"`) {
		t.Errorf("short arguments %q", got)
	}
	sus := d.Find(`[data-kind="suspended"]`)
	if sus.Find(testid("tool-args")+", pre.args").Length() != 0 {
		t.Error("the waiting step repeats the arguments")
	}
	if got := strings.TrimSpace(sus.Find(testid("suspended-text")).Text()); got != "Waiting for approval of 1 call: update_page" {
		t.Errorf("waiting step says %q", got)
	}
	answer := text(d, testid("final-answer"))
	if answer == "" || d.Find(testid("final-answer")).Length() != 1 {
		t.Fatal("no single final answer")
	}
	if strings.Count(d.Find("#steps").Text(), answer) != 1 {
		t.Error("the final answer shows twice")
	}
	if d.Find(testid("answer-below")).Length() != 1 {
		t.Error("the reply that is the final answer does not point to it")
	}
	// Page bodies are text with their line breaks, not JSON with \n.
	body := d.Find(`[data-kind="tool_started"] ` + testid("tool-args") + ` [data-arg="body"] dd`)
	if !body.HasClass("arg-text") || strings.Contains(body.Text(), `\n`) {
		t.Errorf("body argument %q (class %q)", clip(body.Text(), 80), body.AttrOr("class", ""))
	}
}

// TestPreviewWarning: a call whose preview could not be made (a page that
// already exists) shows a warning, not grey text.
func TestPreviewWarning(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	if _, err := a.db.Pages().CreatePage(context.Background(), tools.Page{Slug: "winter-sale", Title: "Winter sale", Body: "x"}); err != nil {
		t.Fatal(err)
	}
	w := a.waitingRun("editor", "Create a page announcing the winter sale, then publish it.", olgaName)
	d := a.as(olgaName).get("/runs/" + w.ID).doc
	warn := d.Find(testid("approval-card") + " " + testid("preview-warning"))
	if warn.Length() != 1 || warn.AttrOr("role", "") != "note" || !strings.Contains(warn.Text(), "Warning") ||
		!strings.Contains(warn.Text(), "already exists") {
		t.Errorf("warning %q (role %q)", warn.Text(), warn.AttrOr("role", ""))
	}
}

// TestViewerCard: a viewer is not asked to decide.
func TestViewerCard(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	w := a.waitingRun("editor", publishAbout, olgaName)
	d := a.as(veraName).get("/runs/" + w.ID).doc
	card := d.Find(testid("approval-card"))
	if got := card.Find(testid("card-intro")).Text(); strings.Contains(got, " you") || !strings.Contains(got, "an operator") {
		t.Errorf("viewer's card intro %q", got)
	}
	if got := card.Find(testid("card-readonly")).Text(); !strings.Contains(got, "an operator decides") {
		t.Errorf("viewer's card note %q", got)
	}
	if card.Find(testid("decision-form")).Length() != 0 {
		t.Error("a viewer gets the form")
	}
}

// humanTime is how the pages name the moment of a decision.
func humanTime(ev engine.Event) string {
	return ev.At.UTC().Format("2 Jan 2006, 15:04 UTC")
}
