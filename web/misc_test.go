package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"countersign/engine"
	"countersign/web"
)

// mustBeInert checks that a page runs nothing but our own scripts: every
// script element has a src and no body, and no element carries an event
// handler attribute.
func mustBeInert(t *testing.T, res *response) {
	t.Helper()
	res.doc.Find("script").Each(func(_ int, s *goquery.Selection) {
		src, ok := s.Attr("src")
		if !ok || !strings.HasPrefix(src, "/static/") || strings.TrimSpace(s.Text()) != "" {
			t.Errorf("%s: foreign script element: %s", res.Request.URL.Path, goquery.NewDocumentFromNode(s.Get(0)).Text())
		}
	})
	if n := res.doc.Find("img").Length(); n != 0 {
		t.Errorf("%s: %d img elements", res.Request.URL.Path, n)
	}
	res.doc.Find("*").Each(func(_ int, s *goquery.Selection) {
		for _, a := range s.Get(0).Attr {
			if strings.HasPrefix(strings.ToLower(a.Key), "on") {
				t.Errorf("%s: <%s %s=%q>", res.Request.URL.Path, goquery.NodeName(s), a.Key, a.Val)
			}
		}
	})
	csp := res.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("%s: Content-Security-Policy %q", res.Request.URL.Path, csp)
	}
	for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY"} {
		if got := res.Header.Get(k); got != v {
			t.Errorf("%s: %s %q, want %q", res.Request.URL.Path, k, got, v)
		}
	}
}

// TestEscaping: markup in prompts, reasons and filters is shown as text.
func TestEscaping(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	olga := a.as(olgaName)
	const evil = `<script>alert(1)</script><img src=x onerror=alert(1)> "quoted" & more`
	id := startFromForm(t, olga, "researcher", evil)
	a.waitTerminal(id)

	page := olga.get("/runs/" + id)
	mustStatus(t, page, http.StatusOK)
	mustBeInert(t, page)
	if got := text(page.doc, testid("prompt-text")); got != evil {
		t.Errorf("prompt shown as %q, want the text %q", got, evil)
	}
	if strings.Contains(page.body, "<script>alert") || strings.Contains(page.body, "<img src=x") {
		t.Error("the prompt's markup is in the page unescaped")
	}

	hist := olga.get("/runs?q=" + url.QueryEscape("<script>"))
	mustBeInert(t, hist)
	row := hist.doc.Find(testid("run-row") + `[data-run-id="` + id + `"]`)
	if row.Length() != 1 || !strings.Contains(row.Text(), evil) {
		t.Errorf("history row %q", row.Text())
	}
	if got := attr(hist.doc, testid("filter-q"), "value"); got != "<script>" {
		t.Errorf("filter refilled as %q", got)
	}

	// A reason with markup, through the decision and the model's answer.
	const reason = `<script>alert(2)</script><img src=y onerror=alert(2)>`
	w := startFromForm(t, olga, "editor", publishAbout)
	a.waitStatus(w, engine.StatusWaiting)
	mustRedirect(t, decide(t, olga, w, "deny", reason), "/runs/"+w)
	a.waitStatus(w, engine.StatusCompleted)
	page = olga.get("/runs/" + w)
	mustBeInert(t, page)
	if got := text(page.doc, testid("reason")); got != reason {
		t.Errorf("reason shown as %q", got)
	}
	if got := text(page.doc, testid("final-answer")); !strings.Contains(got, reason) {
		t.Errorf("final answer %q does not quote the reason as text", got)
	}

	// And in the playground's refill after a refusal.
	olga.get("/runs/new")
	res := olga.submit("/runs", url.Values{"agent": {"nope"}, "model": {"demo"}, "prompt": {evil}})
	mustStatus(t, res, http.StatusUnprocessableEntity)
	mustBeInert(t, res)
	if got := res.doc.Find(testid("prompt")).Text(); got != evil {
		t.Errorf("refill %q", got)
	}
}

// TestSecurityHeaders: every kind of answer carries the headers.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	c := a.newClient()
	for _, path := range []string{"/login", "/healthz", "/runs", "/static/nope.css"} {
		res := c.get(path)
		if res.Header.Get("Content-Security-Policy") == "" || res.Header.Get("X-Frame-Options") != "DENY" ||
			res.Header.Get("Referrer-Policy") != "same-origin" {
			t.Errorf("%s (%d): headers %v", path, res.StatusCode, res.Header)
		}
	}
}

