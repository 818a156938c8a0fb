package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"countersign/engine/models/demo"
)

// The end-to-end tests boot the real run() on a free port, as `countersign
// serve` does, and drive it with headless Chromium (and, for the restart
// test, plain HTTP). They assert what a person sees: data-testid elements,
// their text and the run's status badge.

// syncBuffer is run()'s stdout: the server's goroutines write to it while the
// test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// mapEnv is a getenv over a fixed set of variables.
func mapEnv(vars map[string]string) func(string) string {
	return func(key string) string { return vars[key] }
}

// testServer is run() serving on 127.0.0.1 at a port the kernel picked.
type testServer struct {
	// URL is the base URL printed by run(), without a trailing slash.
	URL string
	// Password is the admin password logged on the first start, or "" when
	// the database already had users.
	Password string

	out    *syncBuffer
	cancel context.CancelFunc
	exited chan struct{} // closed when run() has returned
	err    error         // what run() returned; read after exited is closed
}

var (
	reListening = regexp.MustCompile(`countersign listening on (http://\S+)`)
	rePassword  = regexp.MustCompile(`\buser=admin password=([0-9a-f]+)`)
)

// startServer boots run() with the database at dbPath and waits until it
// prints its URL. Cleanup cancels its context and fails the test unless run()
// then returns nil: graceful shutdown is part of what is tested.
func startServer(t *testing.T, dbPath string) *testServer {
	t.Helper()
	vars := map[string]string{
		"COUNTERSIGN_DB":   dbPath,
		"COUNTERSIGN_ADDR": "127.0.0.1:0",
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &testServer{out: &syncBuffer{}, cancel: cancel, exited: make(chan struct{})}
	go func() {
		defer close(s.exited)
		s.err = run(ctx, []string{"countersign", "serve"}, mapEnv(vars), s.out)
	}()
	t.Cleanup(func() {
		if err := s.stop(15 * time.Second); err != nil {
			t.Errorf("graceful shutdown: %v", err)
		}
		if t.Failed() {
			t.Logf("server output:\n%s", s.out.String())
		}
	})

	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := reListening.FindStringSubmatch(s.out.String()); m != nil {
			s.URL = strings.TrimSuffix(m[1], "/")
			break
		}
		select {
		case <-s.exited:
			t.Fatalf("run() returned before it listened: %v\noutput:\n%s", s.err, s.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("run() printed no 'countersign listening on' line within 20s; output:\n%s", s.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The password is logged before the listening line, so it is there now.
	if m := rePassword.FindStringSubmatch(s.out.String()); m != nil {
		s.Password = m[1]
	}
	return s
}

// stop cancels run()'s context and waits for it to return, at most timeout.
// It returns run()'s error, or an error when it did not return in time. It may
// be called more than once.
func (s *testServer) stop(timeout time.Duration) error {
	s.cancel()
	select {
	case <-s.exited:
		if s.err != nil {
			return fmt.Errorf("run() returned %w after its context was cancelled, want nil", s.err)
		}
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("run() did not return within %s after its context was cancelled", timeout)
	}
}

// newServer boots a server on a fresh database and checks that it printed
// an admin password and serves htmx.
func newServer(t *testing.T) *testServer {
	t.Helper()
	s := startServer(t, filepath.Join(t.TempDir(), "countersign.db"))
	if s.Password == "" {
		t.Fatalf("the first start logged no admin password (want a slog line with user=admin password=...); output:\n%s", s.out.String())
	}
	requireHTMX(t, s.URL)
	return s
}

// requireHTMX fails the test when the layout has no htmx script tag or the
// script is not served: the browser flows rely on it and must not pass (or
// skip) without it.
func requireHTMX(t *testing.T, base string) {
	t.Helper()
	doc, _, status := httpGet(t, http.DefaultClient, base+"/login")
	if status != http.StatusOK {
		t.Fatalf("GET /login: status %d, want 200", status)
	}
	src, ok := doc.Find(`head script[src*="/static/vendor/htmx.min."]`).Attr("src")
	if !ok {
		t.Fatal("htmx is not served: the layout has no <script src=\"/static/vendor/htmx.min.*.js\"> tag, " +
			"so static/vendor/htmx.min.js was missing when this test binary was built. " +
			"Run `make assets` (it copies htmx from node_modules) and run the tests again.")
	}
	resp, err := http.Get(base + src)
	if err != nil {
		t.Fatalf("GET %s: %v", src, err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		t.Fatalf("read %s: %v", src, err)
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(body.String(), "htmx") {
		t.Fatalf("htmx is not served: GET %s gave status %d and %d bytes; run `make assets`", src, resp.StatusCode, body.Len())
	}
}

// httpGet fetches a page and parses it.
func httpGet(t *testing.T, c *http.Client, u string) (*goquery.Document, *url.URL, int) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return parseResponse(t, resp)
}

// httpPost posts a form and parses the page it ends on (after redirects).
func httpPost(t *testing.T, c *http.Client, u string, form url.Values) (*goquery.Document, *url.URL, int) {
	t.Helper()
	resp, err := c.PostForm(u, form)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	return parseResponse(t, resp)
}

func parseResponse(t *testing.T, resp *http.Response) (*goquery.Document, *url.URL, int) {
	t.Helper()
	defer resp.Body.Close()
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", resp.Request.URL, err)
	}
	return doc, resp.Request.URL, resp.StatusCode
}

// newHTTPClient is a client with a cookie jar, like a browser without
// JavaScript.
func newHTTPClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 10 * time.Second}
}

// signInHTTP signs in through the login form.
func signInHTTP(t *testing.T, c *http.Client, base, name, password string) {
	t.Helper()
	doc, _, _ := httpGet(t, c, base+"/login")
	csrf, _ := doc.Find(`[data-testid=login-form] input[name=_csrf]`).Attr("value")
	if csrf == "" {
		t.Fatal("the login form has no CSRF token")
	}
	doc, final, status := httpPost(t, c, base+"/login", url.Values{"_csrf": {csrf}, "name": {name}, "password": {password}})
	if status != http.StatusOK || doc.Find(`[data-testid=nav-user]`).Text() != name {
		t.Fatalf("sign in as %s: status %d at %s, nav user %q", name, status, final, doc.Find(`[data-testid=nav-user]`).Text())
	}
}

// browser is a test's tab, in a browser context of its own in the shared
// headless Chromium. Every JavaScript dialog fails the test (and is dismissed
// so the page does not hang), and so does every console error or uncaught
// exception.
type browser struct {
	t   *testing.T
	ctx context.Context // the tab, with the per-test timeout

	mu       sync.Mutex
	tab      context.Context // the tab without the timeout
	dialogs  []string
	problems []string
}

// browserTimeout bounds each browser test.
const browserTimeout = 60 * time.Second

// chromium is the one Chromium process the browser tests share; each test
// gets its own browser context (cookies, storage) and tab in it. TestMain
// stops it.
var chromium struct {
	once   sync.Once
	ctx    context.Context // the browser's chromedp context
	cancel context.CancelFunc
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if chromium.cancel != nil {
		chromium.cancel()
	}
	os.Exit(code)
}

// startChromium starts the shared Chromium (CHROMIUM_PATH, or Debian's
// /usr/bin/chromium) with the flags that work on our machines. chromedp
// gives it a fresh --user-data-dir and removes it on exit.
func startChromium() error {
	path := os.Getenv("CHROMIUM_PATH")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(path); err != nil {
		return fmt.Errorf("the end-to-end tests need Chromium, which was not found at %s (%v). "+
			"Install it with `apt-get update && apt-get install -y chromium` (CI's .ci/run does), "+
			"or point CHROMIUM_PATH at a Chromium or Chrome binary", path, err)
	}
	out := &syncBuffer{}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 1000),
		chromedp.CombinedOutput(out),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	chromium.ctx = ctx
	chromium.cancel = func() { cancelCtx(); cancelAlloc() }
	// The first Do starts the browser and binds its life to ctx, which
	// therefore has no timeout.
	if err := chromedp.Do(ctx); err != nil {
		msg := out.String()
		if len(msg) > 4000 {
			msg = msg[len(msg)-4000:]
		}
		return fmt.Errorf("start Chromium at %s: %w\nits output:\n%s", path, err, msg)
	}
	return nil
}

// newBrowser opens a tab in a new browser context of the shared Chromium,
// with the per-test timeout and the dialog and console listener.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	chromium.once.Do(func() { chromium.err = startChromium() })
	if chromium.err != nil {
		t.Fatal(chromium.err)
	}
	b := &browser{t: t}
	tab, cancelTab := chromedp.NewContext(chromium.ctx, chromedp.WithNewBrowserContext(), chromedp.WithListener(b.listen))
	t.Cleanup(cancelTab)
	b.mu.Lock()
	b.tab = tab
	b.mu.Unlock()
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	ctx, cancel := context.WithTimeout(tab, browserTimeout)
	t.Cleanup(cancel)
	b.ctx = ctx
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the page at the end:\n%s", b.pageText())
		}
		b.checkClean()
	})
	return b
}

