package web_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"countersign/engine"
)

// Prompts of the inbox tests, besides those of helpers_test.go.
const (
	askPrice   = "Set the price on the offers page to $12."
	createSale = "Create a page announcing the winter sale, then publish it."
)

// inboxItem selects the inbox item (waiting or decided) of a run in doc.
func inboxItem(doc *goquery.Document, runID string) *goquery.Selection {
	return doc.Find(`#inbox-item-` + runID)
}

// inboxForm returns the decision form of a run's item in the inbox, as a
// browser would submit it with the button named by decision.
func inboxForm(t *testing.T, c *client, runID, decision string) url.Values {
	t.Helper()
	page := c.get("/inbox")
	mustStatus(t, page, http.StatusOK)
	return inboxFormIn(t, page.doc, runID, decision)
}

// inboxFormIn is inboxForm on a page already fetched.
func inboxFormIn(t *testing.T, doc *goquery.Document, runID, decision string) url.Values {
	t.Helper()
	action, v := formValues(t, doc, `#inbox-item-`+runID+` `+testid("inbox-form"))
	if action != "/inbox/decide" {
		t.Fatalf("the inbox form posts to %q", action)
	}
	v.Set("decision", decision)
	return v
}

// callOf returns the id of the one call of a run's inbox item.
func callOf(t *testing.T, doc *goquery.Document, runID string) string {
	t.Helper()
	calls := inboxItem(doc, runID).Find(testid("inbox-call"))
	if calls.Length() != 1 {
		t.Fatalf("run %s: %d calls in the inbox, want 1", runID, calls.Length())
	}
	return calls.AttrOr("data-call-id", "")
}

// shownValues is what the inbox's watch form sends: one "run:digest" per item.
func shownValues(doc *goquery.Document) url.Values {
	v := url.Values{}
	doc.Find(`input[name="shown"][form="inbox-watch"]`).Each(func(_ int, s *goquery.Selection) {
		v.Add("shown", s.AttrOr("value", ""))
	})
	return v
}

// lastDecision is the run's last decision event.
func (a *testApp) lastDecision(runID string) engine.Event {
	a.t.Helper()
	ev, ok, err := a.db.LastDecision(context.Background(), runID)
	if err != nil || !ok {
		a.t.Fatalf("run %s: no decision (%v)", runID, err)
	}
	return ev
}

