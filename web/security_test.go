package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"countersign/engine"
	"countersign/engine/models/demo"
	"countersign/views"
)

// fakeClock is the injected clock of an app whose test moves time by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 12, 2, 16, 21, 7, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestSafeNext: after sign-in, a next address that a browser would take
// to another host (once it has dropped tabs and newlines and read
// backslashes as slashes) sends the user to /; a path on this site is kept.
func TestSafeNext(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	olga := a.as(olgaName)

	hostile := []string{
		"/\t/evil.example",     // /%09/evil.example once decoded: a browser drops the tab
		"/\n/evil.example",     // newlines are dropped too
		"/\r/evil.example",     //
		"/\r\n/evil.example",   //
		"/\x00/evil.example",   // NUL
		"/\x7f/evil.example",   // DEL
		"/\u0085/evil.example", // a C1 control (NEL)
		"\t//evil.example",     // leading controls are stripped
		" //evil.example",      // and so are leading spaces
		"//evil.example",       // scheme-relative
		"///evil.example",      //
		"//evil.example/runs",  //
		"/\\evil.example",      // a backslash is a slash
		"/\\/evil.example",     //
		"\\/evil.example",      //
		"\\\\evil.example",     //
		"/runs\\..\\..\\evil",  // a backslash anywhere
		"https://evil.example", // absolute
		"https:evil.example",   // scheme with no slashes
		"http:/evil.example",   //
		"javascript:alert(1)",  //
		"evil.example",         // relative
		"runs",                 //
		"./runs",               //
		"",                     //
		"/runs/x\x00",          // a control at the end
		"/runs?next=\t",        // or in the query
		"/runs#\n",             // or the fragment
		"/\xff/evil.example",   // not UTF-8
	}
	kept := []string{
		"/",
		"/runs",
		"/runs/abc?x=1",
		"/runs?status=waiting_for_approval&agent=editor",
		"/runs/01JABC/steps?after=3",
		"/inbox#top",
		"/users/1/role",
		"/a:b",
		"/%2F%2Fevil.example", // an encoded slash is a path segment on this site
		"/runs/%E2%9C%93",
	}

	t.Run("signed in, GET /login", func(t *testing.T) {
		olga := olga.with(t)
		check := func(next, want string) {
			t.Helper()
			res := olga.get("/login?" + url.Values{"next": {next}}.Encode())
			mustStatus(t, res, http.StatusSeeOther)
			if got := res.Header.Get("Location"); got != want {
				t.Errorf("next %q: Location %q, want %q", next, got, want)
			}
		}
		for _, next := range hostile {
			check(next, "/")
		}
		for _, next := range kept {
			check(next, next)
		}
	})

	t.Run("sign-in form", func(t *testing.T) {
		c := a.with(t).newClient()
		res := c.get("/login?" + url.Values{"next": {"/\t/evil.example"}}.Encode())
		mustStatus(t, res, http.StatusOK)
		if got := attr(res.doc, `input[name="next"]`, "value"); got != "/" && got != "" {
			t.Errorf("the form carries next %q", got)
		}
	})

	t.Run("POST /login", func(t *testing.T) {
		for next, want := range map[string]string{"/\t/evil.example": "/", "/\\evil.example": "/", "/runs/abc?x=1": "/runs/abc?x=1"} {
			c := a.with(t).newClient()
			res := c.tryLogin(olgaName, passwordOf(olgaName), next)
			mustRedirect(t, res, want)
		}
	})
}

// loginFrom posts the sign-in form as a client at addr.
func loginFrom(c *client, addr, name, password string) *response {
	c.t.Helper()
	c.token()
	return c.submit("/login", url.Values{"name": {name}, "password": {password}}, header("X-Forwarded-For", addr))
}

// mustThrottled checks a 429 with a whole number of seconds in Retry-After,
// on the sign-in page, and returns that number.
func mustThrottled(t *testing.T, res *response) time.Duration {
	t.Helper()
	mustReadableError(t, res, http.StatusTooManyRequests)
	secs, err := strconv.Atoi(res.Header.Get("Retry-After"))
	if err != nil || secs < 1 {
		t.Fatalf("Retry-After %q, want whole seconds", res.Header.Get("Retry-After"))
	}
	if res.doc.Find(testid("login-form")).Length() != 1 || !strings.Contains(text(res.doc, testid("login-error")), "Too many") {
		t.Errorf("429 is not the sign-in form with a reason:\n%s", clip(res.body, 2000))
	}
	return time.Duration(secs) * time.Second
}