// listen runs in the tab's event loop: it only records, and dismisses a
// dialog from another goroutine so the page does not stall.
func (b *browser) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *page.EventJavascriptDialogOpening:
		b.dialogs = append(b.dialogs, fmt.Sprintf("%s(%q) on %s", ev.Type, ev.Message, ev.URL))
		tab := b.tab
		go func() {
			_, _ = chromedp.Call(tab, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}()
	case *cdpruntime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		b.problems = append(b.problems, fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber+1, msg))
	case *cdpruntime.EventConsoleAPICalled:
		if ev.Type != cdpruntime.ConsoleAPICalledTypeError && ev.Type != cdpruntime.ConsoleAPICalledTypeAssert {
			return
		}
		var parts []string
		for _, a := range ev.Args {
			if a.Description != "" {
				parts = append(parts, a.Description)
			} else {
				parts = append(parts, string(a.Value))
			}
		}
		b.problems = append(b.problems, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(parts, " ")))
	case *log.EventEntryAdded:
		e := ev.Entry
		// Chromium asks for /favicon.ico on its own; we serve none.
		if e.Level != log.EntryLevelError || strings.HasSuffix(e.URL, "/favicon.ico") {
			return
		}
		b.problems = append(b.problems, fmt.Sprintf("console %s (%s): %s %s", e.Level, e.Source, e.Text, e.URL))
	}
}

