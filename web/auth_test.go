package web_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"countersign/engine"
	"countersign/store"
)

// TestCSRF posts to every POST route without a token, with a wrong one, with
// an empty one and with the valid token of another session: each is 403 and
// changes nothing.
func TestCSRF(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	ctx := context.Background()
	w := a.waitingRun("editor", publishAbout, olgaName)
	other := a.newClient()
	otherToken := other.token()

	signedIn := func(c *client) bool { return c.get("/runs").StatusCode == http.StatusOK }
	runs := a.countRuns()
	cases := []struct {
		name, who, path string
		form            url.Values
		unchanged       func(t *testing.T, c *client)
	}{
		{"login", "", "/login", url.Values{"name": {olgaName}, "password": {passwordOf(olgaName)}},
			func(t *testing.T, c *client) {
				if signedIn(c) {
					t.Error("signed in without a valid token")
				}
			}},
		{"logout", olgaName, "/logout", url.Values{}, func(t *testing.T, c *client) {
			if !signedIn(c) {
				t.Error("signed out without a valid token")
			}
		}},
		{"start run", olgaName, "/runs", url.Values{"agent": {"editor"}, "model": {"demo"}, "prompt": {publishAbout}},
			func(t *testing.T, _ *client) {
				if n := a.with(t).countRuns(); n != runs {
					t.Errorf("%d runs, want %d", n, runs)
				}
			}},
		{"decide", olgaName, "/tool/resume", url.Values{"run_id": {w.ID}, "digest": {w.PendingDigest}, "decision": {"approve"}},
			func(t *testing.T, _ *client) {
				if r := a.with(t).run(w.ID); r.Status != engine.StatusWaiting {
					t.Errorf("run is %s, want it still waiting", r.Status)
				}
				if _, decided, err := a.db.LastDecision(ctx, w.ID); err != nil || decided {
					t.Errorf("decision stored: %v %v", decided, err)
				}
			}},
		{"cancel", olgaName, "/runs/" + w.ID + "/cancel", url.Values{},
			func(t *testing.T, _ *client) {
				if r := a.with(t).run(w.ID); r.Status != engine.StatusWaiting {
					t.Errorf("run is %s, want it still waiting", r.Status)
				}
			}},
		{"add user", adminName, "/users", url.Values{"name": {"mallory"}, "password": {"mallory-password"}, "role": {"admin"}},
			func(t *testing.T, _ *client) {
				if _, err := a.db.UserByName(ctx, "mallory"); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("user added: %v", err)
				}
			}},
		{"change role", adminName, "/users/" + strconv.FormatInt(a.users[veraName].ID, 10) + "/role", url.Values{"role": {"admin"}},
			func(t *testing.T, _ *client) {
				if u, _ := a.db.UserByID(ctx, a.users[veraName].ID); u.Role != store.RoleViewer {
					t.Errorf("vera is %s, want viewer", u.Role)
				}
			}},
		{"disable user", adminName, "/users/" + strconv.FormatInt(a.users[oscarName].ID, 10) + "/disable", url.Values{},
			func(t *testing.T, _ *client) {
				if u, _ := a.db.UserByID(ctx, a.users[oscarName].ID); u.Disabled() {
					t.Error("oscar disabled")
				}
			}},
	}
	tokens := []struct {
		name  string
		value *string // nil leaves the field out
	}{
		{"no token", nil},
		{"empty token", ptr("")},
		{"wrong token", ptr("bm90LXRoZS10b2tlbi1vZi10aGlzLXNlc3Npb24tYXQtYWxs")},
		{"another session's token", &otherToken},
	}
	for _, tc := range cases {
		for _, tok := range tokens {
			t.Run(tc.name+"/"+tok.name, func(t *testing.T) {
				a := a.with(t)
				c := a.newClient()
				if tc.who == "" {
					c.token()
				} else {
					c.signIn(tc.who, passwordOf(tc.who))
				}
				form := url.Values{}
				for k, v := range tc.form {
					form[k] = v
				}
				if tok.value != nil {
					form.Set("_csrf", *tok.value)
				}
				res := c.post(tc.path, form)
				mustCleanError(t, res, http.StatusForbidden)
				if got := text(res.doc, testid("error-title")); got != "Form expired" {
					t.Errorf("title %q, want Form expired", got)
				}
				tc.unchanged(t, c)
			})
		}
	}

	t.Run("wrong header beats nothing", func(t *testing.T) {
		c := a.with(t).as(olgaName)
		res := c.post("/runs", url.Values{"agent": {"editor"}, "model": {"demo"}, "prompt": {publishAbout}},
			header("X-CSRF-Token", otherToken))
		mustCleanError(t, res, http.StatusForbidden)
	})
	t.Run("valid header token is accepted", func(t *testing.T) {
		c := a.with(t).as(olgaName)
		res := c.post("/runs", url.Values{"agent": {"editor"}, "model": {"demo"}, "prompt": {publishAbout}},
			header("X-CSRF-Token", c.csrf))
		runIDFrom(t, res)
		if n := a.with(t).countRuns(); n != runs+1 {
			t.Errorf("%d runs, want %d", n, runs+1)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// TestLoginRefused: a wrong password, an unknown name and a disabled user
// all get 401 and the same sentence, with the name kept and the password not.
func TestLoginRefused(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	d := a.addUser("dora", store.RoleOperator)
	if err := a.db.DisableUser(context.Background(), d.ID); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, user, password string }{
		{"wrong password", olgaName, "not-the-password"},
		{"unknown user", "nobody", "whatever-password"},
		{"disabled user", "dora", passwordOf("dora")},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := a.with(t).newClient()
			res := c.tryLogin(tc.user, tc.password, "/inbox")
			mustCleanError(t, res, http.StatusUnauthorized)
			if got := text(res.doc, testid("login-error")); got != "That name and password do not match an active user." {
				t.Errorf("login error %q", got)
			}
			if got := attr(res.doc, `input[name="name"]`, "value"); got != tc.user {
				t.Errorf("name refilled as %q, want %q", got, tc.user)
			}
			if got := attr(res.doc, `input[name="password"]`, "value"); got != "" {
				t.Errorf("password refilled: %q", got)
			}
			if got := attr(res.doc, `input[name="next"]`, "value"); got != "/inbox" {
				t.Errorf("next %q, want /inbox kept", got)
			}
			if c.get("/runs").StatusCode != http.StatusSeeOther {
				t.Error("signed in after a refused sign-in")
			}
		})
	}
}

