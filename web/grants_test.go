package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"countersign/engine"
	"countersign/store"
)

// grantsOf lists the grants that apply to a run, newest first.
func (a *testApp) grantsOf(runID string) []engine.Grant {
	a.t.Helper()
	r := a.run(runID)
	gs, err := a.db.Grants(context.Background(), store.GrantFilter{Agent: r.Agent, RunID: runID})
	if err != nil {
		a.t.Fatalf("grants of %s: %v", runID, err)
	}
	return gs
}

// grantOne approves the one call of a waiting run as olga, with a standing
// grant of scope, and returns the grant written.
func grantOne(t *testing.T, a *testApp, olga *client, runID, decision, scope string) engine.Grant {
	t.Helper()
	id := pendingIDs(t, olga, runID)[0]
	f := cardForm(t, olga, runID, decision)
	if decision == "calls" {
		f.Set("verdict."+id, "approve")
	}
	f.Set("grant."+id, scope)
	mustRedirect(t, olga.post("/tool/resume", f), "/runs/"+runID)
	gs := a.grantsOf(runID)
	if len(gs) != 1 {
		t.Fatalf("%d grants after approving with a %s grant, want 1", len(gs), scope)
	}
	return gs[0]
}

func TestCardOffersGrantsOnWrites(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	olga := a.as(olgaName)

	w := a.waitingRun("editor", publishAbout, olgaName)
	page := olga.get("/runs/" + w.ID)
	mustStatus(t, page, http.StatusOK)
	id := pendingIDs(t, olga, w.ID)[0]
	sel := page.doc.Find(testid("grant-choice"))
	if sel.Length() != 1 || sel.AttrOr("name", "") != "grant."+id {
		t.Fatalf("grant choices %d (name %q), want one named grant.%s", sel.Length(), sel.AttrOr("name", ""), id)
	}
	var values []string
	for _, o := range sel.Find("option").EachIter() {
		values = append(values, o.AttrOr("value", "?"))
	}
	if strings.Join(values, ",") != ",run,agent" {
		t.Errorf("grant options %q, want none (the default), run, agent", values)
	}
	if got := sel.Find(`option[value="agent"]`).Text(); !strings.Contains(got, "1 hour") {
		t.Errorf("agent grant option %q, want it to say 1 hour", got)
	}
	if _, f := formValues(t, page.doc, testid("decision-form")); f.Get("grant."+id) != "" {
		t.Errorf("the card preselects grant %q, want none", f.Get("grant."+id))
	}
	// A viewer sees no form, so no grant.
	if n := a.as(veraName).get("/runs/" + w.ID).doc.Find(testid("grant-choice")).Length(); n != 0 {
		t.Errorf("a viewer's card offers %d grants", n)
	}
	// A question is answered, never granted.
	q := a.waitingRun("editor", "Set the price on the offers page to $12.", olgaName)
	if n := olga.get("/runs/" + q.ID).doc.Find(testid("grant-choice")).Length(); n != 0 {
		t.Errorf("a question's card offers %d grants", n)
	}
}

