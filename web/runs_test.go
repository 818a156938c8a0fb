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
	"countersign/engine/models/demo"
	"countersign/engine/tools"
)

// TestPlayground: the playground lists the agents and their examples; an
// example starts a run; a refused start shows the form again, filled in,
// and stores nothing.
func TestPlayground(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	olga := a.as(olgaName)
	page := olga.get("/runs/new")
	mustStatus(t, page, http.StatusOK)

	var names []string
	page.doc.Find(testid("agent")).Each(func(_ int, s *goquery.Selection) { names = append(names, s.AttrOr("data-agent", "")) })
	if want := []string{"editor", "editor-4eyes", "researcher", "editor-quick", "files"}; !slices.Equal(names, want) {
		t.Errorf("agents %v, want %v", names, want)
	}
	examples := 0
	for _, ag := range a.agents {
		n := page.doc.Find(testid("agent") + `[data-agent="` + ag.Name + `"] ` + testid("example")).Length()
		if n != len(ag.Examples) || n == 0 {
			t.Errorf("agent %s: %d example buttons, want %d", ag.Name, n, len(ag.Examples))
		}
		examples += n
		four := page.doc.Find(testid("agent")+`[data-agent="`+ag.Name+`"] `+testid("second-approver")).Length() == 1
		if four != ag.SecondApprover {
			t.Errorf("agent %s: second-approver mark %v, want %v", ag.Name, four, ag.SecondApprover)
		}
	}
	if got := page.doc.Find(testid("example")).Length(); got != examples {
		t.Errorf("%d example buttons in all, want %d", got, examples)
	}
	if got := page.doc.Find(testid("model-select") + ` input[type=radio][name=model]`).Length(); got != 1 {
		t.Errorf("%d models offered, want the demo model only", got)
	}
	if got := strings.TrimSpace(page.doc.Find(testid("model-option") + " " + testid("model-desc")).Text()); got != demo.Description {
		t.Errorf("the demo model is described as %q, want its whole description %q", got, demo.Description)
	}
	if got := attr(page.doc, "[data-testid=nav-playground]", "aria-current"); got != "page" {
		t.Errorf("playground nav entry not marked current: %q", got)
	}

	t.Run("example starts a run", func(t *testing.T) {
		a, olga := a.with(t), olga.with(t)
		btn := page.doc.Find(testid("example") + `[data-agent="editor"]`).FilterFunction(func(_ int, s *goquery.Selection) bool {
			return strings.TrimSpace(s.Text()) == publishAbout
		})
		if btn.Length() != 1 {
			t.Fatalf("no example button %q", publishAbout)
		}
		action, form := formOf(btn.Closest("form"))
		if action != "/runs" || form.Get("_csrf") != olga.csrf {
			t.Fatalf("example form posts to %q with token %q", action, form.Get("_csrf"))
		}
		id := runIDFrom(t, olga.post(action, form))
		r := a.run(id)
		if r.Agent != "editor" || r.Model != "demo" || r.Prompt != publishAbout || r.InitiatedBy != olgaName || r.Status != engine.StatusQueued {
			t.Errorf("stored run %+v", r)
		}
		mustStatus(t, olga.get("/runs/"+id), http.StatusOK)
	})

	t.Run("refused", func(t *testing.T) {
		long := strings.Repeat("a", engine.MaxPromptBytes+1)
		for _, tc := range []struct {
			name, agent, model, prompt, refill, message string
		}{
			{"unknown agent", "nope", "demo", publishAbout, publishAbout, "That agent is not configured on this server."},
			{"unknown model", "researcher", "gpt-9", publishAbout, publishAbout, "That model is not configured on this server."},
			{"empty prompt", "researcher", "demo", "", "", "The prompt must be 1 to 8000 bytes"},
			{"blank prompt", "researcher", "demo", " \n\t ", "", "The prompt must be 1 to 8000 bytes"},
			{"prompt over 8,000 bytes", "researcher", "demo", long, long, "The prompt must be 1 to 8000 bytes"},
			{"prompt not UTF-8", "researcher", "demo", "publish \xff\xfe", "publish \uFFFD", "The prompt must be 1 to 8000 bytes"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				a, olga := a.with(t), olga.with(t)
				before := a.countRuns()
				olga.get("/runs/new")
				res := olga.submit("/runs", url.Values{"agent": {tc.agent}, "model": {tc.model}, "prompt": {tc.prompt}})
				mustCleanError(t, res, http.StatusUnprocessableEntity)
				if got := text(res.doc, testid("form-error")); !strings.Contains(got, tc.message) {
					t.Errorf("form error %q, want it to say %q", got, tc.message)
				}
				if got := res.doc.Find(testid("prompt")).Text(); got != tc.refill {
					t.Errorf("prompt refilled with %d bytes %q, want %d bytes", len(got), clip(got, 40), len(tc.refill))
				}
				if tc.agent == "researcher" {
					if got := attr(res.doc, testid("agent-select")+" option[selected]", "value"); got != "researcher" {
						t.Errorf("agent %q selected, want researcher kept", got)
					}
				}
				if res.doc.Find(testid("new-run-form")).Length() != 1 || res.doc.Find(testid("example")).Length() != examples {
					t.Error("the playground is not shown again")
				}
				if n := a.countRuns(); n != before {
					t.Errorf("%d runs stored, want %d", n, before)
				}
			})
		}
	})

	t.Run("prompt of exactly 8,000 bytes", func(t *testing.T) {
		olga := olga.with(t)
		olga.get("/runs/new")
		p := strings.Repeat("é", engine.MaxPromptBytes/2)
		id := runIDFrom(t, olga.submit("/runs", url.Values{"agent": {"researcher"}, "model": {"demo"}, "prompt": {p}}))
		if got := a.with(t).run(id).Prompt; got != p {
			t.Errorf("stored prompt of %d bytes, want %d", len(got), len(p))
		}
	})
}