// TestInboxShowsEachTurn: each waiting turn is a card with its calls (kind,
// arguments in short, preview or a warning), the prompt, who started it,
// since when it waits, its time left, its outcome, the second-approver
// badge, questions as questions and a link to the run; a viewer sees no
// form and may not post one.
func TestInboxShowsEachTurn(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	olga, oscar, vera := a.as(olgaName), a.as(oscarName), a.as(veraName)
	// The first sale page is created, so the second run's create will
	// probably fail: its preview says so.
	first := a.waitingRun("editor", createSale, oscarName)
	mustRedirect(t, decide(t, oscar, first.ID, "approve", ""), "/runs/"+first.ID)
	for r := a.waitStatus(first.ID, engine.StatusWaiting); r.PendingDigest == first.PendingDigest; {
		r = a.waitStatus(first.ID, engine.StatusWaiting)
	}
	pub := a.waitingRun("editor", publishAbout, oscarName)
	q := a.waitingRun("editor", askPrice, olgaName)
	sale := a.waitingRun("editor", createSale, olgaName)
	four := a.waitingRun("editor-4eyes", publishAbout, olgaName)

	page := olga.get("/inbox")
	mustStatus(t, page, http.StatusOK)
	d := page.doc
	if got := attr(d, testid("inbox-count"), "data-count"); got != "5" {
		t.Errorf("count %q, want 5", got)
	}
	var order []string
	d.Find(testid("inbox-item")).Each(func(_ int, s *goquery.Selection) { order = append(order, s.AttrOr("data-run-id", "")) })
	if want := []string{first.ID, pub.ID, q.ID, sale.ID, four.ID}; !slices.Equal(order, want) {
		t.Errorf("items %v, want oldest first %v", order, want)
	}
	if got := attr(d, testid("inbox-watch"), "hx-get"); got != "/inbox/updates" {
		t.Errorf("the inbox does not poll for updates: hx-get %q", got)
	}

	it := inboxItem(d, pub.ID)
	if it.AttrOr("data-testid", "") != "inbox-item" || it.AttrOr("data-digest", "") != pub.PendingDigest {
		t.Fatalf("item of %s: %v", pub.ID, it.Nodes)
	}
	call := it.Find(testid("inbox-call"))
	if got := strings.TrimSpace(call.Find(".tool-name").Text()); got != "publish_page" || call.AttrOr("data-kind", "") != "write" {
		t.Errorf("call %q of kind %q", got, call.AttrOr("data-kind", ""))
	}
	if got := strings.TrimSpace(call.Find(testid("call-kind")).Text()); got == "" {
		t.Error("the call's kind is not labelled")
	}
	if got := strings.TrimSpace(call.Find(testid("args-short")).Text()); got != "slug=about" {
		t.Errorf("arguments in short %q, want slug=about", got)
	}
	if call.Find(testid("preview")).Length() != 1 || call.Find(testid("preview-failed")).Length() != 0 {
		t.Error("the publish call shows no preview")
	}
	for sel, want := range map[string]string{
		testid("inbox-started-by"): oscarName,
		testid("inbox-prompt"):     publishAbout,
		testid("time-left"):        "no deadline",
	} {
		if got := strings.TrimSpace(it.Find(sel).Text()); got != want {
			t.Errorf("%s: %q, want %q", sel, got, want)
		}
	}
	if it.Find(testid("inbox-waiting")+" time[datetime][title]").Length() != 1 {
		t.Error("the waiting time is not a <time> with the exact time on hover")
	}
	if got := it.Find(testid("inbox-outcome")).AttrOr("data-status", ""); got != "waiting_for_approval" {
		t.Errorf("outcome badge status %q", got)
	}
	if got := it.Find(testid("inbox-run-link")).AttrOr("href", ""); got != "/runs/"+pub.ID {
		t.Errorf("run link %q", got)
	}
	if got := it.Find(testid("inbox-select")).AttrOr("value", ""); got != pub.ID+":"+pub.PendingDigest {
		t.Errorf("batch checkbox value %q", got)
	}
	if it.Find(testid("inbox-select")).AttrOr("form", "") != "inbox-batch" || d.Find(`form#inbox-batch`).Length() != 1 {
		t.Error("the batch checkbox is not tied to the batch form")
	}
	if it.Find(testid("second-approver")).Length() != 0 || it.Find(testid("self-started")).Length() != 0 {
		t.Error("an editor run asks for a second approver")
	}

	qc := inboxItem(d, q.ID).Find(testid("inbox-call"))
	if qc.AttrOr("data-kind", "") != "question" || !strings.Contains(qc.Find(testid("question")).Text(), "?") {
		t.Errorf("the question is not shown as one: %q", qc.Text())
	}
	if qc.Find(testid("verdict-approve")).Length() != 0 || qc.Find(testid("verdict-answer")).Length() != 1 {
		t.Error("a question offers approve, or no answer")
	}
	if got := inboxItem(d, sale.ID).Find(testid("preview-failed")).Text(); !strings.Contains(got, "already exists") {
		t.Errorf("a preview that failed is not a warning: %q", got)
	}
	sc := inboxItem(d, sale.ID).Find(testid("inbox-call"))
	short := sc.Find(testid("args-short"))
	if !strings.Contains(short.Text(), "slug=winter-sale") || !strings.Contains(short.Text(), "…") && !strings.Contains(short.Text(), "⏎") {
		t.Errorf("long arguments in short: %q", short.Text())
	}
	if full := sc.Find(testid("args-full")).Text(); !strings.Contains(full, `"body"`) || !strings.Contains(short.AttrOr("title", ""), `"body"`) {
		t.Errorf("the whole arguments are not at hand: %q", full)
	}

	fo := inboxItem(d, four.ID)
	if fo.Find(testid("second-approver")).Length() != 1 || fo.Find(testid("self-started")).Length() != 1 {
		t.Error("olga is not told that her four-eyes run needs another approver")
	}
	if _, disabled := fo.Find(testid("inbox-approve")).Attr("disabled"); !disabled {
		t.Error("olga may approve her own four-eyes run")
	}
	fo = inboxItem(oscar.get("/inbox").doc, four.ID)
	if fo.Find(testid("second-approver")).Length() != 1 || fo.Find(testid("self-started")).Length() != 0 {
		t.Error("oscar does not see the badge, or is told he started the run")
	}
	if _, disabled := fo.Find(testid("inbox-approve")).Attr("disabled"); disabled {
		t.Error("oscar may not approve olga's four-eyes run")
	}

	vp := vera.get("/inbox")
	mustStatus(t, vp, http.StatusOK)
	if vp.doc.Find(testid("inbox-item")).Length() != 5 {
		t.Errorf("the viewer sees %d items", vp.doc.Find(testid("inbox-item")).Length())
	}
	if n := vp.doc.Find(testid("inbox-form") + ", " + testid("inbox-select") + ", " + testid("inbox-batch")).Length(); n != 0 {
		t.Errorf("the viewer gets %d forms or checkboxes", n)
	}
	if vp.doc.Find(testid("inbox-readonly")).Length() != 5 {
		t.Error("the viewer is not told an operator decides")
	}
	f := inboxForm(t, olga, pub.ID, "approve")
	f.Set("_csrf", vera.csrf)
	mustCleanError(t, vera.post("/inbox/decide", f), http.StatusForbidden)
	mustCleanError(t, vera.submit("/inbox/decide-batch", url.Values{"turn": {pub.ID + ":" + pub.PendingDigest}, "decision": {"approve"}}),
		http.StatusForbidden)
	if got := a.run(pub.ID); got.Status != engine.StatusWaiting {
		t.Errorf("a viewer's post changed the run: %s", got.Status)
	}
}