func TestApproveWithRunGrant(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	olga := a.as(olgaName)
	w := a.waitingRun("editor", publishAbout, olgaName)
	tool := text(olga.get("/runs/"+w.ID).doc, testid("pending-call")+" .tool-name")
	before := time.Now()

	g := grantOne(t, a, olga, w.ID, "calls", "run")
	if g.Scope != engine.GrantRun || g.RunID != w.ID || g.Agent != "editor" || g.Tool != tool || g.By != olgaName ||
		!g.RevokedAt.IsZero() || !g.ExpiresAt.After(before.Add(24*time.Hour)) {
		t.Fatalf("grant %+v, want olga's grant of %s for run %s until the run ends", g, tool, w.ID)
	}
	ev, ok, err := a.db.LastDecision(context.Background(), w.ID)
	if err != nil || !ok || len(ev.Grants) != 1 || ev.Grants[0].ID != g.ID {
		t.Errorf("decision event %+v, %v, %v; want it to name grant %d", ev, ok, err, g.ID)
	}

	page := olga.get("/runs/" + w.ID)
	if got := text(page.doc, testid("flash")); !strings.Contains(got, "Allowed without asking: "+tool+" for the rest of this run") {
		t.Errorf("flash %q, want it to name the grant", got)
	}
	row := page.doc.Find(testid("run-grants") + " " + testid("run-grant"))
	if row.Length() != 1 || row.AttrOr("data-grant-id", "") != strconv.FormatInt(g.ID, 10) ||
		row.AttrOr("data-scope", "") != "run" || row.AttrOr("data-state", "") != "active" {
		t.Fatalf("run page grants: %d rows, %s", row.Length(), clip(page.body, 2000))
	}
	if got := strings.TrimSpace(row.Find(testid("grant-by")).Text()); got != olgaName {
		t.Errorf("grant given by %q on the run page", got)
	}
	if got := row.Find(testid("grant-ends")).Text(); !strings.Contains(got, "when the run ends") {
		t.Errorf("grant ends %q on the run page", got)
	}

	list := a.as(adminName).get("/grants")
	mustStatus(t, list, http.StatusOK)
	row = list.doc.Find(testid("grant-row"))
	if row.Length() != 1 || row.AttrOr("data-grant-id", "") != strconv.FormatInt(g.ID, 10) {
		t.Fatalf("/grants lists %d grants, want grant %d", row.Length(), g.ID)
	}
	if got := attr(list.doc, testid("grant-run"), "href"); got != "/runs/"+w.ID {
		t.Errorf("/grants run link %q", got)
	}
	if got := text(list.doc, testid("grant-by")); got != olgaName {
		t.Errorf("/grants given by %q", got)
	}
	// Another run of the agent does not list a run grant.
	other := a.waitingRun("editor", deleteOld, olgaName)
	if n := olga.get("/runs/" + other.ID).doc.Find(testid("run-grant")).Length(); n != 0 {
		t.Errorf("another run lists %d grants", n)
	}
}

func TestApproveAllWithAgentGrant(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	olga := a.as(olgaName)
	w := a.waitingRun("editor", publishAbout, olgaName)

	g := grantOne(t, a, olga, w.ID, "approve", "agent")
	if g.Scope != engine.GrantAgent || g.RunID != "" || g.By != olgaName ||
		g.ExpiresAt.Sub(g.CreatedAt) != engine.DefaultGrantPeriod {
		t.Fatalf("grant %+v, want olga's agent grant for %s", g, engine.DefaultGrantPeriod)
	}
	// It applies to the agent's other runs, not to another agent's.
	other := a.waitingRun("editor", deleteOld, oscarName)
	row := olga.get("/runs/" + other.ID).doc.Find(testid("run-grant"))
	if row.Length() != 1 || row.AttrOr("data-scope", "") != "agent" || row.AttrOr("data-state", "") != "active" {
		t.Errorf("the agent's other run lists %d grants, want the agent grant", row.Length())
	}
	r := a.createRun("researcher", readOnlyPrompt, olgaName, time.Now())
	if n := olga.get("/runs/" + r.ID).doc.Find(testid("run-grant")).Length(); n != 0 {
		t.Errorf("another agent's run lists %d grants", n)
	}
	if got := text(a.as(adminName).get("/grants").doc, testid("grant-scope")); got != "agent-wide" {
		t.Errorf("/grants scope %q", got)
	}
}

