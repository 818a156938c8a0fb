package web_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/jmoiron/sqlx"
	_ "github.com/mattn/go-sqlite3" // the driver of rawDB
	"golang.org/x/crypto/bcrypt"

	"countersign/app"
	"countersign/app/apptest"
	"countersign/engine"
	"countersign/engine/models/demo"
	"countersign/engine/tools"
	"countersign/store"
)

// The people of every test app, by role.
const (
	adminName = "admin"
	olgaName  = "olga"  // operator
	oscarName = "oscar" // operator
	veraName  = "vera"  // viewer
)

// Prompts the demo model plans for.
const (
	publishAbout   = "Publish the about page."
	deleteOld      = "Delete the old announcement page."
	updatePricing  = "Update the pricing page to say the Team plan now costs $12 per seat."
	readOnlyPrompt = "How many words are on the pricing page?"
)

// passwordOf is the password of every test user.
func passwordOf(name string) string { return name + "-password" }

// testApp is the real app, built by app.New as `countersign serve` builds
// it, over a SQLite file in t.TempDir() and served by httptest.
type testApp struct {
	t      testing.TB
	db     *store.DB
	rt     *engine.Runtime
	srv    *httptest.Server
	dbPath string
	agents []engine.Agent
	users  map[string]store.User
	log    *apptest.Buffer
	// workersOff is set by withoutWorkers.
	workersOff bool
}

type appOptions struct {
	fourEyes  bool
	noWorkers bool
	now       func() time.Time
	agents    func(tools.Workspace, func() time.Time) []engine.Agent
	models    []app.Model
}

// appOption configures newTestApp.
type appOption func(*appOptions)

// withFourEyes turns on four-eyes for every agent, as COUNTERSIGN_FOUR_EYES does.
func withFourEyes() appOption { return func(o *appOptions) { o.fourEyes = true } }

// withoutWorkers leaves the app's runtime unstarted: runs stay where the
// test puts them (queued, running, waiting) and a decision claims a run that
// no worker ever resumes.
func withoutWorkers() appOption { return func(o *appOptions) { o.noWorkers = true } }

// withAgents gives the app these agents and models in place of the agents
// file and the demo model.
func withAgents(agents func(tools.Workspace, func() time.Time) []engine.Agent, models ...app.Model) appOption {
	return func(o *appOptions) { o.agents, o.models = agents, models }
}

// withClock gives the app the clock now in place of time.Now.
func withClock(now func() time.Time) appOption { return func(o *appOptions) { o.now = now } }

// testSessionKey signs the session cookies of every test app.
const testSessionKey = "0123456789abcdef0123456789abcdef-test-session-key"

// newTestApp builds and serves the app with the demo model. Everything is
// closed in t.Cleanup, in the reverse order of serve: HTTP server, runtime,
// database. The server log is printed when the test fails.
func newTestApp(t testing.TB, opts ...appOption) *testApp {
	t.Helper()
	var o appOptions
	for _, opt := range opts {
		opt(&o)
	}
	logs := &apptest.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	path := filepath.Join(t.TempDir(), "cs.db")
	a, err := app.New(context.Background(), app.Config{
		DBPath: path, BcryptCost: bcrypt.MinCost, SessionKey: []byte(testSessionKey), FourEyes: o.fourEyes, Now: o.now,
		Agents: o.agents, Models: o.models,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("close app: %v", err)
		}
	})
	if !o.noWorkers {
		a.Start()
	}
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)

	ta := &testApp{t: t, db: a.DB, rt: a.Runtime, srv: srv, dbPath: path, agents: a.Agents, users: map[string]store.User{}, log: logs,
		workersOff: o.noWorkers}
	for name, role := range map[string]string{adminName: store.RoleAdmin, olgaName: store.RoleOperator,
		oscarName: store.RoleOperator, veraName: store.RoleViewer} {
		ta.addUser(name, role)
	}
	return ta
}

// with returns the app for a subtest: its helpers fail t.
func (a *testApp) with(t *testing.T) *testApp {
	b := *a
	b.t = t
	return &b
}

// addUser creates a user through the store, with passwordOf(name).
func (a *testApp) addUser(name, role string) store.User {
	a.t.Helper()
	u, err := a.db.CreateUser(context.Background(), name, passwordOf(name), role)
	if err != nil {
		a.t.Fatalf("create user %s: %v", name, err)
	}
	a.users[name] = u
	return u
}

// run reads a run from the store.
func (a *testApp) run(id string) engine.Run {
	a.t.Helper()
	r, err := a.db.Run(context.Background(), id)
	if err != nil {
		a.t.Fatalf("run %s: %v", id, err)
	}
	return r
}