// startFromForm starts a run through the playground form and returns its id.
func startFromForm(t *testing.T, c *client, agent, prompt string) string {
	t.Helper()
	page := c.get("/runs/new")
	mustStatus(t, page, http.StatusOK)
	action, form := formValues(t, page.doc, testid("new-run-form"))
	form.Set("agent", agent)
	form.Set("prompt", prompt)
	return runIDFrom(t, c.post(action, form))
}

// decide posts the decision form of the run page as a browser would: its
// hidden fields, a reason, and the button pressed.
func decide(t *testing.T, c *client, runID, decision, reason string, opts ...reqOpt) *response {
	t.Helper()
	page := c.get("/runs/" + runID)
	mustStatus(t, page, http.StatusOK)
	action, form := formValues(t, page.doc, testid("decision-form"))
	form.Set("decision", decision)
	form.Set("reason", reason)
	return c.post(action, form, opts...)
}

// page returns a page of the demo workspace.
func (a *testApp) page(slug string) tools.Page {
	a.t.Helper()
	p, err := a.db.Pages().GetPage(context.Background(), slug)
	if err != nil {
		a.t.Fatalf("page %s: %v", slug, err)
	}
	return p
}

func (a *testApp) revisions() int {
	a.t.Helper()
	n, err := a.db.Pages().Revisions(context.Background())
	if err != nil {
		a.t.Fatal(err)
	}
	return n
}