func TestGrantNeedsAnApproval(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	olga := a.as(olgaName)

	// A grant chosen on a call the operator denies is not given.
	w := a.waitingRun("editor", publishAbout, olgaName)
	id := pendingIDs(t, olga, w.ID)[0]
	f := cardForm(t, olga, w.ID, "calls")
	f.Set("verdict."+id, "deny")
	f.Set("grant."+id, "agent")
	mustRedirect(t, olga.post("/tool/resume", f), "/runs/"+w.ID)
	if gs := a.grantsOf(w.ID); len(gs) != 0 {
		t.Errorf("a denial gave grants %+v", gs)
	}

	// A grant of no scope we know, or for a call that is not pending, is
	// refused and nothing is decided.
	w = a.waitingRun("editor", publishAbout, olgaName)
	id = pendingIDs(t, olga, w.ID)[0]
	for name, field := range map[string][2]string{
		"unknown scope": {"grant." + id, "forever"},
		"unknown call":  {"grant.call_nosuch", "run"},
	} {
		f := cardForm(t, olga, w.ID, "approve")
		if name == "unknown call" {
			f.Set("grant."+id, "run")
		}
		f.Set(field[0], field[1])
		res := olga.post("/tool/resume", f)
		mustCleanError(t, res, http.StatusUnprocessableEntity)
		if r := a.run(w.ID); r.Status != engine.StatusWaiting {
			t.Fatalf("%s: the run is %s, want it still waiting", name, r.Status)
		}
		// The card comes back with the operator's choice.
		if got := attr(res.doc, testid("grant-choice")+` option[selected]`, "value"); name == "unknown call" && got != "run" {
			t.Errorf("%s: the card comes back with grant %q selected, want run", name, got)
		}
	}
	if gs := a.grantsOf(w.ID); len(gs) != 0 {
		t.Errorf("refused decisions gave grants %+v", gs)
	}
}

func TestRevokeGrant(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	olga, admin := a.as(olgaName), a.as(adminName)
	w := a.waitingRun("editor", publishAbout, olgaName)
	g := grantOne(t, a, olga, w.ID, "calls", "agent")
	path := "/grants/" + strconv.FormatInt(g.ID, 10) + "/revoke"

	t.Run("not an admin", func(t *testing.T) {
		for _, name := range []string{olgaName, veraName} {
			c := a.with(t).as(name)
			mustCleanError(t, c.submit(path, url.Values{}), http.StatusForbidden)
			mustCleanError(t, c.get("/grants"), http.StatusForbidden)
		}
	})
	t.Run("without the CSRF token", func(t *testing.T) {
		res := admin.with(t).post(path, url.Values{})
		mustCleanError(t, res, http.StatusForbidden)
		if got := text(res.doc, testid("error-title")); got != "Form expired" {
			t.Errorf("title %q, want Form expired", got)
		}
	})
	if _, ok, _ := a.db.ActiveGrant(context.Background(), "editor", "", g.Tool, time.Now()); !ok {
		t.Fatal("a refused revocation revoked the grant")
	}

	list := admin.get("/grants")
	action, form := formValues(t, list.doc, testid("revoke-grant"))
	if action != path {
		t.Fatalf("revoke form posts to %q, want %q", action, path)
	}
	mustRedirect(t, admin.post(action, form), "/grants")
	if _, ok, err := a.db.ActiveGrant(context.Background(), "editor", "", g.Tool, time.Now()); err != nil || ok {
		t.Errorf("revoked grant still active: %v, %v", ok, err)
	}
	list = admin.get("/grants")
	if got := text(list.doc, testid("flash")); !strings.Contains(got, "Revoked") {
		t.Errorf("flash %q after revoking", got)
	}
	if n := list.doc.Find(testid("grant-row")).Length(); n != 0 || list.doc.Find(testid("grants-empty")).Length() != 1 {
		t.Errorf("/grants lists %d grants after revoking the only one", n)
	}
	row := olga.get("/runs/" + w.ID).doc.Find(testid("run-grant"))
	if row.AttrOr("data-state", "") != "revoked" || !strings.Contains(row.Find(testid("grant-state")).Text(), adminName) {
		t.Errorf("run page grant state %q (%q), want revoked by admin", row.AttrOr("data-state", ""), row.Text())
	}

	res := admin.submit(path, url.Values{})
	mustCleanError(t, res, http.StatusConflict)
	if got := text(res.doc, testid("error-title")); got != "Already revoked" {
		t.Errorf("second revoke: title %q", got)
	}
	for _, p := range []string{"/grants/999999/revoke", "/grants/x/revoke"} {
		mustCleanError(t, admin.submit(p, url.Values{}), http.StatusNotFound)
	}
}