// TestInboxDecideWithoutJS decides from the inbox as a browser without
// JavaScript: approve, deny with a reason, answer a question, and an edit
// that is only applied once its preview was shown. Each ends with a 303 to
// the inbox and a flash.
func TestInboxDecideWithoutJS(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	olga := a.as(olgaName)
	pub := a.waitingRun("editor", publishAbout, oscarName)
	del := a.waitingRun("editor", deleteOld, oscarName)
	q := a.waitingRun("editor", askPrice, oscarName)
	upd := a.waitingRun("editor", updatePricing, oscarName)

	mustRedirect(t, olga.post("/inbox/decide", inboxForm(t, olga, pub.ID, "approve")), "/inbox")
	page := olga.get("/inbox")
	if got := text(page.doc, testid("flash")); !strings.Contains(got, "Approved") || attr(page.doc, testid("flash"), "data-kind") != "ok" {
		t.Errorf("flash after approving %q", got)
	}
	if inboxItem(page.doc, pub.ID).Length() != 0 {
		t.Error("the approved turn is still in the inbox")
	}
	a.waitStatus(pub.ID, engine.StatusCompleted)
	if ev := a.lastDecision(pub.ID); ev.By != olgaName || ev.Decision != engine.VerdictApprove {
		t.Errorf("decision %+v", ev)
	}

	f := inboxFormIn(t, page.doc, del.ID, "deny")
	f.Set("reason", "keep it for the archive")
	mustRedirect(t, olga.post("/inbox/decide", f), "/inbox")
	if ev := a.lastDecision(del.ID); ev.Decision != engine.VerdictDeny || ev.Reason != "keep it for the archive" {
		t.Errorf("denial %+v", ev)
	}

	page = olga.get("/inbox")
	id := callOf(t, page.doc, q.ID)
	f = inboxFormIn(t, page.doc, q.ID, "calls")
	if f.Get("verdict."+id) != "answer" {
		t.Errorf("a question preselects %q, want answer", f.Get("verdict."+id))
	}
	f.Set("text."+id, "pricing")
	mustRedirect(t, olga.post("/inbox/decide", f), "/inbox")
	if ev := a.lastDecision(q.ID); len(ev.Verdicts) != 1 || ev.Verdicts[0].Verdict != engine.VerdictAnswer || ev.Verdicts[0].Text != "pricing" {
		t.Errorf("answer %+v", ev)
	}

	// An edit: the first submission shows its preview and decides nothing.
	page = olga.get("/inbox")
	id = callOf(t, page.doc, upd.ID)
	f = inboxFormIn(t, page.doc, upd.ID, "calls")
	edited := strings.Replace(f.Get("args."+id), "$12", "$14", 1)
	if edited == f.Get("args."+id) {
		t.Fatalf("no $12 in the arguments %q", edited)
	}
	f.Set("verdict."+id, "edit")
	f.Set("args."+id, edited)
	res := olga.post("/inbox/decide", f)
	mustStatus(t, res, http.StatusOK)
	it := inboxItem(res.doc, upd.ID)
	if !strings.Contains(it.Find(testid("edit-preview")).Text(), "$14") || it.Find(testid("card-notice")).Length() != 1 {
		t.Fatalf("no preview of the edit:\n%s", clip(it.Text(), 1500))
	}
	if got := a.run(upd.ID); got.Status != engine.StatusWaiting || got.PendingDigest != upd.PendingDigest {
		t.Fatal("showing the preview decided the turn")
	}
	f = inboxFormIn(t, res.doc, upd.ID, "calls")
	if f.Get("verdict."+id) != "edit" || f.Get("args."+id) != edited || f.Get("previewed."+id) == "" {
		t.Fatalf("the previewed form lost the edit: verdict %q, sealed %q", f.Get("verdict."+id), f.Get("previewed."+id))
	}
	mustRedirect(t, olga.post("/inbox/decide", f), "/inbox")
	ev := a.lastDecision(upd.ID)
	if len(ev.Verdicts) != 1 || ev.Verdicts[0].Verdict != engine.VerdictEdit || !strings.Contains(ev.Verdicts[0].Arguments, "$14") {
		t.Errorf("edit %+v", ev)
	}
}

