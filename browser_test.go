package main

import (
	"bytes"
	"context"
	"encoding/json"
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

	"countersign/app/apptest"
)

// The kit of the end-to-end tests of main_test.go: run() booted on a free
// port as `countersign serve` does, plain HTTP helpers, and a tab of the
// shared headless Chromium.

// testServer is run() serving on 127.0.0.1 at a port the kernel picked.
type testServer struct {
	// URL is the base URL printed by run(), without a trailing slash.
	URL string
	// Password is the admin password logged on the first start, or "" when
	// the database already had users.
	Password string
	// dbPath is the database file; its folder is the data directory.
	dbPath string

	out    *apptest.Buffer
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
	s := &testServer{out: &apptest.Buffer{}, cancel: cancel, exited: make(chan struct{}), dbPath: dbPath}
	go func() {
		defer close(s.exited)
		s.err = run(ctx, []string{"countersign", "serve"}, envOf(vars), s.out)
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
// waitRunStatus polls the run page at base+runURL, as a browser without
// JavaScript would by reloading, until the run has status want.
func waitRunStatus(t *testing.T, c *http.Client, base, runURL, want string) *goquery.Document {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		doc, _, _ := httpGet(t, c, base+runURL)
		got := doc.Find(`[data-testid=run-header]`).AttrOr("data-status", "")
		if got == want {
			return doc
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is %q after 15s, want %q", runURL, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

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
	out := &apptest.Buffer{}
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
	// The badge reads the outcome: the status, then what went wrong on
	// the way ("completed · 1 denied").
	if got, want := b.text(`[data-testid=run-status]`), statusWords(status); got != want && !strings.HasPrefix(got, want+" · ") {
		b.t.Fatalf("status badge reads %q, want %q", got, want)
	}
}

// statusWords is a status as the outcome badge starts.
func statusWords(status string) string {
	if status == "waiting_for_approval" {
		return "waiting for approval"
	}
	return strings.ReplaceAll(status, "_", " ")
}

// decide clicks Approve or Deny and waits until the card has gone in place.
func (b *browser) decide(sel, flash string) {
	b.t.Helper()
	b.do("click "+sel, chromedp.Click(chromedp.CSS(sel)))
	b.waitUntil("the approval card to go away", `!document.querySelector(`+js(cardSel)+`) && document.querySelector("#approval-card")`)
	b.waitUntil("the flash "+js(flash), `document.querySelector("[data-testid=flash]")?.textContent.includes(`+js(flash)+`)`)
}
