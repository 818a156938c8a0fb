package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"countersign/engine/models/demo"
)

// TestTwoOperatorsOnOneRun: anna and ben, each signed in in a browser of
// their own, look at one waiting run. Ben approves; anna's page, never
// reloaded, shows ben's decision in place of her card within a few polls.
// On a second run ben decides (over plain HTTP) while anna's card is still
// shown; her late click brings the current state: the notice of ben's
// decision, no working stale buttons, and the run carrying on.
func TestTwoOperatorsOnOneRun(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	admin := newHTTPClient(t)
	signInHTTP(t, admin, srv.URL, "admin", srv.Password)
	annaPass := consoleAddOperator(t, admin, srv.URL, "anna")
	benPass := consoleAddOperator(t, admin, srv.URL, "ben")

	first := consoleStartRun(t, admin, srv.URL, "Publish the about page.")
	anna, ben := newBrowser(t), newBrowser(t)
	anna.signIn(srv.URL, "anna", annaPass)
	ben.signIn(srv.URL, "ben", benPass)
	anna.navigate(srv.URL + "/runs/" + first)
	ben.navigate(srv.URL + "/runs/" + first)
	anna.waitForCard("publish_page")
	ben.waitForCard("publish_page")
	if anna.count(`#run-header + #approval-card`) != 1 {
		t.Error("the card is not right under the header")
	}
	anna.setMarker()

	ben.decide(approveSel, "Approved")
	anna.waitUntil("ben's decision in place of anna's card",
		`document.querySelector("[data-testid=decided-notice]")?.textContent.includes("Decided by ben at ")`)
	if anna.count(approveSel) != 0 || anna.count(`[data-testid=decision-form]`) != 0 {
		t.Error("anna's page still offers the decided card")
	}
	anna.waitForStatus("completed")
	anna.checkMarker("after ben's decision")
	if got := anna.text(`[data-testid=decision]`); !strings.Contains(got, "ben") {
		t.Errorf("anna's page shows the decision step %q, want it by ben", got)
	}
	// Ben's own flash goes once his run has ended.
	ben.waitForStatus("completed")
	ben.waitUntil("ben's flash to go", `!document.querySelector("[data-testid=flash]")`)

	// A late click: ben decides while anna's page still shows the card and
	// before her poll asks; the poller is held still to make it so.
	second := consoleStartRun(t, admin, srv.URL, "Delete the old announcement page.")
	anna.navigate(srv.URL + "/runs/" + second)
	anna.waitForCard("delete_page")
	anna.setMarker()
	anna.do("hold anna's poller still", chromedp.Evaluate[chromedp.Void](
		`document.getElementById("poller").replaceWith(Object.assign(document.createElement("div"), {id: "poller", className: "poller"}))`))
	benHTTP := newHTTPClient(t)
	signInHTTP(t, benHTTP, srv.URL, "ben", benPass)
	consoleDecideHTTP(t, benHTTP, srv.URL, second, "deny")
	if anna.count(approveSel) != 1 {
		t.Fatal("anna's stale card went away before her click; the race was not set up")
	}

	anna.do("anna clicks Approve on the stale card", chromedp.Click(chromedp.CSS(approveSel)))
	anna.waitUntil("the current state in place of the stale card",
		`document.querySelector("[data-testid=decided-notice]")?.textContent.includes("Decided by ben at ")`)
	if got := anna.text(`[data-testid=decided-notice]`); !strings.HasSuffix(got, ": denied.") {
		t.Errorf("notice %q, want ben's denial", got)
	}
	if anna.count(approveSel) != 0 || anna.count(denySel) != 0 {
		t.Error("stale buttons are still there")
	}
	if got := anna.text(`[data-testid=flash]`); !strings.Contains(got, "Already decided") {
		t.Errorf("flash %q", got)
	}
	// The 409 is the answer the late click asked for, not a fault.
	consoleForget(anna, "409")
	anna.waitUntil("the run to complete", `document.querySelector("[data-testid=run-status]")?.dataset.status === "completed"`)
	anna.checkMarker("after the late click")
}

// consoleAddOperator adds an operator through the users page as the admin
// signed in on c and returns the password.
func consoleAddOperator(t *testing.T, c *http.Client, base, name string) string {
	t.Helper()
	password := name + "-password-long"
	doc, _, _ := httpGet(t, c, base+"/users")
	csrf := doc.Find(`input[name=_csrf]`).First().AttrOr("value", "")
	if _, _, status := httpPost(t, c, base+"/users", url.Values{"_csrf": {csrf}, "name": {name},
		"password": {password}, "role": {"operator"}}); status != http.StatusOK {
		t.Fatalf("add operator %s: status %d", name, status)
	}
	return password
}

// consoleStartRun starts an editor run as the user signed in on c and
// waits until it waits for approval.
func consoleStartRun(t *testing.T, c *http.Client, base, prompt string) string {
	t.Helper()
	doc, _, _ := httpGet(t, c, base+"/runs/new")
	csrf := doc.Find(`[data-testid=new-run-form] input[name=_csrf]`).AttrOr("value", "")
	_, final, status := httpPost(t, c, base+"/runs", url.Values{"_csrf": {csrf}, "agent": {"editor"}, "model": {demo.Name}, "prompt": {prompt}})
	id, ok := strings.CutPrefix(final.Path, "/runs/")
	if status != http.StatusOK || !ok || id == "" {
		t.Fatalf("start %q: status %d at %s", prompt, status, final)
	}
	waitRunStatus(t, c, base, "/runs/"+id, "waiting_for_approval")
	return id
}

// consoleDecideHTTP decides with the run page's form, without JavaScript,
// and checks the 303 to the run page.
func consoleDecideHTTP(t *testing.T, c *http.Client, base, runID, decision string) {
	t.Helper()
	doc, _, _ := httpGet(t, c, base+"/runs/"+runID)
	form := doc.Find(`[data-testid=decision-form]`)
	vals := url.Values{"decision": {decision}}
	for _, name := range []string{"_csrf", "run_id", "digest", "after"} {
		vals.Set(name, form.Find(`input[name=`+name+`]`).AttrOr("value", ""))
	}
	if _, final, status := httpPost(t, c, base+"/tool/resume", vals); status != http.StatusOK || final.Path != "/runs/"+runID {
		t.Fatalf("%s %s: status %d at %s", decision, runID, status, final.Path)
	}
}

// consoleForget drops the console problems that contain s: ones the test
// provoked on purpose.
func consoleForget(b *browser, s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	kept := b.problems[:0]
	for _, p := range b.problems {
		if !strings.Contains(p, s) {
			kept = append(kept, p)
		}
	}
	b.problems = kept
}
