package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"countersign/engine/models/demo"
)

// TestInboxInBrowser keeps the inbox open in a browser while others work:
// a run that starts waiting appears without a reload, a turn another
// operator decides (over plain HTTP) turns into the line naming them
// without touching what is being typed in another item, and a turn is
// decided from the inbox in place.
func TestInboxInBrowser(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	admin := newHTTPClient(t)
	signInHTTP(t, admin, srv.URL, "admin", srv.Password)
	bob := newHTTPClient(t)
	signInHTTP(t, bob, srv.URL, "bob", inboxAddOperator(t, admin, srv.URL, "bob"))

	b := newBrowser(t)
	b.signIn(srv.URL, "admin", srv.Password)
	b.navigate(srv.URL + "/inbox")
	if b.count(`[data-testid=inbox-empty]`) != 1 || b.count(`[data-testid=inbox-item]`) != 0 {
		t.Fatalf("the inbox is not empty at first\npage:\n%s", b.pageText())
	}
	b.setMarker()

	first := inboxStartRun(t, bob, srv.URL, "Publish the about page.")
	b.waitUntil("the waiting run to appear in the inbox", `document.querySelector(`+js(itemSel(first)+`[data-testid=inbox-item]`)+`)`)
	second := inboxStartRun(t, bob, srv.URL, "Delete the old announcement page.")
	b.waitUntil("the second run to appear", `document.querySelectorAll("[data-testid=inbox-item]").length === 2`)
	b.waitUntil("the count to say 2", `document.querySelector("[data-testid=inbox-count]")?.dataset.count === "2"`)
	b.waitUntil("the badge to say 2", `document.querySelector("[data-testid=inbox-badge]")?.textContent.trim() === "2"`)
	if b.count(`[data-testid=inbox-empty]`) != 0 {
		t.Error("the inbox still says it is empty")
	}
	if got := b.text(itemSel(first) + ` .tool-name`); got != "publish_page" {
		t.Errorf("the first item shows %q, want publish_page", got)
	}
	b.checkMarker("after new turns arrived")

	// Start typing a reason on the second turn, then bob decides the first.
	reason := "Keep it for the archive"
	b.do("type a reason", chromedp.SendKeys(chromedp.CSS(itemSel(second)+` [data-testid=inbox-reason]`), reason))
	inboxDecideHTTP(t, bob, srv.URL, first, "approve")
	b.waitUntil("bob's decision to replace the first item",
		`document.querySelector(`+js(itemSel(first)+`[data-testid=inbox-decided]`)+`)?.textContent.includes("Approved by bob")`)
	b.waitUntil("the count to say 1", `document.querySelector("[data-testid=inbox-count]")?.dataset.count === "1"`)
	if got := eval[string](b, `document.querySelector(`+js(itemSel(second)+` [data-testid=inbox-reason]`)+`).value`); got != reason {
		t.Errorf("the reason being typed became %q, want %q kept", got, reason)
	}
	b.checkMarker("after bob decided")

	// Deny the second from the inbox.
	b.do("click Deny", chromedp.Click(chromedp.CSS(itemSel(second)+` [data-testid=inbox-deny]`)))
	b.waitUntil("the item to say it was denied", `document.querySelector(`+js(itemSel(second)+` [data-testid=decided-text]`)+`)?.textContent.trim() === "Denied by you"`)
	b.waitUntil("the flash", `document.querySelector("[data-testid=flash]")?.textContent.includes("Denied")`)
	b.waitUntil("the badge to say 0", `document.querySelector("[data-testid=inbox-badge]")?.textContent.trim() === "0"`)
	if got := b.text(itemSel(second) + ` [data-testid=decided-reason]`); got != reason {
		t.Errorf("the decided line quotes %q, want %q", got, reason)
	}
	b.checkMarker("after denying")

	doc := waitRunStatus(t, admin, srv.URL, "/runs/"+second, "completed")
	if got := doc.Find(`[data-testid=decision]`).AttrOr("data-decision", ""); got != "deny" {
		t.Errorf("the run's decision is %q, want deny", got)
	}
	if got := doc.Find(`[data-testid=reason]`).First().Text(); strings.TrimSpace(got) != reason {
		t.Errorf("the run's reason is %q", got)
	}
}

// itemSel selects the inbox item of a run.
func itemSel(runID string) string { return `#inbox-item-` + runID }

// inboxAddOperator adds an operator through the users page as the admin
// signed in on c and returns their password.
func inboxAddOperator(t *testing.T, c *http.Client, base, name string) string {
	t.Helper()
	password := name + "-password-long"
	doc, _, _ := httpGet(t, c, base+"/users")
	csrf := doc.Find(`input[name=_csrf]`).First().AttrOr("value", "")
	_, _, status := httpPost(t, c, base+"/users", url.Values{"_csrf": {csrf}, "name": {name}, "password": {password}, "role": {"operator"}})
	if status != http.StatusOK {
		t.Fatalf("add operator %s: status %d", name, status)
	}
	return password
}

// inboxStartRun starts an editor run with prompt as the user signed in on
// c, waits until it waits for approval and returns its id.
func inboxStartRun(t *testing.T, c *http.Client, base, prompt string) string {
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

// inboxDecideHTTP decides a run's waiting turn with the run page's card, as
// the user signed in on c, without JavaScript.
func inboxDecideHTTP(t *testing.T, c *http.Client, base, runID, decision string) {
	t.Helper()
	doc, _, _ := httpGet(t, c, base+"/runs/"+runID)
	form := doc.Find(`[data-testid=decision-form]`)
	vals := url.Values{"decision": {decision}}
	for _, name := range []string{"_csrf", "run_id", "digest"} {
		vals.Set(name, form.Find(`input[name=`+name+`]`).AttrOr("value", ""))
	}
	if _, final, status := httpPost(t, c, base+"/tool/resume", vals); status != http.StatusOK || final.Path != "/runs/"+runID {
		t.Fatalf("%s %s: status %d at %s", decision, runID, status, final.Path)
	}
}