// TestInboxDecideWithHTMX: with htmx the answer replaces the item in place,
// out of band, with the line saying who decided, and swaps the flash and
// the badge; an edit's preview comes back in the item.
func TestInboxDecideWithHTMX(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	olga := a.as(olgaName)
	pub := a.waitingRun("editor", publishAbout, oscarName)
	del := a.waitingRun("editor", deleteOld, oscarName)
	upd := a.waitingRun("editor", updatePricing, oscarName)

	res := olga.post("/inbox/decide", inboxForm(t, olga, pub.ID, "approve"), htmx())
	mustStatus(t, res, http.StatusOK)
	line := res.doc.Find(`#inbox-item-` + pub.ID + `[hx-swap-oob="outerHTML"]`)
	if line.AttrOr("data-testid", "") != "inbox-decided" || strings.TrimSpace(line.Find(testid("decided-text")).Text()) != "Approved by you" {
		t.Errorf("decided line %q", line.Text())
	}
	if got := res.doc.Find(`#flash[hx-swap-oob]`).Text(); !strings.Contains(got, "Approved") {
		t.Errorf("out-of-band flash %q", got)
	}
	if got := strings.TrimSpace(res.doc.Find(`#inbox-badge[hx-swap-oob]`).Text()); got != "2" {
		t.Errorf("out-of-band badge %q, want 2", got)
	}
	if got := res.doc.Find(`#inbox-count[hx-swap-oob]`).AttrOr("data-count", ""); got != "2" {
		t.Errorf("out-of-band count %q, want 2", got)
	}
	if res.doc.Find("html body nav").Length() != 0 {
		t.Error("htmx got a whole page")
	}

	f := inboxForm(t, olga, del.ID, "deny")
	f.Set("reason", "not today")
	res = olga.post("/inbox/decide", f, htmx())
	mustStatus(t, res, http.StatusOK)
	line = inboxItem(res.doc, del.ID)
	if got := strings.TrimSpace(line.Find(testid("decided-text")).Text()); got != "Denied by you" ||
		strings.TrimSpace(line.Find(testid("decided-reason")).Text()) != "not today" {
		t.Errorf("denied line %q", line.Text())
	}

	page := olga.get("/inbox")
	id := callOf(t, page.doc, upd.ID)
	f = inboxFormIn(t, page.doc, upd.ID, "preview")
	f.Set("verdict."+id, "edit")
	f.Set("args."+id, strings.Replace(f.Get("args."+id), "$12", "$15", 1))
	res = olga.post("/inbox/decide", f, htmx())
	mustStatus(t, res, http.StatusOK)
	it := res.doc.Find(`#inbox-item-` + upd.ID + `[hx-swap-oob="outerHTML"]`)
	if !strings.Contains(it.Find(testid("edit-preview")).Text(), "$15") {
		t.Fatalf("no preview in the item:\n%s", clip(res.body, 1500))
	}
	f = inboxFormIn(t, res.doc, upd.ID, "calls")
	res = olga.post("/inbox/decide", f, htmx())
	mustStatus(t, res, http.StatusOK)
	if inboxItem(res.doc, upd.ID).AttrOr("data-testid", "") != "inbox-decided" {
		t.Fatalf("the confirmed edit was not decided:\n%s", clip(res.body, 1500))
	}
	if ev := a.lastDecision(upd.ID); len(ev.Verdicts) != 1 || !strings.Contains(ev.Verdicts[0].Arguments, "$15") {
		t.Errorf("edit %+v", ev)
	}
}

