package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"countersign/engine"
	"countersign/engine/tools"
)

const publishDrafts = "Publish all draft pages."

// cardForm returns the decision form of the run page as a browser would
// submit it, with the button named by decision.
func cardForm(t *testing.T, c *client, runID, decision string) url.Values {
	t.Helper()
	page := c.get("/runs/" + runID)
	mustStatus(t, page, http.StatusOK)
	_, v := formValues(t, page.doc, testid("decision-form"))
	v.Set("decision", decision)
	return v
}

// pendingIDs lists the call ids of the card, in order.
func pendingIDs(t *testing.T, c *client, runID string) []string {
	t.Helper()
	page := c.get("/runs/" + runID)
	var ids []string
	page.doc.Find(testid("pending-call")).Each(func(_ int, s *goquery.Selection) {
		ids = append(ids, s.AttrOr("data-call-id", ""))
	})
	if len(ids) == 0 {
		t.Fatal("no pending calls on the card")
	}
	return ids
}

func TestPerCallDecisionsOverHTTP(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	olga := a.as(olgaName)
	w := a.waitingRun("editor", publishDrafts, olgaName)
	ids := pendingIDs(t, olga, w.ID)
	if len(ids) != 3 {
		t.Fatalf("%d pending calls, want the three drafts", len(ids))
	}
	f := cardForm(t, olga, w.ID, "calls")
	f.Set("verdict."+ids[0], "approve")
	f.Set("verdict."+ids[1], "deny")
	f.Set("text."+ids[1], "keep it as a draft")
	f.Set("verdict."+ids[2], "answer")
	f.Set("text."+ids[2], "The release notes go out on Monday.")
	res := olga.post("/tool/resume", f)
	mustRedirect(t, res, "/runs/"+w.ID)
	a.waitStatus(w.ID, engine.StatusCompleted)
	if n := a.revisions(); n != 1 {
		t.Fatalf("%d writes, want only the approved call", n)
	}
	ev, ok, _ := a.db.LastDecision(context.Background(), w.ID)
	if !ok || len(ev.Verdicts) != 3 || ev.Verdicts[1].Text != "keep it as a draft" || ev.Verdicts[2].Verdict != engine.VerdictAnswer || ev.By != olgaName {
		t.Fatalf("decision event %+v", ev)
	}
	page := olga.get("/runs/" + w.ID)
	if n := page.doc.Find(testid("verdict-line")).Length(); n != 3 {
		t.Errorf("the decision step shows %d verdicts, want 3", n)
	}
}

func TestEditIsPreviewedThenConfirmed(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	olga := a.as(olgaName)
	w := a.waitingRun("editor", publishAbout, olgaName)
	id := pendingIDs(t, olga, w.ID)[0]
	f := cardForm(t, olga, w.ID, "calls")
	f.Set("verdict."+id, "edit")
	f.Set("args."+id, `{"slug": "release-notes"}`)

	// Submitting an edit that was never previewed shows its preview and
	// decides nothing.
	res := olga.post("/tool/resume", f)
	mustStatus(t, res, http.StatusOK)
	if got := text(res.doc, testid("edit-preview")); !strings.Contains(got, "release-notes") {
		t.Fatalf("edit preview %q, want it to show the edited page", got)
	}
	if r := a.run(w.ID); r.Status != engine.StatusWaiting {
		t.Fatalf("an unconfirmed edit decided the run: %s", r.Status)
	}
	// The card keeps the edit; submitting it again confirms it.
	_, confirm := formValues(t, res.doc, testid("decision-form"))
	if confirm.Get("args."+id) != `{"slug": "release-notes"}` || confirm.Get("verdict."+id) != "edit" {
		t.Fatalf("the preview card lost the edit: %v", confirm)
	}
	confirm.Set("decision", "calls")
	mustRedirect(t, olga.post("/tool/resume", confirm), "/runs/"+w.ID)
	a.waitStatus(w.ID, engine.StatusCompleted)
	if p := a.page("release-notes"); p.Status != tools.StatusPublished {
		t.Errorf("the edited call did not run: release-notes is %s", p.Status)
	}
	if p := a.page("about"); p.Status == tools.StatusPublished {
		t.Error("the original call ran")
	}
	// Changing the arguments after the preview needs a new preview.
	w2 := a.waitingRun("editor", publishAbout, olgaName)
	id2 := pendingIDs(t, olga, w2.ID)[0]
	f2 := cardForm(t, olga, w2.ID, "preview")
	f2.Set("verdict."+id2, "edit")
	f2.Set("args."+id2, `{"slug":"old-announcement"}`)
	res = olga.post("/tool/resume", f2)
	_, sealed := formValues(t, res.doc, testid("decision-form"))
	sealed.Set("args."+id2, `{"slug":"about"}`)
	sealed.Set("decision", "calls")
	res = olga.post("/tool/resume", sealed)
	mustStatus(t, res, http.StatusOK)
	if r := a.run(w2.ID); r.Status != engine.StatusWaiting {
		t.Fatal("arguments changed after their preview were run without a new preview")
	}
}