// TestSignInThrottle: failed sign-ins are throttled per account and per
// address with the defaults (5 then 1 per 12 s; 20 then 1 per 3 s); only
// failures count; the right password works again once the account's bucket
// has a token. The clock is injected: nothing sleeps.
func TestSignInThrottle(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	a := newTestApp(t, withoutWorkers(), withClock(clock.Now))

	t.Run("per account", func(t *testing.T) {
		a := a.with(t)
		c := a.newClient()
		// From five addresses, so that only the account's bucket empties.
		for i := range 5 {
			res := loginFrom(c, "203.0.113."+strconv.Itoa(10+i), strings.ToUpper(olgaName[:1])+olgaName[1:], "wrong-password")
			mustStatus(t, res, http.StatusUnauthorized)
		}
		wait := mustThrottled(t, loginFrom(c, "203.0.113.20", olgaName, "wrong-password"))
		if wait != 12*time.Second {
			t.Errorf("Retry-After %s, want 12s", wait)
		}
		// The right password is refused too while the bucket is empty: the
		// answer must not tell a guesser which password was right.
		mustThrottled(t, loginFrom(c, "203.0.113.21", olgaName, passwordOf(olgaName)))
		// Another account is not affected.
		mustStatus(t, loginFrom(a.newClient(), "203.0.113.22", oscarName, passwordOf(oscarName)), http.StatusSeeOther)

		clock.Advance(wait)
		mustStatus(t, loginFrom(c, "203.0.113.23", olgaName, passwordOf(olgaName)), http.StatusSeeOther)
	})

	t.Run("per address", func(t *testing.T) {
		a := a.with(t)
		const addr = "198.51.100.7"
		c := a.newClient()
		for i := range 20 {
			mustStatus(t, loginFrom(c, addr, "nobody-"+strconv.Itoa(i), "wrong-password"), http.StatusUnauthorized)
		}
		if wait := mustThrottled(t, loginFrom(c, addr, "nobody-new", "wrong-password")); wait != 3*time.Second {
			t.Errorf("Retry-After %s, want 3s", wait)
		}
		mustThrottled(t, loginFrom(a.newClient(), addr, veraName, passwordOf(veraName)))
		// Another address is not affected.
		mustStatus(t, loginFrom(a.newClient(), "198.51.100.8", veraName, passwordOf(veraName)), http.StatusSeeOther)

		clock.Advance(3 * time.Second)
		mustStatus(t, loginFrom(c, addr, "nobody-later", "wrong-password"), http.StatusUnauthorized)
		mustThrottled(t, loginFrom(c, addr, "nobody-later-2", "wrong-password"))
	})

	t.Run("successes do not count", func(t *testing.T) {
		a := a.with(t)
		const addr = "192.0.2.99"
		for range 30 {
			mustStatus(t, loginFrom(a.newClient(), addr, adminName, passwordOf(adminName)), http.StatusSeeOther)
		}
	})
}

// TestCrossOrigin: an unsafe request from another origin is refused with
// the app's 403 page even with a valid session and CSRF token; from this
// origin it works.
func TestCrossOrigin(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	olga := a.as(olgaName)
	form := url.Values{"agent": {"researcher"}, "model": {demo.Name}, "prompt": {readOnlyPrompt}}

	for _, tc := range []struct {
		name string
		opts []reqOpt
	}{
		{"Sec-Fetch-Site cross-site", []reqOpt{header("Sec-Fetch-Site", "cross-site")}},
		{"Sec-Fetch-Site same-site", []reqOpt{header("Sec-Fetch-Site", "same-site")}},
		{"Origin of another host", []reqOpt{header("Origin", "https://evil.example")}},
		{"Origin of another port", []reqOpt{header("Origin", strings.Replace(a.srv.URL, "127.0.0.1:", "127.0.0.1:1", 1))}},
		{"htmx, cross-site", []reqOpt{htmx(), header("Sec-Fetch-Site", "cross-site")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, olga := a.with(t), olga.with(t)
			before := a.countRuns()
			olga.get("/runs/new")
			res := olga.submit("/runs", form, tc.opts...)
			mustCleanError(t, res, http.StatusForbidden)
			if n := a.countRuns(); n != before {
				t.Errorf("%d runs, want %d", n, before)
			}
		})
	}

	t.Run("sign-in from another site", func(t *testing.T) {
		c := a.with(t).newClient()
		c.token()
		res := c.submit("/login", url.Values{"name": {olgaName}, "password": {passwordOf(olgaName)}}, header("Sec-Fetch-Site", "cross-site"))
		mustCleanError(t, res, http.StatusForbidden)
	})

	for _, tc := range []struct {
		name string
		opts []reqOpt
	}{
		{"Sec-Fetch-Site same-origin", []reqOpt{header("Sec-Fetch-Site", "same-origin")}},
		{"Origin of this host", []reqOpt{header("Origin", a.srv.URL)}},
		{"neither header (not a browser)", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			olga := olga.with(t)
			olga.get("/runs/new")
			runIDFrom(t, olga.submit("/runs", form, tc.opts...))
		})
	}
}