// dialogsSeen returns the dialogs so far.
func (b *browser) dialogsSeen() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.dialogs)
}

// checkClean fails the test for every dialog and console error so far.
func (b *browser) checkClean() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, d := range b.dialogs {
		b.t.Errorf("a JavaScript dialog opened: %s", d)
	}
	for _, p := range b.problems {
		b.t.Errorf("browser console: %s", p)
	}
	b.dialogs, b.problems = nil, nil
}

// pageText is the URL and visible text of the page, for failure messages.
func (b *browser) pageText() string {
	ctx, cancel := context.WithTimeout(b.tab, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + (document.body ? document.body.innerText : "")`))
	if err != nil {
		return fmt.Sprintf("(could not read the page: %v)", err)
	}
	if len(s) > 6000 {
		s = s[:6000] + "…"
	}
	return s
}

// do runs actions that need no page load, failing the test on error.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v\npage:\n%s", what, err, b.pageText())
	}
}

// load runs an action that loads a new page (a click on a link or a submit
// button) and waits for the page; it must answer 200.
func (b *browser) load(what string, trigger chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	resp, err := chromedp.RunResponse(b.ctx, trigger)
	if err != nil {
		b.t.Fatalf("%s: %v\npage:\n%s", what, err, b.pageText())
	}
	if resp == nil || resp.Status != http.StatusOK {
		status := int64(0)
		if resp != nil {
			status = resp.Status
		}
		b.t.Fatalf("%s: status %d, want 200\npage:\n%s", what, status, b.pageText())
	}
}

// navigate opens a URL and waits for it to load.
func (b *browser) navigate(u string) {
	b.t.Helper()
	b.load("open "+u, chromedp.Navigate(u))
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v\npage:\n%s", expr, err, b.pageText())
	}
	return v
}

// waitUntil polls a JavaScript condition until it holds. It polls from Go
// through DevTools, not with an in-page poller, because the page's CSP
// forbids the eval that such pollers use.
func (b *browser) waitUntil(what, cond string) {
	b.t.Helper()
	const limit = 20 * time.Second
	deadline := time.Now().Add(limit)
	var lastErr error
	for {
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`Boolean(`+cond+`)`))
		if err == nil && ok {
			return
		}
		lastErr = err
		if time.Now().After(deadline) || b.ctx.Err() != nil {
			b.t.Fatalf("waited %s for %s; not so (last error: %v)\npage:\n%s", limit, what, lastErr, b.pageText())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// js quotes a string for JavaScript.
func js(s string) string {
	q, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(q)
}

// text is the trimmed textContent of the first element matching sel, or ""
// when there is none.
func (b *browser) text(sel string) string {
	b.t.Helper()
	return eval[string](b, `(document.querySelector(`+js(sel)+`)?.textContent ?? "").trim()`)
}

// count is the number of elements matching sel.
func (b *browser) count(sel string) int {
	b.t.Helper()
	return eval[int](b, `document.querySelectorAll(`+js(sel)+`).length`)
}

// stepKinds lists the kinds of the steps on the run page, in order.
func (b *browser) stepKinds() []string {
	b.t.Helper()
	return eval[[]string](b, `Array.from(document.querySelectorAll("#steps [data-testid=step]"), e => e.dataset.kind)`)
}

// signIn signs in through the login form and expects the playground.
func (b *browser) signIn(base, name, password string) {
	b.t.Helper()
	b.navigate(base + "/login")
	b.do("fill in the sign-in form",
		chromedp.SendKeys(chromedp.CSS(`[data-testid=login-form] input[name=name]`), name),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=login-form] input[name=password]`), password),
	)
	b.load("sign in", chromedp.Click(chromedp.CSS(`[data-testid=login-submit]`)))
	if got := eval[string](b, `location.pathname`); got != "/runs/new" {
		b.t.Fatalf("after sign-in the browser is at %s, want the playground /runs/new\npage:\n%s", got, b.pageText())
	}
	if got := b.text(`[data-testid=nav-user]`); got != name {
		b.t.Fatalf("nav shows user %q, want %q", got, name)
	}
	if b.count(`[data-testid=new-run-form]`) != 1 || b.count(`[data-testid=example]`) == 0 {
		b.t.Fatalf("the playground shows no new-run form or no examples\npage:\n%s", b.pageText())
	}
	if !eval[bool](b, `typeof htmx === "object"`) {
		b.t.Fatal("htmx did not load in the browser (window.htmx is missing); run `make assets`")
	}
}

