package main

import (
	"bytes"
	"flag"
	"fmt"
	"image/png"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"countersign/engine/models/demo"
)

// The README's screenshots, taken of the real app in headless Chromium at
// 1280 pixels wide: `make screenshots` runs TestScreenshots with
// -screenshots=docs/screenshots to write them there. Without the flag the
// test takes them into a temporary folder, which it removes, and checks only
// that each is a PNG of the size asked for.

var screenshotsDir = flag.String("screenshots", "", "write the README's screenshots into this folder (make screenshots)")

const (
	shotWidth     = 1280 // the viewport width of every screenshot
	shotMaxHeight = 2400 // a page screenshot is cut off below this
)

// TestScreenshots fills a fresh server with a dozen runs that ended in
// different ways and four that wait, then takes the run view of a finished
// run, the approval card of a waiting mixed turn, the inbox, the card of a
// write to the files agent's MCP server and the history.
func TestScreenshots(t *testing.T) {
	t.Parallel()
	dir := *screenshotsDir
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	srv := newServer(t)
	op := newOperator(t, srv.URL, "admin", srv.Password)

	// Runs that end, over plain HTTP as a browser without JavaScript.
	finished := op.start("editor", "Create a page announcing the winter sale, then publish it.")
	op.decide(finished, "approve")
	op.decide(finished, "approve")
	op.wait(finished, "completed")
	op.decide(op.start("editor", "Publish the about page."), "approve")
	op.decide(op.start("editor", "Delete the old announcement page."), "deny")
	op.decide(op.start("editor", "Update the pricing page to say the Team plan now costs $12 per seat."), "approve")
	// The page exists by now: the create is approved and fails.
	op.decide(op.start("editor", "Create a page announcing the winter sale."), "approve")
	for _, p := range []string{"How many words are on the pricing page?", "Search the pages for refund.", "List all pages."} {
		op.wait(op.start("researcher", p), "completed")
	}
	op.cancel(op.start("editor", "Publish all draft pages."))
	// Four turns left waiting, for the inbox.
	op.start("editor-4eyes", "Publish the about page.")
	op.start("editor", "Set the price on the offers page to $12.")
	op.start("editor", "Publish the release notes.")
	mixed := op.start("editor", "Check the word count of the release notes and publish them.")
	// Every run has ended or waits before the pictures are taken.
	for _, r := range op.started {
		op.wait(r, "completed", "cancelled", "failed", "waiting_for_approval")
	}

	b := newLongBrowser(t)
	b.do("set the viewport", chromedp.EmulateViewport(shotWidth, 900))
	b.signIn(srv.URL, "admin", srv.Password)

	b.navigate(srv.URL + mixed)
	b.waitForMixedCard()
	b.saveShot(dir, "approval-card.png", cardSel, 12)

	b.navigate(srv.URL + finished)
	b.waitForRunStatus("completed")
	b.saveShot(dir, "run.png", "", 0)

	b.navigate(srv.URL + "/inbox")
	b.waitUntil("the inbox badge to count 4 waiting runs", `document.querySelector("[data-testid=inbox-badge]")?.textContent.trim() === "4"`)
	b.saveShot(dir, "inbox.png", "", 0)

	// A write of an MCP server, started after the inbox's picture: the
	// files agent's edit, previewed by the filesystem server's dry run.
	edit := op.start("files", "In todo.md, replace buy milk with buy oat milk.")
	op.wait(edit, "waiting_for_approval")
	b.navigate(srv.URL + edit)
	b.waitUntil("the edit's dry-run diff on the card", `document.querySelector("[data-testid=approval-card] [data-testid=preview]")?.textContent.includes("buy oat milk")`)
	b.saveShot(dir, "mcp-card.png", cardSel, 12)

	b.navigate(srv.URL + "/runs")
	if n, want := b.count(`[data-testid=run-row]`), len(op.started); n != want {
		t.Errorf("the history lists %d runs, want %d", n, want)
	}
	b.saveShot(dir, "history.png", "", 0)
}