// TestApprovalCycle drives "Publish the about page." with the demo model: the
// run waits, the page shows the pending call, and a decision without
// JavaScript (post, redirect, get, flash) or with htmx carries it on.
func TestApprovalCycle(t *testing.T) {
	t.Parallel()

	t.Run("waiting run page", func(t *testing.T) {
		t.Parallel()
		a := newTestApp(t)
		olga := a.as(olgaName)
		id := startFromForm(t, olga, "editor", publishAbout)
		r := a.waitStatus(id, engine.StatusWaiting)
		page := olga.get("/runs/" + id)
		mustStatus(t, page, http.StatusOK)
		d := page.doc

		if got := attr(d, testid("run-status"), "data-status"); got != "waiting_for_approval" {
			t.Errorf("status badge %q", got)
		}
		if got := attr(d, testid("run-header"), "data-status"); got != "waiting_for_approval" {
			t.Errorf("header status %q", got)
		}
		for sel, want := range map[string]string{testid("run-id"): id, testid("run-agent"): "editor",
			testid("run-model"): "demo", testid("run-initiator"): olgaName} {
			if got := text(d, sel); got != want {
				t.Errorf("%s = %q, want %q", sel, got, want)
			}
		}
		steps := d.Find("#steps")
		if got, want := stepKinds(steps), []string{"prompt", "model_turn", "suspended"}; !slices.Equal(got, want) {
			t.Errorf("steps %v, want %v", got, want)
		}
		if got, want := stepSeqs(t, steps), []int64{1, 2, 3}; !slices.Equal(got, want) {
			t.Errorf("seqs %v, want %v", got, want)
		}
		if got := text(d, testid("prompt-text")); got != publishAbout {
			t.Errorf("prompt %q", got)
		}
		if got := text(d, `[data-kind="model_turn"] `+testid("tool-call")+" .tool-name"); got != "publish_page" {
			t.Errorf("model turn calls %q", got)
		}

		card := d.Find(testid("approval-card"))
		if card.Length() != 1 {
			t.Fatalf("no approval card:\n%s", page.body)
		}
		calls := card.Find(testid("pending-call"))
		if calls.Length() != 1 || strings.TrimSpace(calls.Find(".tool-name").Text()) != "publish_page" {
			t.Errorf("pending calls: %q", calls.Text())
		}
		if arg := calls.Find(testid("pending-args") + ` [data-arg="slug"] dd`); strings.TrimSpace(arg.Text()) != "about" || !arg.HasClass("arg-text") {
			t.Errorf("pending args %q", calls.Find(testid("pending-args")).Text())
		}
		var preview []string
		calls.Find(testid("preview") + " div").Each(func(_ int, s *goquery.Selection) { preview = append(preview, s.Text()) })
		if want := []string{"publish about: draft -> published"}; !slices.Equal(preview, want) {
			t.Errorf("preview %q, want %q", preview, want)
		}
		form := card.Find(testid("decision-form"))
		for name, want := range map[string]string{"run_id": id, "digest": r.PendingDigest, "_csrf": olga.csrf} {
			got, ok := form.Find(`input[type="hidden"][name="` + name + `"]`).Attr("value")
			if !ok || got != want || want == "" {
				t.Errorf("hidden %s = %q, want %q", name, got, want)
			}
		}
		approve := form.Find(`button[name="decision"][value="approve"]` + testid("approve"))
		deny := form.Find(`button[name="decision"][value="deny"]` + testid("deny"))
		if approve.Length() != 1 || deny.Length() != 1 {
			t.Error("want an approve and a deny button")
		}
		if _, disabled := approve.Attr("disabled"); disabled {
			t.Error("approve is disabled for an operator who may approve")
		}
		if card.Find(testid("card-note")).Length() != 0 || card.Find(testid("card-error")).Length() != 0 {
			t.Errorf("unexpected note or error: %q", card.Text())
		}
		if got := attr(d, testid("poller"), "hx-get"); got != "/runs/"+id+"/steps?after=3&turn="+r.PendingDigest {
			t.Errorf("a waiting run polls %q, want the slow poll of its turn", got)
		}
		if d.Find("#run-header + #approval-card").Length() != 1 {
			t.Error("the card is not right under the header")
		}
		if got := text(d, testid("inbox-badge")); got != "1" {
			t.Errorf("inbox badge %q, want 1", got)
		}
		if d.Find(testid("cancel-run")).Length() != 1 {
			t.Error("an operator sees no cancel button on a waiting run")
		}

		// A viewer sees the card but cannot decide.
		vera := a.as(veraName)
		vp := vera.get("/runs/" + id)
		if vp.doc.Find(testid("approval-card")).Length() != 1 || vp.doc.Find(testid("decision-form")).Length() != 0 ||
			vp.doc.Find(testid("card-readonly")).Length() != 1 || vp.doc.Find(testid("cancel-run")).Length() != 0 {
			t.Errorf("viewer's card:\n%s", vp.doc.Find("#approval-card").Text())
		}
	})

	t.Run("approve without JavaScript", func(t *testing.T) {
		t.Parallel()
		a := newTestApp(t)
		olga := a.as(olgaName)
		id := startFromForm(t, olga, "editor", publishAbout)
		a.waitStatus(id, engine.StatusWaiting)

		mustRedirect(t, decide(t, olga, id, "approve", ""), "/runs/"+id)
		next := olga.get("/runs/" + id)
		if got := text(next.doc, testid("flash")); got != "Approved. The run carries on." || attr(next.doc, testid("flash"), "data-kind") != "ok" {
			t.Errorf("flash %q", got)
		}
		if olga.get("/runs/"+id).doc.Find(testid("flash")).Length() != 0 {
			t.Error("the flash is shown twice")
		}
		a.waitStatus(id, engine.StatusCompleted)
		if p := a.page("about"); p.Status != tools.StatusPublished {
			t.Errorf("about is %s, want published", p.Status)
		}
		if n := a.revisions(); n != 1 {
			t.Errorf("%d revisions, want 1", n)
		}

		done := olga.get("/runs/" + id)
		d := done.doc
		if got := attr(d, testid("run-status"), "data-status"); got != "completed" {
			t.Errorf("status %q", got)
		}
		kinds := stepKinds(d.Find("#steps"))
		for _, k := range []string{"prompt", "model_turn", "suspended", "decision", "tool_started", "tool_finished", "finished"} {
			if !slices.Contains(kinds, k) {
				t.Errorf("no %s step in %v", k, kinds)
			}
		}
		seqs := stepSeqs(t, d.Find("#steps"))
		for i, s := range seqs {
			if s != int64(i+1) {
				t.Fatalf("seqs %v are not 1..n", seqs)
			}
		}
		dec := d.Find(testid("decision"))
		if dec.AttrOr("data-decision", "") != "approve" || !strings.Contains(dec.Text(), olgaName) {
			t.Errorf("decision step %q", dec.Text())
		}
		if d.Find(testid("write-mark")).Length() != 1 {
			t.Error("the approved write is not marked")
		}
		if got := text(d, testid("final-answer")); !strings.Contains(got, "I published the page") {
			t.Errorf("final answer %q", got)
		}
		if d.Find(testid("approval-card")).Length() != 0 || d.Find("#approval-card").Length() != 1 {
			t.Error("want an empty approval slot on a finished run")
		}
		if d.Find(testid("cancel-run")).Length() != 0 {
			t.Error("a finished run offers cancel")
		}
	})

	t.Run("deny with a reason", func(t *testing.T) {
		t.Parallel()
		a := newTestApp(t)
		olga := a.as(olgaName)
		id := startFromForm(t, olga, "editor", publishAbout)
		a.waitStatus(id, engine.StatusWaiting)
		const reason = "Not before the launch on Monday"

		mustRedirect(t, decide(t, olga, id, "deny", reason), "/runs/"+id)
		flash := olga.get("/runs/" + id).doc.Find(testid("flash"))
		if got := strings.TrimSpace(flash.Text()); got != "Denied. The agent is told not to retry." || flash.AttrOr("data-kind", "") != "info" {
			t.Errorf("flash %q of kind %q, want the denial as info, not a success", got, flash.AttrOr("data-kind", ""))
		}
		a.waitStatus(id, engine.StatusCompleted)
		if p := a.page("about"); p.Status != tools.StatusDraft {
			t.Errorf("about is %s, want draft", p.Status)
		}
		if n := a.revisions(); n != 0 {
			t.Errorf("%d revisions, want 0", n)
		}
		d := olga.get("/runs/" + id).doc
		dec := d.Find(testid("decision"))
		if dec.AttrOr("data-decision", "") != "deny" || !strings.Contains(dec.Text(), olgaName) {
			t.Errorf("decision step %q", dec.Text())
		}
		if got := text(d, testid("reason")); got != reason {
			t.Errorf("reason %q", got)
		}
		if got := text(d, `[data-kind="tool_finished"] `+testid("outcome")); got != "denied" {
			t.Errorf("outcome %q, want denied", got)
		}
		if d.Find(testid("write-mark")).Length() != 0 {
			t.Error("a denied call was run")
		}
		if got := text(d, testid("final-answer")); !strings.Contains(got, reason) {
			t.Errorf("final answer %q does not quote the reason", got)
		}
	})

	t.Run("approve with htmx", func(t *testing.T) {
		t.Parallel()
		a := newTestApp(t)
		olga := a.as(olgaName)
		id := startFromForm(t, olga, "editor", publishAbout)
		a.waitStatus(id, engine.StatusWaiting)

		res := decide(t, olga, id, "approve", "", htmx())
		mustStatus(t, res, http.StatusOK)
		d := res.doc
		if d.Find("nav").Length() != 0 {
			t.Error("htmx got a whole page")
		}
		slot := d.Find("#approval-card")
		if slot.Length() != 1 || slot.Children().Length() != 0 || strings.TrimSpace(slot.Text()) != "" {
			t.Errorf("want an empty #approval-card, got %q", slot.Text())
		}
		if _, oob := slot.Attr("hx-swap-oob"); oob {
			t.Error("the card is the form's target, not out of band")
		}
		flash := d.Find(`#flash[hx-swap-oob] ` + testid("flash"))
		if strings.TrimSpace(flash.Text()) != "Approved. The run carries on." {
			t.Errorf("flash %q", flash.Text())
		}
		poller := d.Find(`#poller[hx-swap-oob]`)
		get, ok := poller.Attr("hx-get")
		if !ok || !strings.HasPrefix(get, "/runs/"+id+"/steps?after=") || poller.AttrOr("data-active", "") != "true" {
			t.Fatalf("want an active poller, got hx-get=%q:\n%s", get, res.body)
		}

		t.Run("polling resumes after the steps shown", func(t *testing.T) {
			// The page showed steps 1 to 3; asking after 0 would append
			// them again.
			if get != "/runs/"+id+"/steps?after=3" {
				t.Errorf("poller asks %q, want after=3", get)
			}
		})

		a.waitStatus(id, engine.StatusCompleted)
		poll := olga.get("/runs/"+id+"/steps?after=3", htmx())
		mustStatus(t, poll, http.StatusOK)
		seqs := stepSeqs(t, poll.doc.Selection)
		if len(seqs) == 0 || seqs[0] != 4 || stepKinds(poll.doc.Selection)[0] != "decision" {
			t.Errorf("steps after 3: %v %v", seqs, stepKinds(poll.doc.Selection))
		}
		if _, ok := poll.doc.Find("#poller").Attr("hx-get"); ok {
			t.Error("polling goes on after the run ended")
		}
		if p := a.page("about"); p.Status != tools.StatusPublished {
			t.Errorf("about is %s", p.Status)
		}
	})
}