// TestInboxRefusals: a turn another operator decided first is a 409 that
// names who, with the item replaced by that decision; approving one's own
// four-eyes run is a 403 that leaves the item to deny; both with and
// without htmx.
func TestInboxRefusals(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	olga, oscar := a.as(olgaName), a.as(oscarName)
	r1 := a.waitingRun("editor", publishAbout, olgaName)
	r2 := a.waitingRun("editor", deleteOld, olgaName)
	four := a.waitingRun("editor-4eyes", publishAbout, olgaName)

	page := olga.get("/inbox")
	f1, f2 := inboxFormIn(t, page.doc, r1.ID, "approve"), inboxFormIn(t, page.doc, r2.ID, "approve")
	mustRedirect(t, decide(t, oscar, r1.ID, "approve", ""), "/runs/"+r1.ID)
	mustRedirect(t, decide(t, oscar, r2.ID, "deny", "no"), "/runs/"+r2.ID)

	res := olga.post("/inbox/decide", f1)
	mustCleanError(t, res, http.StatusConflict)
	if got := text(res.doc, testid("flash")); !strings.Contains(got, oscarName) {
		t.Errorf("409 flash %q does not name oscar", got)
	}
	line := inboxItem(res.doc, r1.ID)
	if line.AttrOr("data-by", "") != oscarName || !strings.Contains(line.Find(testid("decided-text")).Text(), "Approved by oscar") {
		t.Errorf("the page does not show oscar's decision: %q", line.Text())
	}

	res = olga.post("/inbox/decide", f2, htmx())
	mustReadableError(t, res, http.StatusConflict)
	line = res.doc.Find(`#inbox-item-` + r2.ID + `[hx-swap-oob="outerHTML"]`)
	if !strings.Contains(line.Find(testid("decided-text")).Text(), "Denied by oscar") ||
		!strings.Contains(line.Find(testid("card-error")).Text(), oscarName) {
		t.Errorf("409 item %q", line.Text())
	}
	if res.doc.Find(`#flash[hx-swap-oob]`).Length() != 1 {
		t.Error("no out-of-band flash with the 409")
	}

	f := inboxFormIn(t, page.doc, four.ID, "approve")
	res = olga.post("/inbox/decide", f)
	mustCleanError(t, res, http.StatusForbidden)
	it := inboxItem(res.doc, four.ID)
	if it.AttrOr("data-testid", "") != "inbox-item" || it.Find(testid("card-error")).Length() != 1 {
		t.Errorf("the refused item is not shown with its error: %q", it.Text())
	}
	res = olga.post("/inbox/decide", f, htmx())
	mustReadableError(t, res, http.StatusForbidden)
	if res.doc.Find(`#inbox-item-`+four.ID+`[hx-swap-oob="outerHTML"] `+testid("card-error")).Length() != 1 {
		t.Errorf("403 fragment:\n%s", clip(res.body, 1500))
	}
	if got := a.run(four.ID); got.Status != engine.StatusWaiting {
		t.Fatalf("the refused approval changed the run: %s", got.Status)
	}
	mustRedirect(t, olga.post("/inbox/decide", inboxFormIn(t, page.doc, four.ID, "deny")), "/inbox")
	if ev := a.lastDecision(four.ID); ev.Decision != engine.VerdictDeny {
		t.Errorf("olga may not deny her own four-eyes run: %+v", ev)
	}

	// A reason that is too long is a 422.
	r3 := a.waitingRun("editor", publishAbout, olgaName)
	f = inboxForm(t, olga, r3.ID, "approve")
	f.Set("reason", strings.Repeat("x", engine.MaxReasonRunes+1))
	mustCleanError(t, olga.post("/inbox/decide", f), http.StatusUnprocessableEntity)
}