// startExample clicks an example prompt of the editor agent in the
// playground and waits for the run page.
func (b *browser) startExample(prompt string) (runID string) {
	b.t.Helper()
	xpath := fmt.Sprintf(`//button[@data-testid="example" and @data-agent="editor" and normalize-space(.)=%q]`, prompt)
	b.load("click the example "+prompt, chromedp.Click(chromedp.Search(xpath)))
	return b.onRunPage()
}

// onRunPage checks that the browser shows a run page and returns its id.
func (b *browser) onRunPage() string {
	b.t.Helper()
	path := eval[string](b, `location.pathname`)
	id, ok := strings.CutPrefix(path, "/runs/")
	if !ok || id == "" || strings.Contains(id, "/") || b.count(`[data-testid=run-header]`) != 1 {
		b.t.Fatalf("expected a run page, the browser is at %s\npage:\n%s", path, b.pageText())
	}
	if got := b.text(`[data-testid=run-id]`); got != id {
		b.t.Fatalf("the run page shows run id %q, want %q", got, id)
	}
	return id
}

// setMarker puts a value on window that a full page load would lose.
func (b *browser) setMarker() {
	b.t.Helper()
	b.do("set the no-reload marker", chromedp.Evaluate[chromedp.Void](`window.__marker = "still here"`))
}

// checkMarker fails when the page has been reloaded since setMarker.
func (b *browser) checkMarker(when string) {
	b.t.Helper()
	if !eval[bool](b, `window.__marker === "still here"`) {
		b.t.Fatalf("%s: the page was reloaded (window.__marker is gone); htmx should have updated it in place", when)
	}
}

const (
	cardSel    = `[data-testid=approval-card]`
	approveSel = `[data-testid=approval-card] [data-testid=approve]`
	denySel    = `[data-testid=approval-card] [data-testid=deny]`
)

// waitForCard waits until polling (or the first render) shows the approval
// card for a call of tool, with its preview.
func (b *browser) waitForCard(tool string) {
	b.t.Helper()
	b.waitUntil("the approval card with an Approve button", `document.querySelector(`+js(approveSel)+`)`)
	if got := b.text(cardSel + ` [data-testid=pending-call] .tool-name`); got != tool {
		b.t.Fatalf("the approval card is for %q, want %q", got, tool)
	}
	if b.text(cardSel+` [data-testid=preview]`) == "" {
		b.t.Fatalf("the approval card for %s shows no preview", tool)
	}
	if got := eval[string](b, `document.querySelector("[data-testid=run-status]").dataset.status`); got != "waiting_for_approval" {
		b.t.Fatalf("status badge %q while the card shows, want waiting_for_approval", got)
	}
}

// waitForStatus waits until the run's status badge shows status.
func (b *browser) waitForStatus(status string) {
	b.t.Helper()
	b.waitUntil("status "+status, `document.querySelector("[data-testid=run-status]")?.dataset.status === `+js(status))
	if got := b.text(`[data-testid=run-status]`); got != strings.ReplaceAll(status, "_", " ") {
		b.t.Fatalf("status badge reads %q, want %q", got, status)
	}
}

// decide clicks Approve or Deny and waits until the card has gone in place.
func (b *browser) decide(sel, flash string) {
	b.t.Helper()
	b.do("click "+sel, chromedp.Click(chromedp.CSS(sel)))
	b.waitUntil("the approval card to go away", `!document.querySelector(`+js(cardSel)+`) && document.querySelector("#approval-card")`)
	b.waitUntil("the flash "+js(flash), `document.querySelector("[data-testid=flash]")?.textContent.includes(`+js(flash)+`)`)
}