// mustRunPageWith checks a refusal answered with the run page: the status,
// an error flash naming title, the run still waiting, and the current card.
func mustRunPageWith(t *testing.T, a *testApp, res *response, status int, title string, runID string) {
	t.Helper()
	mustCleanError(t, res, status)
	flash := res.doc.Find(testid("flash"))
	if flash.AttrOr("data-kind", "") != "error" || !strings.HasPrefix(strings.TrimSpace(flash.Text()), title) {
		t.Errorf("flash %q, want an error starting %q", flash.Text(), title)
	}
	if got := text(res.doc, testid("run-id")); got != runID {
		t.Errorf("page of run %q, want %q", got, runID)
	}
}

// TestResumeRefused: every way /tool/resume refuses a decision, with its
// status, a readable answer, and the run left as it was.
func TestResumeRefused(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	w := a.waitingRun("editor", publishAbout, olgaName)
	olga, vera := a.as(olgaName), a.as(veraName)
	stillWaiting := func(t *testing.T) {
		t.Helper()
		if r := a.with(t).run(w.ID); r.Status != engine.StatusWaiting || r.PendingDigest != w.PendingDigest {
			t.Errorf("run is %s on %q, want it waiting on %q", r.Status, r.PendingDigest, w.PendingDigest)
		}
	}
	valid := func(c *client) url.Values {
		return url.Values{"_csrf": {c.csrf}, "run_id": {w.ID}, "digest": {w.PendingDigest}, "decision": {"approve"}}
	}

	t.Run("unknown run", func(t *testing.T) {
		olga := olga.with(t)
		for _, id := range []string{"01JNOSUCHRUN000000000000000", ""} {
			f := valid(olga)
			f.Set("run_id", id)
			res := olga.post("/tool/resume", f)
			mustCleanError(t, res, http.StatusNotFound)
			if got := text(res.doc, testid("error-status")); got != "404" {
				t.Errorf("error status %q", got)
			}
		}
	})

	t.Run("viewer", func(t *testing.T) {
		vera := vera.with(t)
		vera.get("/runs/" + w.ID)
		mustCleanError(t, vera.post("/tool/resume", valid(vera)), http.StatusForbidden)
		stillWaiting(t)
	})

	t.Run("bad decision", func(t *testing.T) {
		olga := olga.with(t)
		for _, dec := range []string{"maybe", "", "APPROVE"} {
			f := valid(olga)
			f.Set("decision", dec)
			res := olga.post("/tool/resume", f)
			mustRunPageWith(t, a, res, http.StatusUnprocessableEntity, "Check your input", w.ID)
			if got := text(res.doc, testid("card-error")); got != "The decision must be approve or deny." {
				t.Errorf("card error %q", got)
			}
			stillWaiting(t)
		}
	})

	t.Run("reason too long", func(t *testing.T) {
		olga := olga.with(t)
		f := valid(olga)
		f.Set("decision", "deny")
		f.Set("reason", strings.Repeat("é", engine.MaxReasonRunes+1))
		res := olga.post("/tool/resume", f)
		mustRunPageWith(t, a, res, http.StatusUnprocessableEntity, "Check your input", w.ID)
		if res.doc.Find(testid("decision-form")).Length() != 1 {
			t.Error("the card is not shown again")
		}
		stillWaiting(t)
	})

	t.Run("stale digest", func(t *testing.T) {
		olga := olga.with(t)
		f := valid(olga)
		f.Set("digest", strings.Repeat("0", 64))
		res := olga.post("/tool/resume", f)
		mustRunPageWith(t, a, res, http.StatusConflict, "Stale decision", w.ID)
		card := res.doc.Find(testid("approval-card"))
		if got := card.Find(`input[name="digest"]`).AttrOr("value", ""); got != w.PendingDigest {
			t.Errorf("card digest %q, want the current %q", got, w.PendingDigest)
		}
		if card.Find(testid("card-error")).Length() != 1 {
			t.Error("the card does not say why")
		}
		stillWaiting(t)

		// With htmx: the current card in place, the reason in the flash.
		res = olga.post("/tool/resume", f, htmx())
		mustStatus(t, res, http.StatusConflict)
		if res.doc.Find("nav").Length() != 0 {
			t.Error("htmx got a whole page")
		}
		if got := res.doc.Find(testid("approval-card")+` input[name="digest"]`).AttrOr("value", ""); got != w.PendingDigest {
			t.Errorf("fragment card digest %q", got)
		}
		if res.doc.Find(`#flash[hx-swap-oob] [data-kind="error"]`).Length() != 1 {
			t.Errorf("no error flash:\n%s", res.body)
		}
		stillWaiting(t)
	})

	t.Run("already decided", func(t *testing.T) {
		a := a.with(t)
		r := a.waitingRun("editor", deleteOld, olgaName)
		olga, oscar := olga.with(t), a.as(oscarName)
		first := url.Values{"_csrf": {olga.csrf}, "run_id": {r.ID}, "digest": {r.PendingDigest}, "decision": {"approve"}}
		mustRedirect(t, olga.post("/tool/resume", first), "/runs/"+r.ID)
		// No worker resumes it here: it stays running, claimed by olga's decision.
		oscar.get("/runs/" + r.ID)
		second := url.Values{"_csrf": {oscar.csrf}, "run_id": {r.ID}, "digest": {r.PendingDigest}, "decision": {"deny"}}
		res := oscar.post("/tool/resume", second)
		mustRunPageWith(t, a, res, http.StatusConflict, "Already decided", r.ID)
		if got := text(res.doc, testid("flash")); !strings.Contains(got, "Approved by "+olgaName) {
			t.Errorf("409 does not say who decided: %q", got)
		}
		if ev, ok, _ := a.db.LastDecision(context.Background(), r.ID); !ok || ev.By != olgaName || ev.Decision != "approve" {
			t.Errorf("last decision %+v", ev)
		}
	})

	t.Run("concurrent decisions: exactly one wins", func(t *testing.T) {
		a := a.with(t)
		r := a.waitingRun("editor", publishAbout, oscarName)
		const n = 8
		clients := make([]*client, n)
		for i := range clients {
			clients[i] = a.as([]string{olgaName, adminName}[i%2])
			clients[i].get("/runs/" + r.ID)
		}
		codes := make(chan int, n)
		start := make(chan struct{})
		for _, c := range clients {
			go func() {
				<-start
				f := url.Values{"_csrf": {c.csrf}, "run_id": {r.ID}, "digest": {r.PendingDigest}, "decision": {"approve"}}
				res, err := c.http.PostForm(a.srv.URL+"/tool/resume", f)
				if err != nil {
					codes <- 0
					return
				}
				res.Body.Close()
				codes <- res.StatusCode
			}()
		}
		close(start)
		won, lost := 0, 0
		for range n {
			switch <-codes {
			case http.StatusSeeOther:
				won++
			case http.StatusConflict:
				lost++
			}
		}
		if won != 1 || lost != n-1 {
			t.Errorf("%d won, %d got 409, want 1 and %d", won, lost, n-1)
		}
	})

	t.Run("corrupt state", func(t *testing.T) {
		a := a.with(t)
		r := a.waitingRun("editor", publishAbout, oscarName)
		garbage := []byte(`{"version":1,"transcript":[{"role":`)
		a.setSuspendedState(r.ID, garbage)

		page := olga.with(t).get("/runs/" + r.ID)
		mustStatus(t, page, http.StatusOK)
		if got := text(page.doc, testid("card-error")); !strings.Contains(got, "damaged") {
			t.Errorf("card error %q", got)
		}
		if page.doc.Find(testid("decision-form")).Length() != 0 {
			t.Error("a damaged card offers a decision")
		}
		for _, dec := range []string{"approve", "deny"} {
			f := url.Values{"_csrf": {olga.csrf}, "run_id": {r.ID}, "digest": {r.PendingDigest}, "decision": {dec}}
			res := olga.with(t).post("/tool/resume", f)
			mustRunPageWith(t, a, res, http.StatusConflict, "Damaged run state", r.ID)
			got := a.run(r.ID)
			if got.Status != engine.StatusWaiting || got.PendingDigest != r.PendingDigest {
				t.Errorf("after %s the run is %s", dec, got.Status)
			}
			if st := a.rawSuspendedState(r.ID); string(st) != string(garbage) {
				t.Errorf("state changed to %q", st)
			}
		}
		inbox := olga.with(t).get("/inbox")
		row := inbox.doc.Find(testid("inbox-item") + `[data-run-id="` + r.ID + `"]`)
		if !strings.Contains(row.Text(), "(damaged state)") {
			t.Errorf("inbox row %q", row.Text())
		}
		// It can still be cancelled.
		olga.with(t).get("/runs/" + r.ID)
		mustRedirect(t, olga.with(t).submit("/runs/"+r.ID+"/cancel", nil), "/runs/"+r.ID)
	})

	t.Run("reason of 2,000 characters is accepted", func(t *testing.T) {
		a := a.with(t)
		r := a.waitingRun("editor", publishAbout, oscarName)
		reason := strings.Repeat("é", engine.MaxReasonRunes)
		f := url.Values{"_csrf": {olga.csrf}, "run_id": {r.ID}, "digest": {r.PendingDigest}, "decision": {"deny"}, "reason": {reason}}
		mustRedirect(t, olga.with(t).post("/tool/resume", f), "/runs/"+r.ID)
		if ev, ok, _ := a.db.LastDecision(context.Background(), r.ID); !ok || ev.Reason != reason {
			t.Errorf("stored reason of %d bytes", len(ev.Reason))
		}
	})
}