func TestPerCallDecisionRefusals(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	w := a.waitingRun("editor-4eyes", publishDrafts, olgaName)
	olga, oscar := a.as(olgaName), a.as(oscarName)
	ids := pendingIDs(t, oscar, w.ID)
	unchanged := func(t *testing.T) {
		t.Helper()
		if r := a.run(w.ID); r.Status != engine.StatusWaiting || r.PendingDigest != w.PendingDigest {
			t.Fatalf("a refused decision changed the run: %s", r.Status)
		}
		if _, ok, _ := a.db.LastDecision(context.Background(), w.ID); ok {
			t.Fatal("a refused decision wrote an event")
		}
	}
	all := func(c *client, verdict string) url.Values {
		f := cardForm(t, c, w.ID, "calls")
		for _, id := range ids {
			f.Set("verdict."+id, verdict)
		}
		return f
	}
	cases := []struct {
		name    string
		as      *client
		form    func() url.Values
		status  int
		message string
	}{
		{"unknown call id", oscar, func() url.Values { f := all(oscar, "approve"); f.Set("verdict.nope", "approve"); return f },
			http.StatusUnprocessableEntity, `no pending call "nope"`},
		{"a call without a verdict", oscar, func() url.Values { f := all(oscar, "approve"); f.Del("verdict." + ids[1]); return f },
			http.StatusUnprocessableEntity, "has no verdict"},
		{"two verdicts for one call", oscar, func() url.Values { f := all(oscar, "approve"); f.Add("verdict."+ids[0], "deny"); return f },
			http.StatusUnprocessableEntity, "two verdicts"},
		{"an edit that is not an object", oscar, func() url.Values {
			f := all(oscar, "approve")
			f.Set("verdict."+ids[0], "edit")
			f.Set("args."+ids[0], `["about"]`)
			return f
		}, http.StatusUnprocessableEntity, "must be a JSON object"},
		{"an edit that fails the schema", oscar, func() url.Values {
			f := all(oscar, "approve")
			f.Set("verdict."+ids[0], "edit")
			f.Set("args."+ids[0], `{"slug": 7}`)
			return f
		}, http.StatusUnprocessableEntity, "do not fit the tool"},
		{"an edit by the initiator of a four-eyes run", olga, func() url.Values {
			f := all(olga, "deny")
			f.Set("verdict."+ids[0], "edit")
			f.Set("args."+ids[0], `{"slug":"about"}`)
			f.Set("previewed."+ids[0], "")
			return f
		}, http.StatusForbidden, "another operator"},
		{"an approval by the initiator of a four-eyes run", olga, func() url.Values { return all(olga, "approve") },
			http.StatusForbidden, "another operator"},
		{"an empty answer", oscar, func() url.Values {
			f := all(oscar, "approve")
			f.Set("verdict."+ids[0], "answer")
			return f
		}, http.StatusUnprocessableEntity, "Write the answer"},
		{"a stale digest", oscar, func() url.Values { f := all(oscar, "deny"); f.Set("digest", strings.Repeat("0", 64)); return f },
			http.StatusConflict, "no longer pending"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.as.post("/tool/resume", tc.form())
			mustCleanError(t, res, tc.status)
			body := res.doc.Text()
			if !strings.Contains(body, tc.message) {
				t.Errorf("answer does not say %q:\n%s", tc.message, clip(body, 600))
			}
			unchanged(t)
		})
	}
}