// sessionCookie returns the session cookie a response sets.
func sessionCookie(t *testing.T, res *response) *http.Cookie {
	t.Helper()
	for _, c := range res.Cookies() {
		if c.Name == "countersign" {
			return c
		}
	}
	t.Fatalf("%s %s sets no session cookie (Set-Cookie: %q)", res.Request.Method, res.Request.URL.Path, res.Header.Values("Set-Cookie"))
	return nil
}

// TestLoginSession: sign-in starts a new session (new cookie, new CSRF
// token; the cookie planted before it stays anonymous), with safe cookie
// flags.
func TestLoginSession(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())

	t.Run("fixation", func(t *testing.T) {
		a := a.with(t)
		c := a.newClient()
		first := c.get("/login")
		mustStatus(t, first, http.StatusOK)
		before := sessionCookie(t, first)
		tokenBefore := c.csrf
		res := c.submit("/login", url.Values{"name": {olgaName}, "password": {passwordOf(olgaName)}})
		mustRedirect(t, res, "/")
		after := sessionCookie(t, res)
		if after.Value == before.Value {
			t.Error("the session cookie did not change at sign-in")
		}
		if tokenAfter := c.token(); tokenAfter == tokenBefore {
			t.Error("the CSRF token did not change at sign-in")
		}
		// The token of the anonymous session is worth nothing now.
		res = c.post("/logout", url.Values{"_csrf": {tokenBefore}})
		mustCleanError(t, res, http.StatusForbidden)
		// Whoever planted the first cookie is still anonymous with it.
		planted := a.newClient()
		u, _ := url.Parse(a.srv.URL)
		planted.http.Jar.SetCookies(u, []*http.Cookie{{Name: before.Name, Value: before.Value, Path: "/"}})
		mustRedirect(t, planted.get("/runs"), "/login?next=%2Fruns")
	})

	t.Run("cookie flags", func(t *testing.T) {
		c := a.with(t).newClient()
		c.get("/login")
		res := c.submit("/login", url.Values{"name": {olgaName}, "password": {passwordOf(olgaName)}})
		ck := sessionCookie(t, res)
		if !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Path != "/" || ck.Secure {
			t.Errorf("cookie flags: HttpOnly=%v SameSite=%v Path=%q Secure=%v; want HttpOnly, Lax, /, not Secure over http",
				ck.HttpOnly, ck.SameSite, ck.Path, ck.Secure)
		}
		if ck.MaxAge != int((12 * time.Hour).Seconds()) {
			t.Errorf("Max-Age %d, want 12 hours", ck.MaxAge)
		}
	})

	t.Run("secure behind a TLS proxy", func(t *testing.T) {
		c := a.with(t).newClient()
		https := header("X-Forwarded-Proto", "https")
		first := c.get("/login", https)
		if ck := sessionCookie(t, first); !ck.Secure || !ck.HttpOnly {
			t.Errorf("first visit over https: Secure=%v HttpOnly=%v", ck.Secure, ck.HttpOnly)
		}
		// The jar does not send a Secure cookie over http; post the token
		// with the cookie by hand.
		res := c.post("/login", url.Values{"_csrf": {c.csrf}, "name": {olgaName}, "password": {passwordOf(olgaName)}},
			https, header("Cookie", "countersign="+sessionCookie(t, first).Value))
		mustRedirect(t, res, "/")
		if ck := sessionCookie(t, res); !ck.Secure {
			t.Error("sign-in over https: cookie not Secure")
		}
	})
}