// TestHSTS: Strict-Transport-Security is sent over TLS and not over plain HTTP.
func TestHSTS(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	tlsSrv := httptest.NewTLSServer(a.srv.Config.Handler)
	t.Cleanup(tlsSrv.Close)
	hc := tlsSrv.Client()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	for _, path := range []string{"/login", "/", "/nope"} {
		res, err := hc.Get(tlsSrv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.TLS == nil {
			t.Fatal("not TLS")
		}
		if got := res.Header.Get("Strict-Transport-Security"); !strings.HasPrefix(got, "max-age=") {
			t.Errorf("over TLS %s: Strict-Transport-Security %q", path, got)
		}
	}
	res := a.newClient().get("/login")
	if got := res.Header.Get("Strict-Transport-Security"); got != "" {
		t.Errorf("over plain HTTP: Strict-Transport-Security %q", got)
	}
}

// TestMethodNotAllowed: a known address with the wrong method is 405 with
// an Allow header and the app's error page; an unknown address stays 404.
func TestMethodNotAllowed(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	run := a.createRun("editor", readOnlyPrompt, olgaName, time.Now())
	cases := []struct {
		method, path string
		allow        []string
	}{
		{http.MethodPut, "/runs", []string{"GET", "POST"}},
		{http.MethodGet, "/tool/resume", []string{"POST"}},
		{http.MethodDelete, "/runs/" + run.ID, []string{"GET"}},
		{http.MethodGet, "/logout", []string{"POST"}},
		{http.MethodPatch, "/users", []string{"GET", "POST"}},
		{http.MethodGet, "/runs/" + run.ID + "/cancel", []string{"POST"}},
		{http.MethodPost, "/inbox", []string{"GET"}},
	}
	for _, who := range []string{"", adminName} {
		c := a.newClient()
		if who != "" {
			c = a.as(who)
		}
		for _, tc := range cases {
			t.Run(tc.method+" "+tc.path+" as "+who, func(t *testing.T) {
				c := c.with(t)
				var body *strings.Reader
				ct := ""
				if tc.method != http.MethodGet {
					body, ct = strings.NewReader(url.Values{"_csrf": {c.csrf}}.Encode()), "application/x-www-form-urlencoded"
				} else {
					body = strings.NewReader("")
				}
				res := c.do(tc.method, tc.path, body, ct)
				mustCleanError(t, res, http.StatusMethodNotAllowed)
				allow := res.Header.Get("Allow")
				for _, m := range tc.allow {
					if !strings.Contains(allow, m) {
						t.Errorf("Allow %q, want it to list %s", allow, m)
					}
				}
				if got := text(res.doc, testid("error-title")); got != "Method not allowed" {
					t.Errorf("title %q", got)
				}
			})
		}
	}
	t.Run("unknown address", func(t *testing.T) {
		c := a.with(t).as(veraName)
		for _, m := range []string{http.MethodGet, http.MethodPut} {
			res := c.do(m, "/nope", strings.NewReader(""), "")
			mustCleanError(t, res, http.StatusNotFound)
		}
		// The error page of a signed-in user shows who is signed in.
		if res := c.get("/nope"); text(res.doc, testid("nav-user")) != veraName {
			t.Errorf("404 page without the signed-in user:\n%s", clip(res.body, 1500))
		}
		if res := c.do(http.MethodPut, "/runs", strings.NewReader(""), ""); text(res.doc, testid("nav-user")) != veraName {
			t.Errorf("405 page without the signed-in user:\n%s", clip(res.body, 1500))
		}
	})
}

// TestFavicon: the icon answers at /favicon.ico for anyone, and every page
// links to it at a content-hashed address.
func TestFavicon(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	c := a.newClient()
	res := c.get("/favicon.ico")
	mustStatus(t, res, http.StatusOK)
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "image/") || len(res.body) == 0 {
		t.Errorf("/favicon.ico: Content-Type %q, %d bytes", ct, len(res.body))
	}
	page := c.get("/login")
	href := attr(page.doc, `link[rel="icon"]`, "href")
	if !regexp.MustCompile(`^/static/favicon\.[0-9a-f]{8}\.svg$`).MatchString(href) {
		t.Fatalf(`<link rel="icon"> href %q, want a hashed static asset`, href)
	}
	icon := c.get(href)
	mustStatus(t, icon, http.StatusOK)
	if ct := icon.Header.Get("Content-Type"); !strings.HasPrefix(ct, "image/svg+xml") || icon.body != res.body {
		t.Errorf("%s: Content-Type %q, same body as /favicon.ico: %v", href, ct, icon.body == res.body)
	}
}