// TestResumeAfterRunEnded: a decision on a turn that was decided and whose
// run has already finished is 409 and names who decided.
func TestResumeAfterRunEnded(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	olga, oscar := a.as(olgaName), a.as(oscarName)
	id := startFromForm(t, olga, "editor", publishAbout)
	r := a.waitStatus(id, engine.StatusWaiting)
	oscar.get("/runs/" + id)
	stale := url.Values{"_csrf": {oscar.csrf}, "run_id": {id}, "digest": {r.PendingDigest}, "decision": {"approve"}}
	mustRedirect(t, decide(t, olga, id, "approve", ""), "/runs/"+id)
	a.waitStatus(id, engine.StatusCompleted)

	res := oscar.post("/tool/resume", stale)
	mustCleanError(t, res, http.StatusConflict)
	if n := a.revisions(); n != 1 {
		t.Errorf("%d revisions, want 1: the call ran twice", n)
	}
	if got := text(res.doc, testid("flash")); !strings.Contains(got, "Already decided") || !strings.Contains(got, "Approved by "+olgaName) {
		t.Errorf("409 does not say who decided: %q", got)
	}
}

// TestFourEyes: with editor-4eyes the initiator may deny but not approve;
// another operator may approve.
func TestFourEyes(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	olga, oscar := a.as(olgaName), a.as(oscarName)
	id := startFromForm(t, olga, "editor-4eyes", publishAbout)
	r := a.waitStatus(id, engine.StatusWaiting)

	page := olga.get("/runs/" + id)
	if _, disabled := page.doc.Find(testid("approve")).Attr("disabled"); !disabled {
		t.Error("the initiator's approve button is enabled")
	}
	if got := text(page.doc, testid("card-note")); !strings.Contains(got, "another operator must approve") {
		t.Errorf("card note %q", got)
	}
	if page.doc.Find(testid("deny")).Length() != 1 {
		t.Error("the initiator cannot deny")
	}

	res := decide(t, olga, id, "approve", "")
	mustRunPageWith(t, a, res, http.StatusForbidden, "Second approver needed", id)
	if got := text(res.doc, testid("card-error")); !strings.Contains(got, "another operator to approve") {
		t.Errorf("card error %q", got)
	}
	if got := a.run(id); got.Status != engine.StatusWaiting || got.PendingDigest != r.PendingDigest {
		t.Errorf("run is %s after a refused self-approval", got.Status)
	}

	op := oscar.get("/runs/" + id)
	if _, disabled := op.doc.Find(testid("approve")).Attr("disabled"); disabled || op.doc.Find(testid("card-note")).Length() != 0 {
		t.Error("another operator cannot approve")
	}
	mustRedirect(t, decide(t, oscar, id, "approve", ""), "/runs/"+id)
	a.waitStatus(id, engine.StatusCompleted)
	if p := a.page("about"); p.Status != tools.StatusPublished {
		t.Errorf("about is %s", p.Status)
	}

	t.Run("the initiator may deny", func(t *testing.T) {
		a, olga := a.with(t), olga.with(t)
		id := startFromForm(t, olga, "editor-4eyes", deleteOld)
		a.waitStatus(id, engine.StatusWaiting)
		mustRedirect(t, decide(t, olga, id, "deny", "no"), "/runs/"+id)
		a.waitStatus(id, engine.StatusCompleted)
		if _, err := a.db.Pages().GetPage(context.Background(), "old-announcement"); err != nil {
			t.Errorf("the page was deleted: %v", err)
		}
	})
}