// TestStatic: assets are served at hashed URLs with a year of caching;
// anything else under /static/ is 404.
func TestStatic(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	c := a.newClient()
	page := c.get("/login")
	css := attr(page.doc, `link[rel="stylesheet"]`, "href")
	urls := map[string]string{css: "text/css"}
	page.doc.Find("script[src]").Each(func(_ int, s *goquery.Selection) { urls[s.AttrOr("src", "")] = "javascript" })
	if len(urls) != 3 {
		t.Errorf("want app.css, app.js and htmx in the page, got %v", urls)
	}
	for u, ct := range urls {
		if !strings.HasPrefix(u, "/static/") {
			t.Errorf("asset URL %q", u)
			continue
		}
		res := c.get(u)
		mustStatus(t, res, http.StatusOK)
		if got := res.Header.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
			t.Errorf("%s: Cache-Control %q", u, got)
		}
		if got := res.Header.Get("Content-Type"); !strings.Contains(got, ct) {
			t.Errorf("%s: Content-Type %q, want %s", u, got, ct)
		}
		if res.Header.Get("ETag") == "" || len(res.body) == 0 {
			t.Errorf("%s: no ETag or empty body", u)
		}
		again := c.get(u, header("If-None-Match", res.Header.Get("ETag")))
		mustStatus(t, again, http.StatusNotModified)
	}
	for _, u := range []string{"/static/app.css", "/static/app.00000000.css", "/static/nope.js", "/static/../go.mod",
		"/static/vendor/README.md", "/static/"} {
		if res := c.get(u); res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", u, res.StatusCode)
		}
	}
	if res := c.post(css, url.Values{}); res.StatusCode != http.StatusMethodNotAllowed && res.StatusCode != http.StatusNotFound {
		t.Errorf("POST %s: %d", css, res.StatusCode)
	}
}

// TestErrors: unknown routes and oversized bodies get a readable page with
// the right status.
func TestErrors(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())

	for who := anon; who <= admin; who++ {
		t.Run("unknown route as "+whoNames[who], func(t *testing.T) {
			a := a.with(t)
			if who != admin {
			}
			c := a.newClient()
			if who != anon {
				c.signIn(whoUser[who], passwordOf(whoUser[who]))
			}
			for _, path := range []string{"/nope", "/runs/x/y/z", "/users/1"} {
				res := c.get(path)
				mustCleanError(t, res, http.StatusNotFound)
				if got := text(res.doc, testid("error-title")); got != "Not found" {
					t.Errorf("%s: title %q", path, got)
				}
			}
		})
	}

	t.Run("unknown run", func(t *testing.T) {
		c := a.with(t).as(veraName)
		res := c.get("/runs/01JNOSUCHRUN000000000000000")
		mustCleanError(t, res, http.StatusNotFound)
		if got := text(res.doc, testid("error-message")); !strings.Contains(got, "Check the link") {
			t.Errorf("message %q", got)
		}
	})

	t.Run("body over the limit", func(t *testing.T) {
		a := a.with(t)
		big := strings.Repeat("a", web.MaxBodyBytes+1)
		anonC := a.newClient()
		anonC.token()
		res := anonC.submit("/login", url.Values{"name": {olgaName}, "password": {big}})
		mustReadableError(t, res, http.StatusRequestEntityTooLarge)
		if got := text(res.doc, testid("error-title")); got != "Too large" {
			t.Errorf("title %q", got)
		}
		t.Run("with the security headers", func(t *testing.T) {
			mustCleanError(t, res, http.StatusRequestEntityTooLarge)
		})
		olga := a.as(olgaName)
		before := a.countRuns()
		res = olga.submit("/runs", url.Values{"agent": {"editor"}, "model": {"demo"}, "prompt": {big}})
		mustReadableError(t, res, http.StatusRequestEntityTooLarge)
		if a.countRuns() != before {
			t.Error("a run was stored")
		}
		// Just under the limit is read (and refused for what it says).
		under := strings.Repeat("a", web.MaxBodyBytes/2)
		mustStatus(t, olga.submit("/runs", url.Values{"agent": {"editor"}, "model": {"demo"}, "prompt": {under}}),
			http.StatusUnprocessableEntity)
	})

	t.Run("chunked body over the limit", func(t *testing.T) {
		olga := a.with(t).as(olgaName)
		form := url.Values{"_csrf": {olga.csrf}, "prompt": {strings.Repeat("a", web.MaxBodyBytes+1)}}
		req, err := http.NewRequest(http.MethodPost, a.srv.URL+"/runs", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = -1
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := olga.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("status %d, want 413", res.StatusCode)
		}
	})

	t.Run("healthz", func(t *testing.T) {
		res := a.with(t).newClient().get("/healthz")
		mustStatus(t, res, http.StatusOK)
		if res.body != "ok\n" {
			t.Errorf("body %q", res.body)
		}
	})
}