// rfc3339 finds a raw timestamp such as 2026-12-02T16:21:07Z.
var rfc3339 = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d`)

// TestErrorSentences: refusals read as sentences for people, not as the
// wrapped errors of the app.
func TestErrorSentences(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	olga := a.as(olgaName)
	leaks := []string{"Start run", "start run", "invalid input", "unknown agent", "unknown model", "decide run", "Turn already"}

	for _, tc := range []struct {
		name, agent, model, prompt, want string
	}{
		{"unknown agent", "nope", demo.Name, publishAbout, "That agent is not configured on this server."},
		{"unknown model", "researcher", "gpt-9", publishAbout, "That model is not configured on this server."},
		{"empty prompt", "researcher", demo.Name, "", "The prompt must be 1 to 8000 bytes of text."},
		{"long prompt", "researcher", demo.Name, strings.Repeat("a", engine.MaxPromptBytes+1), "The prompt must be 1 to 8000 bytes of text."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			olga := olga.with(t)
			olga.get("/runs/new")
			res := olga.submit("/runs", url.Values{"agent": {tc.agent}, "model": {tc.model}, "prompt": {tc.prompt}})
			mustCleanError(t, res, http.StatusUnprocessableEntity)
			got := text(res.doc, testid("form-error"))
			if got != tc.want {
				t.Errorf("form error %q, want %q", got, tc.want)
			}
			for _, bad := range leaks {
				if strings.Contains(got, bad) {
					t.Errorf("form error %q shows %q", got, bad)
				}
			}
		})
	}

	t.Run("already decided", func(t *testing.T) {
		a := a.with(t)
		r := a.waitingRun("editor", deleteOld, olgaName)
		olga, oscar := olga.with(t), a.as(oscarName)
		first := url.Values{"_csrf": {olga.csrf}, "run_id": {r.ID}, "digest": {r.PendingDigest}, "decision": {"approve"}}
		mustRedirect(t, olga.post("/tool/resume", first), "/runs/"+r.ID)
		ev, ok, err := a.db.LastDecision(context.Background(), r.ID)
		if err != nil || !ok {
			t.Fatalf("no decision stored: %v", err)
		}
		want := "pproved by " + olgaName + " at " + views.HumanTime(ev.At) + "."
		if !regexp.MustCompile(`^\d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d UTC$`).MatchString(views.HumanTime(ev.At)) {
			t.Errorf("HumanTime %q, want like 2 Dec 2026, 16:21 UTC", views.HumanTime(ev.At))
		}
		oscar.get("/runs/" + r.ID)
		second := url.Values{"_csrf": {oscar.csrf}, "run_id": {r.ID}, "digest": {r.PendingDigest}, "decision": {"deny"}}
		for _, opts := range [][]reqOpt{nil, {htmx()}} {
			res := oscar.post("/tool/resume", second, opts...)
			mustStatus(t, res, http.StatusConflict)
			got := text(res.doc, testid("flash"))
			if len(opts) == 0 && !strings.HasPrefix(got, "Already decided: ") {
				t.Errorf("409 page says %q, want it to start %q", got, "Already decided: ")
			}
			if !strings.Contains(got, want) {
				t.Errorf("409 says %q, want it to say %q", got, want)
			}
			// The visible text, not the markup: a <time datetime> attribute
			// is machine-readable on purpose.
			if rfc3339.MatchString(res.doc.Text()) {
				t.Errorf("409 shows a raw timestamp: %q", got)
			}
			for _, bad := range leaks {
				if strings.Contains(got, bad) {
					t.Errorf("409 %q shows %q", got, bad)
				}
			}
		}
	})
}