// TestFourEyesEverywhere: COUNTERSIGN_FOUR_EYES applies to every agent.
func TestFourEyesEverywhere(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withFourEyes())
	olga := a.as(olgaName)
	page := olga.get("/runs/new")
	if got := page.doc.Find(testid("second-approver")).Length(); got != len(a.agents) {
		t.Errorf("%d agents marked four-eyes, want all %d", got, len(a.agents))
	}
	id := startFromForm(t, olga, "editor", publishAbout)
	a.waitStatus(id, engine.StatusWaiting)
	mustRunPageWith(t, a, decide(t, olga, id, "approve", ""), http.StatusForbidden, "Second approver needed", id)
	mustRedirect(t, decide(t, a.as(adminName), id, "approve", ""), "/runs/"+id)
	a.waitStatus(id, engine.StatusCompleted)
}

// TestCancel: an operator cancels a waiting run once; a second cancel is 409.
func TestCancel(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	olga := a.as(olgaName)
	id := startFromForm(t, olga, "editor", publishAbout)
	a.waitStatus(id, engine.StatusWaiting)

	if a.as(veraName).get("/runs/"+id).doc.Find(testid("cancel-run")).Length() != 0 {
		t.Error("a viewer is offered cancel")
	}
	page := olga.get("/runs/" + id)
	action, form := formValues(t, page.doc, testid("cancel-run"))
	if action != "/runs/"+id+"/cancel" {
		t.Fatalf("cancel form posts to %q", action)
	}
	mustRedirect(t, olga.post(action, form), "/runs/"+id)
	r := a.run(id)
	if r.Status != engine.StatusCancelled {
		t.Fatalf("run is %s, want cancelled", r.Status)
	}
	d := olga.get("/runs/" + id).doc
	if got := text(d, testid("flash")); !strings.HasPrefix(got, "Cancelled.") {
		t.Errorf("flash %q", got)
	}
	if got := attr(d, testid("run-status"), "data-status"); got != "cancelled" {
		t.Errorf("status badge %q", got)
	}
	if d.Find(testid("cancel-run")).Length() != 0 || d.Find(testid("approval-card")).Length() != 0 {
		t.Error("a cancelled run still offers cancel or a decision")
	}
	if got := text(d, `[data-kind="failed"] `+testid("step-error")); !strings.Contains(got, "cancelled by "+olgaName) {
		t.Errorf("last step says %q", got)
	}

	res := olga.post(action, form)
	mustCleanError(t, res, http.StatusConflict)
	if got := text(res.doc, testid("error-title")); got != "Run has ended" {
		t.Errorf("second cancel: %q", got)
	}
	f := url.Values{"_csrf": {olga.csrf}, "run_id": {id}, "digest": {r.PendingDigest}, "decision": {"approve"}}
	mustCleanError(t, olga.post("/tool/resume", f), http.StatusConflict)
	mustCleanError(t, olga.post("/runs/01JNOSUCHRUN000000000000000/cancel", form), http.StatusNotFound)
	if p := a.page("about"); p.Status != tools.StatusDraft {
		t.Errorf("about is %s after a cancel", p.Status)
	}
}