// TestLoginNext: next is honoured for local paths only.
func TestLoginNext(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	for _, tc := range []struct{ next, want string }{
		{"/inbox", "/inbox"},
		{"/runs?status=completed&agent=editor", "/runs?status=completed&agent=editor"},
		{"", "/"},
		{"//evil.example", "/"},
		{"//evil.example/runs", "/"},
		{"/\\evil.example", "/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"evil.example", "/"},
		{"/runs\r\nSet-Cookie: x=y", "/"},
	} {
		t.Run(tc.next, func(t *testing.T) {
			a := a.with(t)
			// The form carries next as the query gave it, made safe.
			c := a.newClient()
			page := c.get("/login?next=" + url.QueryEscape(tc.next))
			mustStatus(t, page, http.StatusOK)
			if got := attr(page.doc, `input[name="next"]`, "value"); got != tc.want {
				t.Errorf("form next %q, want %q", got, tc.want)
			}
			// And the POST checks it again.
			res := c.submit("/login", url.Values{"name": {olgaName}, "password": {passwordOf(olgaName)}, "next": {tc.next}})
			mustRedirect(t, res, tc.want)
			// Signed in, /login goes straight to a safe next.
			mustRedirect(t, c.get("/login?next="+url.QueryEscape(tc.next)), tc.want)
		})
	}

	t.Run("round trip from a protected page", func(t *testing.T) {
		c := a.with(t).newClient()
		res := c.get("/inbox?x=1")
		mustRedirect(t, res, "/login?next=%2Finbox%3Fx%3D1")
		page := c.get(res.Header.Get("Location"))
		if got := attr(page.doc, `input[name="next"]`, "value"); got != "/inbox?x=1" {
			t.Fatalf("form next %q", got)
		}
		_, form := formValues(t, page.doc, testid("login-form"))
		form.Set("name", olgaName)
		form.Set("password", passwordOf(olgaName))
		mustRedirect(t, c.post("/login", form), "/inbox?x=1")
		mustStatus(t, c.get("/inbox?x=1"), http.StatusOK)
	})
}

// TestLogout: signing out ends the session for this browser.
func TestLogout(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	c := a.as(olgaName)
	page := c.get("/runs")
	if got := text(page.doc, testid("nav-user")); got != olgaName {
		t.Fatalf("nav user %q", got)
	}
	u, _ := url.Parse(a.srv.URL)
	stolen := c.http.Jar.Cookies(u)

	action, form := formValues(t, page.doc, testid("logout"))
	mustRedirect(t, c.post(action, form), "/login")
	mustRedirect(t, c.get("/runs"), "/login?next=%2Fruns")
	login := c.get("/login")
	mustStatus(t, login, http.StatusOK)
	if login.doc.Find(testid("nav-user")).Length() != 0 {
		t.Error("the nav still shows a user after sign-out")
	}
	// The form of the old session no longer posts.
	mustCleanError(t, c.post("/runs", url.Values{"_csrf": form["_csrf"], "agent": {"editor"}, "model": {"demo"},
		"prompt": {publishAbout}}), http.StatusForbidden)

	t.Run("a copy of the old cookie is signed out too", func(t *testing.T) {
		replay := a.with(t).newClient()
		replay.http.Jar.SetCookies(u, stolen)
		mustRedirect(t, replay.get("/runs"), "/login?next=%2Fruns")
	})
}

// TestUsers is the admin's user management.
func TestUsers(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	ctx := context.Background()
	ad := a.as(adminName)
	idOf := func(name string) string { return strconv.FormatInt(a.users[name].ID, 10) }

	page := ad.get("/users")
	mustStatus(t, page, http.StatusOK)
	var names []string
	page.doc.Find(testid("user-row")).Each(func(_ int, s *goquery.Selection) {
		names = append(names, strings.TrimSpace(s.Find(testid("user-name")).Text()))
	})
	for _, n := range []string{adminName, olgaName, oscarName, veraName} {
		if !slices.Contains(names, n) {
			t.Errorf("user %s not listed in %v", n, names)
		}
	}

	t.Run("add", func(t *testing.T) {
		a, ad := a.with(t), ad.with(t)
		page := ad.get("/users")
		action, form := formValues(t, page.doc, testid("add-user"))
		form.Set("name", "nina")
		form.Set("password", passwordOf("nina"))
		form.Set("role", "operator")
		mustRedirect(t, ad.post(action, form), "/users")
		next := ad.get("/users")
		if got := text(next.doc, testid("flash")); got != "Added nina as operator." {
			t.Errorf("flash %q", got)
		}
		row := next.doc.Find(testid("user-row")).FilterFunction(func(_ int, s *goquery.Selection) bool {
			return strings.TrimSpace(s.Find(testid("user-name")).Text()) == "nina"
		})
		if row.Length() != 1 || strings.TrimSpace(row.Find(testid("user-role")).Text()) != "operator" {
			t.Errorf("nina's row: %q", row.Text())
		}
		nina := a.newClient()
		nina.signIn("nina", passwordOf("nina"))
		mustStatus(t, nina.get("/runs/new"), http.StatusOK)
	})

	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name, user, password, role string
			status                     int
		}{
			{"duplicate", olgaName, "long-enough-pw", "viewer", http.StatusConflict},
			{"duplicate other case", "OLGA", "long-enough-pw", "viewer", http.StatusConflict},
			{"bad name", "bad name", "long-enough-pw", "viewer", http.StatusUnprocessableEntity},
			{"markup name", "<b>x</b>", "long-enough-pw", "viewer", http.StatusUnprocessableEntity},
			{"empty name", "", "long-enough-pw", "viewer", http.StatusUnprocessableEntity},
			{"short password", "newbie", "short", "viewer", http.StatusUnprocessableEntity},
			{"unknown role", "newbie", "long-enough-pw", "root", http.StatusUnprocessableEntity},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ad := ad.with(t)
				before, _ := a.db.CountUsers(ctx)
				ad.get("/users")
				res := ad.submit("/users", url.Values{"name": {tc.user}, "password": {tc.password}, "role": {tc.role}})
				mustCleanError(t, res, tc.status)
				if res.doc.Find(testid("form-error")).Length() != 1 {
					t.Error("no form error shown")
				}
				if res.doc.Find(testid("add-user")).Length() != 1 {
					t.Error("the form is not shown again")
				}
				if after, _ := a.db.CountUsers(ctx); after != before {
					t.Errorf("%d users, want %d", after, before)
				}
			})
		}
	})

	t.Run("change role", func(t *testing.T) {
		ad := ad.with(t)
		vera := a.with(t).as(veraName)
		mustCleanError(t, vera.get("/runs/new"), http.StatusForbidden)
		ad.get("/users")
		mustRedirect(t, ad.submit("/users/"+idOf(veraName)+"/role", url.Values{"role": {"operator"}}), "/users")
		// Her next request has the new role.
		page := vera.get("/runs/new")
		mustStatus(t, page, http.StatusOK)
		if got := text(page.doc, testid("nav-role")); got != "operator" {
			t.Errorf("nav role %q", got)
		}
		ad.get("/users")
		mustCleanError(t, ad.submit("/users/"+idOf(veraName)+"/role", url.Values{"role": {"root"}}), http.StatusUnprocessableEntity)
		if u, _ := a.db.UserByID(ctx, a.users[veraName].ID); u.Role != store.RoleOperator {
			t.Errorf("vera is %s", u.Role)
		}
	})

	t.Run("disable", func(t *testing.T) {
		a, ad := a.with(t), ad.with(t)
		oscar := a.as(oscarName)
		mustStatus(t, oscar.get("/runs"), http.StatusOK)
		page := ad.get("/users")
		form := page.doc.Find(testid("user-row") + `[data-user-id="` + idOf(oscarName) + `"] ` + testid("disable-user"))
		action, _ := form.Attr("action")
		mustRedirect(t, ad.submit(action, url.Values{}), "/users")
		if got := text(ad.get("/users").doc, testid("user-row")+`[data-user-id="`+idOf(oscarName)+`"] `+testid("user-disabled")); got != "disabled" {
			t.Errorf("oscar's row does not say disabled: %q", got)
		}
		// His next request is signed out, and he cannot sign in again.
		mustRedirect(t, oscar.get("/runs"), "/login?next=%2Fruns")
		mustCleanError(t, oscar.tryLogin(oscarName, passwordOf(oscarName), ""), http.StatusUnauthorized)
	})

	t.Run("not oneself", func(t *testing.T) {
		ad := ad.with(t)
		ad.get("/users")
		res := ad.submit("/users/"+idOf(adminName)+"/disable", url.Values{})
		mustCleanError(t, res, http.StatusConflict)
		if got := text(res.doc, testid("form-error")); got != "You cannot disable yourself." {
			t.Errorf("error %q", got)
		}
		ad.get("/users")
		res = ad.submit("/users/"+idOf(adminName)+"/role", url.Values{"role": {"viewer"}})
		mustCleanError(t, res, http.StatusConflict)
		u, _ := a.db.UserByID(ctx, a.users[adminName].ID)
		if u.Disabled() || u.Role != store.RoleAdmin {
			t.Errorf("admin is now %s, disabled %v", u.Role, u.Disabled())
		}
		mustStatus(t, ad.get("/users"), http.StatusOK)
	})

	t.Run("unknown user", func(t *testing.T) {
		ad := ad.with(t)
		for _, id := range []string{"999999", "abc", "-1"} {
			ad.get("/users")
			mustCleanError(t, ad.submit("/users/"+id+"/disable", url.Values{}), http.StatusNotFound)
			ad.get("/users")
			mustCleanError(t, ad.submit("/users/"+id+"/role", url.Values{"role": {"viewer"}}), http.StatusNotFound)
		}
	})
}