func TestQuestionIsAnsweredOverHTTP(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	olga := a.as(olgaName)
	w := a.waitingRun("editor", "Set the price on the offers page to $12.", olgaName)
	page := olga.get("/runs/" + w.ID)
	q := page.doc.Find(testid("pending-call") + `[data-kind="question"]`)
	if q.Length() != 1 || !strings.Contains(q.Find(testid("question")).Text(), "?") {
		t.Fatalf("the card shows no question:\n%s", clip(page.doc.Find(testid("approval-card")).Text(), 600))
	}
	if q.Find(testid("verdict-approve")).Length() != 0 || q.Find(testid("verdict-edit")).Length() != 0 {
		t.Error("a question offers approve or edit")
	}
	id := q.AttrOr("data-call-id", "")
	inbox := olga.get("/inbox")
	if got := text(inbox.doc, testid("inbox-item")); !strings.Contains(got, "question") {
		t.Errorf("the inbox does not show the question: %q", got)
	}
	// Deny all does not answer a question.
	f := cardForm(t, olga, w.ID, "deny")
	f.Del("text." + id)
	mustCleanError(t, olga.post("/tool/resume", f), http.StatusUnprocessableEntity)
	f = cardForm(t, olga, w.ID, "calls")
	f.Set("text."+id, "pricing")
	mustRedirect(t, olga.post("/tool/resume", f), "/runs/"+w.ID)
	// The agent goes on with the answer: the update of pricing waits.
	next := a.waitStatus(w.ID, engine.StatusWaiting)
	for next.PendingDigest == w.PendingDigest {
		next = a.waitStatus(w.ID, engine.StatusWaiting)
	}
	if got := text(olga.get("/runs/"+w.ID).doc, testid("approval-card")+" .tool-name"); got != "update_page" {
		t.Fatalf("after the answer the card is for %q, want update_page", got)
	}
	ev, _, _ := a.db.LastDecision(context.Background(), w.ID)
	if len(ev.Verdicts) != 1 || ev.Verdicts[0].Verdict != engine.VerdictAnswer || ev.Verdicts[0].Text != "pricing" {
		t.Fatalf("decision event %+v", ev)
	}
}

// TestEditedStateIsShownDamaged: a stored state edited so that it still
// decodes, but names another call than the turn the run waits on, is
// damaged, not a stale decision to make again; the run can be cancelled.
func TestEditedStateIsShownDamaged(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	olga := a.as(olgaName)
	r := a.waitingRun("editor", publishAbout, oscarName)
	st, err := engine.DecodeState(a.rawSuspendedState(r.ID))
	if err != nil {
		t.Fatal(err)
	}
	st.Pending[0].Arguments = `{"slug":"pricing"}`
	st.Transcript[len(st.Transcript)-1].ToolCalls[0].Arguments = `{"slug":"pricing"}`
	edited, err := engine.EncodeState(st)
	if err != nil {
		t.Fatal(err)
	}
	a.setSuspendedState(r.ID, edited)

	page := olga.get("/runs/" + r.ID)
	if got := text(page.doc, testid("card-error")); !strings.Contains(got, "damaged") {
		t.Errorf("card error %q, want it to say the state is damaged", got)
	}
	if page.doc.Find(testid("decision-form")).Length() != 0 {
		t.Error("a damaged card offers a decision")
	}
	f := url.Values{"_csrf": {olga.csrf}, "run_id": {r.ID}, "digest": {r.PendingDigest}, "decision": {"approve"}}
	mustRunPageWith(t, a, olga.post("/tool/resume", f), http.StatusConflict, "Damaged run state", r.ID)
	if got := a.run(r.ID); got.Status != engine.StatusWaiting {
		t.Fatalf("the refused decision changed the run: %s", got.Status)
	}
	olga.get("/runs/" + r.ID)
	mustRedirect(t, olga.submit("/runs/"+r.ID+"/cancel", nil), "/runs/"+r.ID)
	a.waitStatus(r.ID, engine.StatusCancelled) // fails the test if it never is
}

// TestInboxShowsTheTimeLeft: a turn with an approval deadline shows how
// long it may still wait, and is marked when close to its deadline.
func TestInboxShowsTheTimeLeft(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	a := newTestApp(t, withClock(now))
	olga := a.as(olgaName)
	quick := a.waitingRun("editor-quick", publishAbout, olgaName)
	plain := a.waitingRun("editor", publishAbout, olgaName)
	if quick.DeadlineAt.IsZero() || !plain.DeadlineAt.IsZero() {
		t.Fatalf("deadlines: quick %v, editor %v", quick.DeadlineAt, plain.DeadlineAt)
	}
	row := func(id string) *goquery.Selection {
		return olga.get("/inbox").doc.Find(testid("inbox-item") + `[data-run-id="` + id + `"] ` + testid("time-left"))
	}
	if got := strings.TrimSpace(row(quick.ID).Text()); !strings.HasPrefix(got, "1m5") && !strings.HasPrefix(got, "2m") ||
		row(quick.ID).Find(testid("deadline-soon")).Length() != 0 {
		t.Errorf("time left %q, want about 2m and not yet soon", got)
	}
	if got := row(plain.ID).Text(); !strings.Contains(got, "no deadline") {
		t.Errorf("a turn without a deadline shows %q", got)
	}
	mu.Lock()
	clock = clock.Add(100 * time.Second)
	mu.Unlock()
	if row(quick.ID).Find(testid("deadline-soon")).Length() != 1 {
		t.Errorf("20 s before its deadline the turn is not marked: %q", row(quick.ID).Text())
	}
}