// TestApproveInBrowser signs in, starts an example, approves the write and
// watches the run complete in place.
func TestApproveInBrowser(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	b := newBrowser(t)
	b.signIn(srv.URL, "admin", srv.Password)

	b.startExample("Publish the about page.")
	b.setMarker()
	if b.count(cardSel) == 0 {
		t.Log("the run page loaded before the run suspended; polling brings the card")
	}
	b.waitForCard("publish_page")
	b.waitUntil("the inbox badge to show 1", `document.querySelector("[data-testid=inbox-badge]").textContent.trim() === "1"`)
	b.checkMarker("after the card appeared")

	b.decide(approveSel, "Approved")
	b.waitForStatus("completed")
	b.checkMarker("after approving")

	want := []string{"prompt", "model_turn", "suspended", "decision", "tool_started", "tool_finished", "model_turn", "finished"}
	if got := b.stepKinds(); !slices.Equal(got, want) {
		t.Errorf("steps %v, want %v", got, want)
	}
	if got := eval[int](b, `new Set(Array.from(document.querySelectorAll("#steps [data-testid=step]"), e => e.dataset.seq)).size`); got != len(want) {
		t.Errorf("%d distinct step numbers, want %d (a step shown twice?)", got, len(want))
	}
	if got := b.text(`[data-testid=decision]`); !strings.Contains(got, "admin") {
		t.Errorf("decision step %q does not name admin", got)
	}
	if got := b.text(`[data-testid=final-answer]`); got != "I published the page “about”." {
		t.Errorf("final answer %q", got)
	}
	if b.count(`[data-testid=write-mark]`) != 1 {
		t.Error("the tool_started step is not marked as an approved write")
	}
	b.waitUntil("the inbox badge to go back to 0", `document.querySelector("[data-testid=inbox-badge]").textContent.trim() === "0"`)
	if b.count(`#poller[data-active]`) != 0 {
		t.Error("the poller still polls after the run completed")
	}
	b.checkMarker("at the end")

	// A reload shows the same, from the server alone.
	b.navigate(srv.URL + eval[string](b, `location.pathname`))
	if got := b.stepKinds(); !slices.Equal(got, want) {
		t.Errorf("after a reload: steps %v, want %v", got, want)
	}
	if b.count(cardSel) != 0 {
		t.Error("after a reload the completed run still shows an approval card")
	}
}

// TestDenyWithReasonInBrowser denies a write with a reason, which the model's
// final answer quotes.
func TestDenyWithReasonInBrowser(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	b := newBrowser(t)
	b.signIn(srv.URL, "admin", srv.Password)

	b.startExample("Delete the old announcement page.")
	b.setMarker()
	b.waitForCard("delete_page")
	// No quote mark at either end: the demo model trims those off when it
	// quotes a reason.
	reason := `Keep "it" for the <archive> & legal`
	b.do("type a reason", chromedp.SendKeys(chromedp.CSS(cardSel+` [data-testid=reason-input]`), reason))
	b.decide(denySel, "Denied")
	b.waitForStatus("completed")
	b.checkMarker("after denying")

	if got := b.text(`[data-testid=decision]`); !strings.Contains(got, "admin") {
		t.Errorf("decision step %q does not name admin", got)
	}
	if got := eval[string](b, `document.querySelector("[data-testid=decision]").dataset.decision`); got != "deny" {
		t.Errorf("decision %q, want deny", got)
	}
	if got := b.text(`[data-testid=reason]`); got != reason {
		t.Errorf("the decision step shows the reason %q, want %q", got, reason)
	}
	answer := b.text(`[data-testid=final-answer]`)
	if !strings.Contains(answer, "denied") || !strings.Contains(answer, "“"+reason+"”") {
		t.Errorf("the final answer does not quote the reason %q:\n%s", reason, answer)
	}
	if kinds := b.stepKinds(); slices.Contains(kinds, "tool_started") || len(kinds) == 0 || kinds[len(kinds)-1] != "finished" {
		t.Errorf("steps %v: a denied call must not start, and the run must finish", kinds)
	}
	if b.count(`archive`) != 0 {
		t.Error("the reason was parsed as HTML")
	}
}

// TestSuspendsTwiceInBrowser approves two turns of one run: after the first
// decision, polling brings the second card.
func TestSuspendsTwiceInBrowser(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	b := newBrowser(t)
	b.signIn(srv.URL, "admin", srv.Password)

	b.startExample("Create a page announcing the winter sale, then publish it.")
	b.setMarker()
	b.waitForCard("create_page")
	b.decide(approveSel, "Approved")
	// The decision restarted polling, which brings the card of the second
	// turn without a reload.
	b.waitForCard("publish_page")
	b.checkMarker("when the second card appeared")
	b.decide(approveSel, "Approved")
	b.waitForStatus("completed")
	b.checkMarker("at the end")

	kinds := b.stepKinds()
	n := func(kind string) int {
		c := 0
		for _, k := range kinds {
			if k == kind {
				c++
			}
		}
		return c
	}
	if n("suspended") != 2 || n("decision") != 2 || n("tool_finished") != 2 || len(kinds) == 0 || kinds[len(kinds)-1] != "finished" {
		t.Errorf("steps %v: want two suspensions, two decisions, two tool results, then finished", kinds)
	}
	if got := b.text(`[data-testid=final-answer]`); !strings.Contains(got, "published it") {
		t.Errorf("final answer %q", got)
	}
}