func TestFourEyesAgentTakesNoGrants(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	oscar := a.as(oscarName)
	w := a.waitingRun("editor-4eyes", publishAbout, olgaName)
	page := oscar.get("/runs/" + w.ID)
	mustStatus(t, page, http.StatusOK)
	if page.doc.Find(testid("decision-form")).Length() != 1 || page.doc.Find(testid("grant-choice")).Length() != 0 {
		t.Fatalf("the four-eyes card of another operator: want a form without grants")
	}
	// A forged grant is refused by the engine and nothing is decided.
	id := pendingIDs(t, oscar, w.ID)[0]
	for _, decision := range []string{"approve", "calls"} {
		f := cardForm(t, oscar, w.ID, decision)
		f.Set("verdict."+id, "approve")
		f.Set("grant."+id, "run")
		res := oscar.post("/tool/resume", f)
		mustCleanError(t, res, http.StatusForbidden)
		if !strings.Contains(res.body, "takes no standing grants") {
			t.Errorf("%s: refusal does not say why:\n%s", decision, clip(res.body, 2000))
		}
		if r := a.run(w.ID); r.Status != engine.StatusWaiting {
			t.Fatalf("%s: the run is %s, want it still waiting", decision, r.Status)
		}
	}
	if gs := a.grantsOf(w.ID); len(gs) != 0 {
		t.Errorf("a four-eyes agent got grants %+v", gs)
	}

	// Where every agent needs a second approver, no card offers grants.
	b := newTestApp(t, withoutWorkers(), withFourEyes())
	r := b.waitingRun("editor", publishAbout, olgaName)
	if n := b.as(oscarName).get("/runs/" + r.ID).doc.Find(testid("grant-choice")).Length(); n != 0 {
		t.Errorf("with four-eyes for every agent the card offers %d grants", n)
	}
}

func TestGrantsNavForAdmins(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	if got := attr(a.as(adminName).get("/runs").doc, testid("nav-grants"), "href"); got != "/grants" {
		t.Errorf("admin nav grants link %q", got)
	}
	if n := a.as(olgaName).get("/runs").doc.Find(testid("nav-grants")).Length(); n != 0 {
		t.Errorf("an operator sees %d grants links", n)
	}
	res := a.as(adminName).get("/grants")
	mustStatus(t, res, http.StatusOK)
	if res.doc.Find(testid("grants-empty")).Length() != 1 || attr(res.doc, testid("nav-grants"), "aria-current") != "page" {
		t.Errorf("empty /grants page:\n%s", clip(res.body, 2000))
	}
}

// TestAgentGrantSkipsThePersonUntilRevoked is the grant at work: the agent's
// next call of the granted tool runs without a person and records the
// grant; once revoked, the next one waits again.
func TestAgentGrantSkipsThePersonUntilRevoked(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	olga, admin := a.as(olgaName), a.as(adminName)
	first := a.waitingRun("editor", publishAbout, olgaName)
	g := grantOne(t, a, olga, first.ID, "calls", "agent")
	a.waitStatus(first.ID, engine.StatusCompleted)

	next := a.startRun("editor", publishAbout, oscarName)
	if r := a.waitTerminal(next.ID); r.Status != engine.StatusCompleted {
		t.Fatalf("the granted run ended %s (%s), want completed without a person", r.Status, r.Error)
	}
	evs, err := a.db.Events(context.Background(), next.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	waived := ""
	for _, e := range evs {
		if e.Event.Kind == engine.EventSuspended || e.Event.Kind == engine.EventDecision {
			t.Errorf("the granted run asked a person: %s event", e.Event.Kind)
		}
		if e.Event.Kind == engine.EventToolStarted && e.Event.Call != nil && e.Event.Call.Name == g.Tool {
			waived = e.Event.WaivedBy
		}
	}
	if want := "grant " + strconv.FormatInt(g.ID, 10); waived != want {
		t.Errorf("the granted call ran waived by %q, want %q", waived, want)
	}
	if n := olga.get("/runs/" + next.ID).doc.Find(testid("run-grant")).Length(); n != 1 {
		t.Errorf("the granted run lists %d grants, want the agent grant", n)
	}

	admin.get("/grants")
	mustRedirect(t, admin.submit("/grants/"+strconv.FormatInt(g.ID, 10)+"/revoke", url.Values{}), "/grants")
	a.waitingRun("editor", publishAbout, oscarName)
}