// TestInboxBatch decides several turns with one reason: each on its own,
// those that cannot be decided so (a question, four-eyes, decided first
// by someone else) named in the flash.
func TestInboxBatch(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	olga, oscar := a.as(olgaName), a.as(oscarName)
	pub := a.waitingRun("editor", publishAbout, oscarName)
	upd := a.waitingRun("editor", updatePricing, oscarName)
	q := a.waitingRun("editor", askPrice, oscarName)
	gone := a.waitingRun("editor", deleteOld, oscarName)
	four := a.waitingRun("editor-4eyes", publishAbout, olgaName)

	page := olga.get("/inbox")
	turns := url.Values{}
	page.doc.Find(testid("inbox-select")).Each(func(_ int, s *goquery.Selection) { turns.Add("turn", s.AttrOr("value", "")) })
	if len(turns["turn"]) != 5 {
		t.Fatalf("%d checkboxes, want 5", len(turns["turn"]))
	}
	mustRedirect(t, decide(t, oscar, gone.ID, "deny", ""), "/runs/"+gone.ID)

	mustCleanError(t, olga.submit("/inbox/decide-batch", url.Values{"decision": {"approve"}}), http.StatusUnprocessableEntity)

	form := url.Values{"turn": turns["turn"], "decision": {"approve"}, "reason": {"release day"}}
	mustRedirect(t, olga.submit("/inbox/decide-batch", form), "/inbox")
	page = olga.get("/inbox")
	flash := text(page.doc, testid("flash"))
	if !strings.HasPrefix(flash, "Approved 2 turns. 3 were not decided:") || attr(page.doc, testid("flash"), "data-kind") != "error" {
		t.Errorf("flash %q", flash)
	}
	for _, want := range []string{"question", "Denied by oscar", "another operator"} {
		if !strings.Contains(flash, want) {
			t.Errorf("flash %q does not say %q", flash, want)
		}
	}
	for _, r := range []engine.Run{pub, upd} {
		if ev := a.lastDecision(r.ID); ev.By != olgaName || ev.Decision != engine.VerdictApprove || ev.Reason != "release day" {
			t.Errorf("run %s: decision %+v", r.ID, ev)
		}
	}
	for _, r := range []engine.Run{q, four} {
		if got := a.run(r.ID); got.Status != engine.StatusWaiting || got.PendingDigest != r.PendingDigest {
			t.Errorf("run %s was decided in the batch", r.ID)
		}
	}

	// With htmx: the items in place, the flash out of band. olga may deny
	// her own four-eyes run.
	res := olga.submit("/inbox/decide-batch", url.Values{"turn": {four.ID + ":" + four.PendingDigest, q.ID + ":" + q.PendingDigest},
		"decision": {"deny"}, "reason": {"not now"}}, htmx())
	mustStatus(t, res, http.StatusOK)
	if got := strings.TrimSpace(res.doc.Find(`#inbox-item-` + four.ID + `[hx-swap-oob] ` + testid("decided-text")).Text()); got != "Denied by you" {
		t.Errorf("four-eyes run after the batch: %q", got)
	}
	qi := res.doc.Find(`#inbox-item-` + q.ID + `[hx-swap-oob]`)
	if qi.AttrOr("data-testid", "") != "inbox-item" || !strings.Contains(qi.Find(testid("card-error")).Text(), "question") {
		t.Errorf("the question after the batch: %q", qi.Text())
	}
	if f := res.doc.Find(`#flash[hx-swap-oob] ` + testid("flash")); !strings.HasPrefix(f.Text(), "Denied 1 turn. 1 was not decided") ||
		f.AttrOr("data-kind", "") != "error" {
		t.Errorf("batch flash %q", f.Text())
	}
}