// countRuns counts every stored run.
func (a *testApp) countRuns() int {
	a.t.Helper()
	n, err := a.db.CountRuns(context.Background(), store.RunFilter{})
	if err != nil {
		a.t.Fatalf("count runs: %v", err)
	}
	return n
}

// waitStatus polls the store until the run reaches status, for at most ten
// seconds. It fails at once when the run ends in another status.
func (a *testApp) waitStatus(id string, status engine.Status) engine.Run {
	a.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := a.run(id)
		if r.Status == status {
			return r
		}
		if r.Status.Terminal() {
			a.t.Fatalf("run %s ended %s (%s: %s), want %s", id, r.Status, r.Termination, r.Error, status)
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("run %s is %s after 10s, want %s", id, r.Status, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitTerminal polls the store until the run has ended, for at most ten seconds.
func (a *testApp) waitTerminal(id string) engine.Run {
	a.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := a.run(id)
		if r.Status.Terminal() {
			return r
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("run %s is %s after 10s, want it ended", id, r.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startRun starts a run through the runtime, as by.
func (a *testApp) startRun(agent, prompt, by string) engine.Run {
	a.t.Helper()
	r, err := a.rt.StartRun(context.Background(), engine.NewRun{Agent: agent, Model: demo.Name, Prompt: prompt, InitiatedBy: by})
	if err != nil {
		a.t.Fatalf("start run: %v", err)
	}
	return r
}

// waitingRun starts a run and waits until it waits for approval. In an app
// without workers a second app over the same database drives it there with
// its runtime and is closed again, so the app's own runtime never touches
// it. That runtime's first reap also takes the queued runs and expired
// leases there are: call it before storing runs that must stay queued.
func (a *testApp) waitingRun(agent, prompt, by string) engine.Run {
	a.t.Helper()
	rt := a.rt
	if a.workersOff {
		driver, err := app.New(context.Background(), app.Config{DB: a.db, SessionKey: []byte(testSessionKey),
			Logger: slog.New(slog.NewTextHandler(a.log, nil))})
		if err != nil {
			a.t.Fatalf("driver runtime: %v", err)
		}
		driver.Start()
		defer driver.Close()
		rt = driver.Runtime
	}
	r, err := rt.StartRun(context.Background(), engine.NewRun{Agent: agent, Model: demo.Name, Prompt: prompt, InitiatedBy: by})
	if err != nil {
		a.t.Fatalf("start run: %v", err)
	}
	return a.waitStatus(r.ID, engine.StatusWaiting)
}

// createRun stores a queued run directly, with the prompt event as seq 1,
// created at now. Nothing picks it up in an app without workers.
func (a *testApp) createRun(agent, prompt, by string, now time.Time) engine.Run {
	a.t.Helper()
	r, err := a.db.CreateRun(context.Background(), engine.NewRun{Agent: agent, Model: demo.Name, Prompt: prompt, InitiatedBy: by},
		engine.Event{Kind: engine.EventPrompt, At: now, Text: prompt, By: by}, now)
	if err != nil {
		a.t.Fatalf("create run: %v", err)
	}
	return r
}

// rawDB opens the database file directly, beside the store, for what the
// store does not offer (damaging a run on purpose).
func (a *testApp) rawDB() *sqlx.DB {
	a.t.Helper()
	db, err := sqlx.Open("sqlite3", a.dbPath+"?_busy_timeout=10000&_journal_mode=WAL")
	if err != nil {
		a.t.Fatalf("open %s: %v", a.dbPath, err)
	}
	a.t.Cleanup(func() { db.Close() })
	return db
}

// setSuspendedState overwrites the stored state of a run.
func (a *testApp) setSuspendedState(id string, state []byte) {
	a.t.Helper()
	res, err := a.rawDB().Exec(`UPDATE agent_run SET suspended_state = ? WHERE id = ?`, state, id)
	if err != nil {
		a.t.Fatalf("damage state: %v", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		a.t.Fatalf("damage state: %d rows", n)
	}
}

// rawSuspendedState reads the stored state of a run as it is.
func (a *testApp) rawSuspendedState(id string) []byte {
	a.t.Helper()
	var st []byte
	if err := a.rawDB().Get(&st, `SELECT suspended_state FROM agent_run WHERE id = ?`, id); err != nil {
		a.t.Fatalf("read state: %v", err)
	}
	return st
}

// ---- HTTP client ----

// client is a browser without JavaScript: its own cookie jar, no redirects
// followed (so 303s can be asserted), the CSRF token of the last page.
type client struct {
	t    testing.TB
	app  *testApp
	http *http.Client
	csrf string
}

// with returns the client for a subtest: same browser, failing t.
func (c *client) with(t *testing.T) *client {
	return &client{t: t, app: c.app.with(t), http: c.http, csrf: c.csrf}
}

// reqOpt changes a request before it is sent.
type reqOpt func(*http.Request)

// htmx marks a request as made by htmx.
func htmx() reqOpt { return func(r *http.Request) { r.Header.Set("HX-Request", "true") } }

// header sets a request header.
func header(k, v string) reqOpt { return func(r *http.Request) { r.Header.Set(k, v) } }

// newClient returns an anonymous client.
func (a *testApp) newClient() *client {
	a.t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		a.t.Fatal(err)
	}
	return &client{t: a.t, app: a, http: &http.Client{
		Jar:           jar,
		Timeout:       20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// as returns a client signed in as name.
func (a *testApp) as(name string) *client {
	a.t.Helper()
	c := a.newClient()
	c.signIn(name, passwordOf(name))
	return c
}

// response is an answer with its body read and, for HTML, parsed.
type response struct {
	*http.Response
	body string
	doc  *goquery.Document
}

func (c *client) do(method, path string, body io.Reader, contentType string, opts ...reqOpt) *response {
	c.t.Helper()
	req, err := http.NewRequest(method, c.app.srv.URL+path, body)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for _, o := range opts {
		o(req)
	}
	res, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	r := &response{Response: res, body: string(b)}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		r.doc, err = goquery.NewDocumentFromReader(bytes.NewReader(b))
		if err != nil {
			c.t.Fatalf("%s %s: parse HTML: %v", method, path, err)
		}
		if tok, ok := r.doc.Find(`input[name="_csrf"]`).First().Attr("value"); ok && tok != "" {
			c.csrf = tok
		}
	}
	return r
}

// get fetches path.
func (c *client) get(path string, opts ...reqOpt) *response {
	c.t.Helper()
	return c.do(http.MethodGet, path, nil, "", opts...)
}

// post sends form as it is: the caller sets _csrf (or leaves it out).
func (c *client) post(path string, form url.Values, opts ...reqOpt) *response {
	c.t.Helper()
	return c.do(http.MethodPost, path, strings.NewReader(form.Encode()), "application/x-www-form-urlencoded", opts...)
}

// submit sends form with the CSRF token of the last page this client got.
func (c *client) submit(path string, form url.Values, opts ...reqOpt) *response {
	c.t.Helper()
	if c.csrf == "" {
		c.t.Fatalf("POST %s: no CSRF token: get a page first", path)
	}
	f := url.Values{}
	for k, v := range form {
		f[k] = v
	}
	f.Set("_csrf", c.csrf)
	return c.post(path, f, opts...)
}

// token returns a fresh CSRF token: from the sign-in form for a visitor,
// from the history page for a signed-in user.
func (c *client) token() string {
	c.t.Helper()
	res := c.get("/login")
	if res.StatusCode == http.StatusSeeOther {
		res = c.get("/runs")
	}
	mustStatus(c.t, res, http.StatusOK)
	if c.csrf == "" {
		c.t.Fatal("no CSRF token on the page")
	}
	return c.csrf
}

// signIn signs in through the form and fails the test unless it works.
func (c *client) signIn(name, password string) {
	c.t.Helper()
	res := c.tryLogin(name, password, "")
	mustStatus(c.t, res, http.StatusSeeOther)
	c.token()
}

// tryLogin gets the sign-in form and posts it.
func (c *client) tryLogin(name, password, next string) *response {
	c.t.Helper()
	page := c.get("/login")
	mustStatus(c.t, page, http.StatusOK)
	form := url.Values{"name": {name}, "password": {password}}
	if next != "" {
		form.Set("next", next)
	}
	return c.submit("/login", form)
}

// formValues collects the named fields of the one form sel selects, as a
// browser would submit them without the submit button.
func formValues(t *testing.T, doc *goquery.Document, sel string) (action string, v url.Values) {
	t.Helper()
	f := doc.Find(sel)
	if f.Length() != 1 {
		t.Fatalf("want one form %q, found %d", sel, f.Length())
	}
	return formOf(f)
}

// formOf collects the named fields of form f.
func formOf(f *goquery.Selection) (action string, v url.Values) {
	action, _ = f.Attr("action")
	v = url.Values{}
	f.Find("input[name], textarea[name]").Each(func(_ int, s *goquery.Selection) {
		name, _ := s.Attr("name")
		if goquery.NodeName(s) == "textarea" {
			v.Set(name, s.Text())
			return
		}
		// As a browser does: unchecked radios and checkboxes and disabled
		// inputs are not sent.
		typ := s.AttrOr("type", "")
		if _, checked := s.Attr("checked"); (typ == "radio" || typ == "checkbox") && !checked {
			return
		}
		if _, disabled := s.Attr("disabled"); disabled {
			return
		}
		val, _ := s.Attr("value")
		v.Set(name, val)
	})
	f.Find("select[name]").Each(func(_ int, s *goquery.Selection) {
		name, _ := s.Attr("name")
		opt := s.Find("option[selected]").First()
		if opt.Length() == 0 {
			opt = s.Find("option").First()
		}
		val, _ := opt.Attr("value")
		v.Set(name, val)
	})
	return action, v
}

// ---- assertions ----

// mustStatus fails the test unless res has status want.
func mustStatus(t testing.TB, res *response, want int) {
	t.Helper()
	if res.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d\n%s", res.Request.Method, res.Request.URL.Path, res.StatusCode, want, clip(res.body, 2000))
	}
}

// mustRedirect fails the test unless res is a 303 to location.
func mustRedirect(t *testing.T, res *response, location string) {
	t.Helper()
	mustStatus(t, res, http.StatusSeeOther)
	if got := res.Header.Get("Location"); got != location {
		t.Fatalf("%s %s: Location %q, want %q", res.Request.Method, res.Request.URL.Path, got, location)
	}
}

// mustCleanError checks an error answer: HTML, with a readable sentence, no
// Go internals, and the security headers.
func mustCleanError(t testing.TB, res *response, status int) {
	t.Helper()
	mustReadableError(t, res, status)
	if res.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("%s: error page without Content-Security-Policy", res.Request.URL.Path)
	}
}

// mustReadableError is mustCleanError without the security headers.
func mustReadableError(t testing.TB, res *response, status int) {
	t.Helper()
	mustStatus(t, res, status)
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("%s: Content-Type %q, want HTML", res.Request.URL.Path, ct)
	}
	for _, bad := range []string{"goroutine", "panic", ".go:", "runtime/debug", "sqlite3", "SELECT ", "UPDATE "} {
		if strings.Contains(res.body, bad) {
			t.Errorf("%s: error page leaks %q:\n%s", res.Request.URL.Path, bad, clip(res.body, 2000))
		}
	}
	if res.doc != nil && res.doc.Find(testid("error-page")+", "+testid("error")+", "+testid("flash")+", "+
		testid("form-error")+", "+testid("login-error")+", "+testid("card-error")).Length() == 0 {
		t.Errorf("%s: no readable error in\n%s", res.Request.URL.Path, clip(res.body, 2000))
	}
}

// testid selects elements by data-testid.
func testid(id string) string { return `[data-testid="` + id + `"]` }

// text returns the trimmed text of the first element sel selects in doc.
func text(doc *goquery.Document, sel string) string {
	if doc == nil {
		return ""
	}
	return strings.TrimSpace(doc.Find(sel).First().Text())
}

// attr returns an attribute of the first element sel selects.
func attr(doc *goquery.Document, sel, name string) string {
	if doc == nil {
		return ""
	}
	v, _ := doc.Find(sel).First().Attr(name)
	return v
}

// stepKinds lists the data-kind of the steps in s, in order.
func stepKinds(s *goquery.Selection) []string {
	var kinds []string
	s.Find(`li` + testid("step")).Each(func(_ int, li *goquery.Selection) {
		kinds = append(kinds, li.AttrOr("data-kind", ""))
	})
	return kinds
}

// stepSeqs lists the data-seq of the steps in s, in order.
func stepSeqs(t *testing.T, s *goquery.Selection) []int64 {
	t.Helper()
	var seqs []int64
	s.Find(`li` + testid("step")).Each(func(_ int, li *goquery.Selection) {
		n, err := strconv.ParseInt(li.AttrOr("data-seq", ""), 10, 64)
		if err != nil {
			t.Fatalf("step without a numeric data-seq: %v", err)
		}
		seqs = append(seqs, n)
	})
	return seqs
}

// runIDFrom takes the run id from a /runs/{id} redirect.
func runIDFrom(t *testing.T, res *response) string {
	t.Helper()
	mustStatus(t, res, http.StatusSeeOther)
	loc := res.Header.Get("Location")
	id, ok := strings.CutPrefix(loc, "/runs/")
	if !ok || id == "" || strings.Contains(id, "/") {
		t.Fatalf("Location %q is not a run", loc)
	}
	return id
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