// TestInjectionShownAsText starts runs whose prompts are markup and checks
// that every page shows them as text and no script runs.
func TestInjectionShownAsText(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	b := newBrowser(t)
	b.signIn(srv.URL, "admin", srv.Password)

	const prompt = `<script>alert(1)</script><img src=x onerror=alert(2)> <a href="javascript:alert(3)">x</a>`
	noMarkup := func(where string) {
		t.Helper()
		for _, sel := range []string{`img`, `img[onerror]`, `main script`, `a[href^="javascript" i]`, `[onerror]`} {
			if n := b.count(sel); n != 0 {
				t.Errorf("%s: %d elements match %s; the prompt was parsed as HTML", where, n, sel)
			}
		}
	}

	b.do("type the prompt", chromedp.SendKeys(chromedp.CSS(`[data-testid=prompt]`), prompt))
	b.load("start the run", chromedp.Click(chromedp.CSS(`[data-testid=start-run]`)))
	id := b.onRunPage()
	b.waitForStatus("completed")
	if got := b.text(`[data-testid=prompt-text]`); got != prompt {
		t.Errorf("the run page shows the prompt as %q, want the text %q", got, prompt)
	}
	if b.text(`[data-testid=final-answer]`) == "" {
		t.Error("the run has no final answer")
	}
	noMarkup("run page")

	b.navigate(srv.URL + "/runs")
	row := `[data-testid=run-row][data-run-id=` + js(id) + `]`
	if got := b.text(row + ` td[data-label=Prompt]`); got != prompt {
		t.Errorf("the history lists the prompt as %q, want %q", got, prompt)
	}
	noMarkup("history page")

	// The search box echoes its query into an attribute.
	const q = `"><img src=x onerror=alert(4)>`
	b.navigate(srv.URL + "/runs?q=" + url.QueryEscape(q))
	if got := eval[string](b, `document.querySelector("[data-testid=filter-q]").value`); got != q {
		t.Errorf("the search box holds %q, want %q", got, q)
	}
	noMarkup("history search")

	// Tool arguments and previews on the approval card come from the model.
	b.navigate(srv.URL + "/runs/new")
	b.do("type a create prompt", chromedp.SendKeys(chromedp.CSS(`[data-testid=prompt]`),
		`Create a page announcing <img src=x onerror=alert(5)>, then publish it.`))
	b.load("start the run", chromedp.Click(chromedp.CSS(`[data-testid=start-run]`)))
	b.onRunPage()
	b.waitForCard("create_page")
	if got := b.text(cardSel); !strings.Contains(got, "onerror=alert(5)") {
		t.Errorf("the approval card does not show the injected title as text:\n%s", got)
	}
	noMarkup("approval card")
	b.decide(denySel, "Denied")
	b.waitForStatus("completed")
	noMarkup("denied run")

	// Give a stray handler a moment, then check that no dialog opened.
	time.Sleep(300 * time.Millisecond)
	if d := b.dialogsSeen(); len(d) != 0 {
		t.Fatalf("dialogs opened: %v", d)
	}
	// The listener does catch a dialog: open one through DevTools, which
	// the page's CSP does not govern.
	b.do("open a probe alert", chromedp.Evaluate[chromedp.Void](`setTimeout(() => alert("probe"), 0)`))
	b.waitUntil("the page to run again after the probe alert was dismissed", `true`)
	deadline := time.Now().Add(5 * time.Second)
	for len(b.dialogsSeen()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if d := b.dialogsSeen(); len(d) != 1 || !strings.Contains(d[0], "probe") {
		t.Fatalf("the dialog listener saw %v, want the probe alert", d)
	}
	b.mu.Lock()
	b.dialogs = nil
	b.mu.Unlock()
}

// TestRestartKeepsWaitingRun stops the server while a run waits for approval
// and starts it again on the same database: the run is still there and can
// be approved, over plain HTTP as a browser without JavaScript would.
func TestRestartKeepsWaitingRun(t *testing.T) {
	t.Parallel()
	dbPath := filepath.Join(t.TempDir(), "countersign.db")
	first := startServer(t, dbPath)
	if first.Password == "" {
		t.Fatal("the first start logged no admin password")
	}
	c := newHTTPClient(t)
	signInHTTP(t, c, first.URL, "admin", first.Password)

	doc, _, _ := httpGet(t, c, first.URL+"/runs/new")
	csrf, _ := doc.Find(`[data-testid=new-run-form] input[name=_csrf]`).Attr("value")
	_, final, status := httpPost(t, c, first.URL+"/runs", url.Values{"_csrf": {csrf}, "agent": {"editor"},
		"model": {demo.Name}, "prompt": {"Publish the about page."}})
	runID, ok := strings.CutPrefix(final.Path, "/runs/")
	if status != http.StatusOK || !ok || runID == "" {
		t.Fatalf("start a run: status %d at %s", status, final)
	}
	runURL := "/runs/" + runID
	waitStatus := func(base, want string) *goquery.Document {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			doc, _, _ := httpGet(t, c, base+runURL)
			got := doc.Find(`[data-testid=run-header]`).AttrOr("data-status", "")
			if got == want {
				return doc
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s is %q after 15s, want %q", runID, got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitStatus(first.URL, "waiting_for_approval")

	began := time.Now()
	if err := first.stop(5 * time.Second); err != nil {
		t.Fatalf("stop while a run waits: %v", err)
	}
	t.Logf("run() returned %s after its context was cancelled", time.Since(began).Round(time.Millisecond))

	second := startServer(t, dbPath)
	if second.Password != "" || strings.Contains(second.out.String(), "created the first user") {
		t.Error("the second start created the admin again")
	}
	// The session key is kept in the database, so the cookie still signs
	// admin in.
	doc = waitStatus(second.URL, "waiting_for_approval")
	if got := doc.Find(`[data-testid=nav-user]`).Text(); got != "admin" {
		t.Fatalf("after the restart the session no longer signs in admin (nav user %q)", got)
	}
	if got := doc.Find(`[data-testid=inbox-badge]`).Text(); strings.TrimSpace(got) != "1" {
		t.Errorf("inbox badge %q, want 1", got)
	}
	form := doc.Find(`[data-testid=approval-card] [data-testid=decision-form]`)
	if form.Length() != 1 || doc.Find(`[data-testid=approval-card] [data-testid=pending-call] .tool-name`).Text() != "publish_page" {
		t.Fatal("after the restart the waiting run shows no approval card for publish_page")
	}
	vals := url.Values{"decision": {"approve"}}
	for _, name := range []string{"_csrf", "run_id", "digest"} {
		v, _ := form.Find(`input[name=` + name + `]`).Attr("value")
		if v == "" {
			t.Fatalf("the decision form has no %s", name)
		}
		vals.Set(name, v)
	}
	doc, final, status = httpPost(t, c, second.URL+"/tool/resume", vals)
	if status != http.StatusOK || final.Path != runURL {
		t.Fatalf("approve: status %d at %s, want 200 at %s", status, final.Path, runURL)
	}
	if got := doc.Find(`[data-testid=flash]`).Text(); !strings.Contains(got, "Approved") {
		t.Errorf("flash after approving %q", got)
	}
	doc = waitStatus(second.URL, "completed")
	var kinds []string
	doc.Find(`#steps [data-testid=step]`).Each(func(_ int, s *goquery.Selection) { kinds = append(kinds, s.AttrOr("data-kind", "")) })
	want := []string{"prompt", "model_turn", "suspended", "decision", "tool_started", "tool_finished", "model_turn", "finished"}
	if !slices.Equal(kinds, want) {
		t.Errorf("steps %v, want %v", kinds, want)
	}
}

// TestCommands runs the subcommands other than serve.
func TestCommands(t *testing.T) {
	t.Parallel()
	dbPath := filepath.Join(t.TempDir(), "cli.db")
	base := map[string]string{"COUNTERSIGN_DB": dbPath}
	cmd := func(t *testing.T, vars map[string]string, args ...string) (string, error) {
		t.Helper()
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"countersign"}, args...), mapEnv(vars), &out)
		return out.String(), err
	}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}

	out, err := cmd(t, base, "migrate")
	if err != nil || !regexp.MustCompile(`database .*cli\.db is at schema version [1-9]\d*\n`).MatchString(out) {
		t.Fatalf("migrate: %v, output %q", err, out)
	}

	out, err = cmd(t, with(map[string]string{"COUNTERSIGN_PASSWORD": "correct horse battery"}), "user", "add", "bob", "operator")
	if err != nil || out != "added bob (operator)\n" {
		t.Fatalf("user add bob operator: %v, output %q (a given password must not be printed)", err, out)
	}
	out, err = cmd(t, base, "user", "add", "carol", "viewer")
	if err != nil || !regexp.MustCompile(`^added carol \(viewer\)\npassword: \S{12,}\n$`).MatchString(out) {
		t.Fatalf("user add carol viewer without COUNTERSIGN_PASSWORD: %v, output %q (want a generated password)", err, out)
	}
	if _, err := cmd(t, with(map[string]string{"COUNTERSIGN_PASSWORD": "correct horse battery"}), "user", "add", "bob", "admin"); err == nil {
		t.Error("adding bob twice succeeded")
	}

	userLine := func(out, name string) []string {
		for line := range strings.Lines(out) {
			if f := strings.Fields(line); len(f) > 0 && f[0] == name {
				return f
			}
		}
		return nil
	}
	out, err = cmd(t, base, "user", "list")
	if err != nil {
		t.Fatalf("user list: %v", err)
	}
	if f := userLine(out, "bob"); len(f) != 4 || f[1] != "operator" || f[3] != "active" {
		t.Fatalf("user list shows bob as %q:\n%s", f, out)
	}
	if !strings.HasPrefix(out, "NAME") {
		t.Errorf("user list has no header:\n%s", out)
	}

	out, err = cmd(t, base, "user", "disable", "bob")
	if err != nil || out != "disabled bob\n" {
		t.Fatalf("user disable bob: %v, output %q", err, out)
	}
	out, _ = cmd(t, base, "user", "list")
	if f := userLine(out, "bob"); len(f) != 4 || f[3] != "disabled" {
		t.Errorf("after disabling, user list shows bob as %q:\n%s", f, out)
	}

	out, err = cmd(t, base, "help")
	if err != nil || !strings.HasPrefix(out, "usage: countersign") {
		t.Errorf("help: %v, output %q", err, out)
	}

	for _, tc := range []struct {
		name string
		vars map[string]string
		args []string
		want string // in the error
	}{
		{"unknown command", base, []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown user command", base, []string{"user", "rename", "bob"}, "unknown user command"},
		{"user without subcommand", base, []string{"user"}, "usage"},
		{"user add without role", base, []string{"user", "add", "dave"}, "usage"},
		{"user add bad role", with(map[string]string{"COUNTERSIGN_PASSWORD": "correct horse battery"}), []string{"user", "add", "dave", "root"}, "role"},
		{"disable unknown user", base, []string{"user", "disable", "nobody"}, `user "nobody"`},
		{"workers not a number", with(map[string]string{"COUNTERSIGN_WORKERS": "many"}), []string{"migrate"}, "COUNTERSIGN_WORKERS"},
		{"workers zero", with(map[string]string{"COUNTERSIGN_WORKERS": "0"}), []string{"serve"}, "COUNTERSIGN_WORKERS"},
		{"workers too many", with(map[string]string{"COUNTERSIGN_WORKERS": "257"}), []string{"serve"}, "COUNTERSIGN_WORKERS"},
		{"retention", with(map[string]string{"COUNTERSIGN_RETENTION": "-1h"}), []string{"serve"}, "COUNTERSIGN_RETENTION"},
		{"lease", with(map[string]string{"COUNTERSIGN_LEASE": "10ms"}), []string{"serve"}, "COUNTERSIGN_LEASE"},
		{"four eyes", with(map[string]string{"COUNTERSIGN_FOUR_EYES": "maybe"}), []string{"serve"}, "COUNTERSIGN_FOUR_EYES"},
		{"log level", with(map[string]string{"COUNTERSIGN_LOG_LEVEL": "loud"}), []string{"serve"}, "COUNTERSIGN_LOG_LEVEL"},
		{"short session key", with(map[string]string{"COUNTERSIGN_SESSION_KEY": "short", "COUNTERSIGN_ADDR": "127.0.0.1:0"}), []string{"serve"}, "COUNTERSIGN_SESSION_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := cmd(t, tc.vars, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run %v: error %v, want one containing %q (output %q)", tc.args, err, tc.want, out)
			}
			if strings.Contains(out, "listening") {
				t.Errorf("run %v served despite the error", tc.args)
			}
		})
	}
}

// TestServeFailsOnBusyAddress checks that a listen error comes back from
// run() instead of hanging.
func TestServeFailsOnBusyAddress(t *testing.T) {
	t.Parallel()
	srv := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	addr := strings.TrimPrefix(srv.URL, "http://")
	var out bytes.Buffer
	vars := map[string]string{"COUNTERSIGN_DB": filepath.Join(t.TempDir(), "b.db"), "COUNTERSIGN_ADDR": addr}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := run(ctx, []string{"countersign"}, mapEnv(vars), &out)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "listen on") {
		t.Fatalf("run() on a busy address: %v, want a listen error", err)
	}
}