// TestInboxUpdates: the inbox's poll is a 204 while nothing changed; a new
// waiting turn is added at the end, a turn decided elsewhere becomes the
// line that names who decided it, and the count follows.
func TestInboxUpdates(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	vera, oscar := a.as(veraName), a.as(oscarName)
	first := a.waitingRun("editor", publishAbout, oscarName)

	page := vera.get("/inbox")
	shown := shownValues(page.doc)
	if got := shown["shown"]; len(got) != 1 || got[0] != first.ID+":"+first.PendingDigest {
		t.Fatalf("shown %v", got)
	}
	res := vera.get("/inbox/updates?"+shown.Encode(), htmx())
	mustStatus(t, res, http.StatusNoContent)

	second := a.waitingRun("editor", deleteOld, olgaName)
	res = vera.get("/inbox/updates?"+shown.Encode(), htmx())
	mustStatus(t, res, http.StatusOK)
	added := res.doc.Find(`[hx-swap-oob="beforeend:#inbox-list"] ` + testid("inbox-item"))
	if added.Length() != 1 || added.AttrOr("data-run-id", "") != second.ID {
		t.Errorf("added %d items:\n%s", added.Length(), clip(res.body, 1500))
	}
	if inboxItem(res.doc, first.ID).Length() != 0 {
		t.Error("an unchanged item was sent again")
	}
	if got := res.doc.Find(`#inbox-count[hx-swap-oob]`).AttrOr("data-count", ""); got != "2" {
		t.Errorf("count %q, want 2", got)
	}
	if got := strings.TrimSpace(res.doc.Find(`#inbox-badge[hx-swap-oob]`).Text()); got != "2" {
		t.Errorf("badge %q, want 2", got)
	}
	shown.Add("shown", second.ID+":"+second.PendingDigest)
	mustStatus(t, vera.get("/inbox/updates?"+shown.Encode(), htmx()), http.StatusNoContent)

	mustRedirect(t, decide(t, oscar, first.ID, "approve", "looks right"), "/runs/"+first.ID)
	res = vera.get("/inbox/updates?"+shown.Encode(), htmx())
	mustStatus(t, res, http.StatusOK)
	line := res.doc.Find(`#inbox-item-` + first.ID + `[hx-swap-oob="outerHTML"]`)
	if line.AttrOr("data-testid", "") != "inbox-decided" || line.AttrOr("data-by", "") != oscarName ||
		strings.TrimSpace(line.Find(testid("decided-text")).Text()) != "Approved by oscar" {
		t.Errorf("decided line %q", line.Text())
	}
	if inboxItem(res.doc, second.ID).Length() != 0 {
		t.Error("the item still waiting was sent again")
	}
	if got := res.doc.Find(`#inbox-count[hx-swap-oob]`).AttrOr("data-count", ""); got != "1" {
		t.Errorf("count %q, want 1", got)
	}
	// Once the page shows the decided line, nothing is new.
	now := url.Values{"shown": {first.ID + ":", second.ID + ":" + second.PendingDigest}}
	a.waitTerminal(first.ID)
	mustStatus(t, vera.get("/inbox/updates?"+now.Encode(), htmx()), http.StatusNoContent)
}
