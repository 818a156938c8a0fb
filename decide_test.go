package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/chromedp/chromedp"

	"countersign/engine/models/demo"
)

// editPrompt makes the demo model propose $12, which the operator edits to
// $14 before it runs.
const editPrompt = "Update the pricing page to say the Team plan now costs $12 per seat."

// TestEditInBrowser edits a call in Chromium, checks the preview of the
// edit, confirms it and sees a final answer that names what ran.
func TestEditInBrowser(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	b := newBrowser(t)
	b.signIn(srv.URL, "admin", srv.Password)

	b.startExample(editPrompt)
	b.setMarker()
	b.waitForCard("update_page")
	card := `[data-testid=approval-card] `
	b.do("choose edit", chromedp.Click(chromedp.CSS(card+`[data-testid=verdict-edit]`)))
	b.do("change $12 to $14", chromedp.Evaluate[chromedp.Void](`(() => {
		const ta = document.querySelector("[data-testid=approval-card] [data-testid=edit-args]");
		ta.value = ta.value.replaceAll("$12", "$14");
	})()`))
	b.do("preview the edit", chromedp.Click(chromedp.CSS(card+`[data-testid=preview-edits]`)))
	b.waitUntil("the preview of the edit", `document.querySelector("[data-testid=approval-card] [data-testid=edit-preview]")?.textContent.includes("$14")`)
	if got := b.text(`[data-testid=run-status]`); got != "waiting for approval" {
		t.Fatalf("the preview decided the run: status %q", got)
	}
	b.checkMarker("after the preview")

	b.decide(card+`[data-testid=submit-calls]`, "Decided")
	b.waitForStatus("completed")
	b.checkMarker("after confirming")
	answer := b.text(`[data-testid=final-answer]`)
	if !strings.Contains(answer, "$14") {
		t.Errorf("final answer %q does not say $14", answer)
	}
	if got := b.text(`[data-testid=verdict-arguments]`); !strings.Contains(got, "$14") {
		t.Errorf("the decision step shows the edit as %q", got)
	}
	if got := b.text(`[data-testid=edited-mark]`); !strings.Contains(got, "admin") {
		t.Errorf("the edited call's step %q does not name who edited it", got)
	}
}

// TestEditWithoutJavaScript does the same with plain form posts against the
// real server, as a browser without JavaScript would.
func TestEditWithoutJavaScript(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	c := newHTTPClient(t)
	signInHTTP(t, c, srv.URL, "admin", srv.Password)

	doc, _, _ := httpGet(t, c, srv.URL+"/runs/new")
	csrf, _ := doc.Find(`[data-testid=new-run-form] input[name=_csrf]`).Attr("value")
	_, final, status := httpPost(t, c, srv.URL+"/runs", url.Values{"_csrf": {csrf}, "agent": {"editor"},
		"model": {demo.Name}, "prompt": {editPrompt}})
	runURL := final.Path
	if status != http.StatusOK || !strings.HasPrefix(runURL, "/runs/") {
		t.Fatalf("start a run: status %d at %s", status, final)
	}
	waitStatus := func(want string) *goquery.Document {
		t.Helper()
		return waitRunStatus(t, c, srv.URL, runURL, want)
	}
	doc = waitStatus("waiting_for_approval")
	form := func(doc *goquery.Document) (url.Values, string) {
		t.Helper()
		f := doc.Find(`[data-testid=approval-card] [data-testid=decision-form]`)
		vals := url.Values{}
		f.Find(`input[type=hidden]`).Each(func(_ int, s *goquery.Selection) { vals.Set(s.AttrOr("name", ""), s.AttrOr("value", "")) })
		id := f.Find(`[data-testid=pending-call]`).AttrOr("data-call-id", "")
		if id == "" {
			t.Fatal("no pending call on the card")
		}
		vals.Set("args."+id, f.Find(`[data-testid=edit-args]`).Text())
		return vals, id
	}
	vals, id := form(doc)
	edited := strings.ReplaceAll(vals.Get("args."+id), "$12", "$14")
	if edited == vals.Get("args."+id) {
		t.Fatalf("the proposed arguments do not hold $12: %s", edited)
	}
	vals.Set("args."+id, edited)
	vals.Set("verdict."+id, "edit")
	vals.Set("decision", "calls")

	// Submitting an edit that was not previewed shows its preview.
	doc, final, status = httpPost(t, c, srv.URL+"/tool/resume", vals)
	if status != http.StatusOK || final.Path != "/tool/resume" {
		t.Fatalf("unpreviewed edit: status %d at %s, want the preview", status, final.Path)
	}
	if got := doc.Find(`[data-testid=edit-preview]`).Text(); !strings.Contains(got, "$14") {
		t.Fatalf("edit preview %q", got)
	}
	confirm, _ := form(doc)
	if confirm.Get("previewed."+id) == "" || confirm.Get("args."+id) != edited {
		t.Fatalf("the preview card does not carry the sealed edit: %v", confirm)
	}
	confirm.Set("verdict."+id, "edit")
	confirm.Set("decision", "calls")
	_, final, status = httpPost(t, c, srv.URL+"/tool/resume", confirm)
	if status != http.StatusOK || final.Path != runURL {
		t.Fatalf("confirm: status %d at %s, want the run page", status, final.Path)
	}
	doc = waitStatus("completed")
	if got := doc.Find(`[data-testid=final-answer]`).Text(); !strings.Contains(got, "$14") {
		t.Errorf("final answer %q does not say $14", got)
	}
}