// saveShot takes a PNG of the page from its top (sel "", at most
// shotMaxHeight tall) or of the element sel with margin pixels around it,
// checks that it is a PNG of that size and writes it to dir/name.
func (b *browser) saveShot(dir, name, sel string, margin int) {
	b.t.Helper()
	// Settle the page: no focus ring, no hover, at the top, fonts loaded.
	b.do("settle the page", chromedp.Evaluate[chromedp.Void](`document.activeElement?.blur(); window.scrollTo(0, 0)`),
		chromedp.Evaluate[chromedp.Void](`document.fonts.ready.then(() => true)`, chromedp.EvalAwaitPromise))
	type box struct{ X, Y, W, H float64 }
	var clip box
	if sel == "" {
		clip = eval[box](b, fmt.Sprintf(`({X: 0, Y: 0, W: %d, H: Math.min(document.documentElement.scrollHeight, %d)})`, shotWidth, shotMaxHeight))
	} else {
		clip = eval[box](b, fmt.Sprintf(`(() => {
			const r = document.querySelector(%s).getBoundingClientRect(), m = %d;
			const x = Math.max(0, Math.floor(r.left - m)), y = Math.max(0, Math.floor(r.top + window.scrollY - m));
			return {X: x, Y: y, W: Math.min(%d, Math.ceil(r.right + m)) - x, H: Math.min(%d, Math.ceil(r.height + 2 * m))};
		})()`, js(sel), margin, shotWidth, shotMaxHeight))
	}
	if clip.W < 100 || clip.H < 100 {
		b.t.Fatalf("%s: the area to capture is %vx%v px, too small", name, clip.W, clip.H)
	}
	shot, err := chromedp.Call(b.ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{
		Format:                page.CaptureScreenshotFormatPng,
		CaptureBeyondViewport: new(true),
		FromSurface:           new(true),
		Clip:                  &page.Viewport{X: clip.X, Y: clip.Y, Width: clip.W, Height: clip.H, Scale: 1},
	})
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	img, err := png.Decode(bytes.NewReader(shot.Data))
	if err != nil {
		b.t.Fatalf("screenshot %s is not a PNG: %v", name, err)
	}
	if got := img.Bounds().Size(); got.X != int(math.Round(clip.W)) || got.Y != int(math.Round(clip.H)) {
		b.t.Errorf("screenshot %s is %dx%d px, want %vx%v", name, got.X, got.Y, clip.W, clip.H)
	}
	if sel == "" && img.Bounds().Dx() != shotWidth {
		b.t.Errorf("screenshot %s is %d px wide, want the viewport's %d", name, img.Bounds().Dx(), shotWidth)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, shot.Data, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("%s: %dx%d px, %d KiB", path, img.Bounds().Dx(), img.Bounds().Dy(), len(shot.Data)/1024)
}

// operator starts and decides runs over plain HTTP, as a browser without
// JavaScript does.
type operator struct {
	t       *testing.T
	c       *http.Client
	base    string
	started []string // the run pages' paths
}

// sleepPoll is the pause between two reloads of a page that is waited on.
func sleepPoll() { time.Sleep(50 * time.Millisecond) }

func newOperator(t *testing.T, base, name, password string) *operator {
	t.Helper()
	c := newHTTPClient(t)
	signInHTTP(t, c, base, name, password)
	return &operator{t: t, c: c, base: base}
}

// start starts a run of agent with prompt and waits until it waits for
// approval or ends; it returns the run page's path.
func (o *operator) start(agent, prompt string) string {
	o.t.Helper()
	doc, _, _ := httpGet(o.t, o.c, o.base+"/runs/new")
	csrf := doc.Find(`[data-testid=new-run-form] input[name=_csrf]`).AttrOr("value", "")
	_, final, status := httpPost(o.t, o.c, o.base+"/runs", url.Values{"_csrf": {csrf}, "agent": {agent},
		"model": {demo.Name}, "prompt": {prompt}})
	id, ok := strings.CutPrefix(final.Path, "/runs/")
	if status != http.StatusOK || !ok || id == "" {
		o.fatalf("start %s %q: status %d at %s", agent, prompt, status, final)
	}
	runURL := "/runs/" + id
	o.wait(runURL, "waiting_for_approval", "completed")
	o.started = append(o.started, runURL)
	return runURL
}

func (o *operator) fatalf(format string, args ...any) {
	o.t.Helper()
	o.t.Fatalf(format, args...)
}

// wait reloads the run page until the run has one of the statuses.
func (o *operator) wait(runURL string, statuses ...string) *goquery.Document {
	o.t.Helper()
	for range 300 {
		doc, _, _ := httpGet(o.t, o.c, o.base+runURL)
		got := doc.Find(`[data-testid=run-header]`).AttrOr("data-status", "")
		for _, s := range statuses {
			if got == s {
				return doc
			}
		}
		if got == "failed" || got == "cancelled" {
			o.fatalf("%s is %s, want %v", runURL, got, statuses)
		}
		sleepPoll()
	}
	o.fatalf("%s never reached %v", runURL, statuses)
	return nil
}

// decide approves or denies the pending turn of a waiting run with the
// card's form.
func (o *operator) decide(runURL, decision string) {
	o.t.Helper()
	doc := o.wait(runURL, "waiting_for_approval")
	form := doc.Find(`[data-testid=approval-card] [data-testid=decision-form]`)
	vals := url.Values{"decision": {decision}}
	if decision == "deny" {
		vals.Set("reason", "Keep it for the archive")
	}
	for _, name := range []string{"_csrf", "run_id", "digest"} {
		v := form.Find(`input[name=`+name+`]`).AttrOr("value", "")
		if v == "" {
			o.fatalf("%s: the decision form has no %s", runURL, name)
		}
		vals.Set(name, v)
	}
	if _, final, status := httpPost(o.t, o.c, o.base+"/tool/resume", vals); status != http.StatusOK || final.Path != runURL {
		o.fatalf("%s %s: status %d at %s", decision, runURL, status, final.Path)
	}
	// Let the run move on before the caller looks at it again.
	for range 300 {
		doc, _, _ := httpGet(o.t, o.c, o.base+runURL)
		if doc.Find(`[data-testid=approval-card] [data-testid=decision-form] input[name=digest]`).AttrOr("value", "") != form.Find(`input[name=digest]`).AttrOr("value", "") {
			return
		}
		sleepPoll()
	}
	o.fatalf("%s: the card did not change after %s", runURL, decision)
}

// cancel cancels a run with the run page's cancel form.
func (o *operator) cancel(runURL string) {
	o.t.Helper()
	doc, _, _ := httpGet(o.t, o.c, o.base+runURL)
	csrf := doc.Find(`[data-testid=cancel-run] input[name=_csrf]`).AttrOr("value", "")
	if csrf == "" {
		o.fatalf("%s has no cancel form", runURL)
	}
	if _, _, status := httpPost(o.t, o.c, o.base+runURL+"/cancel", url.Values{"_csrf": {csrf}}); status != http.StatusOK {
		o.fatalf("cancel %s: status %d", runURL, status)
	}
	o.wait(runURL, "cancelled")
}
