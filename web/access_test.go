package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"countersign/static"
)

// The people of the access table: a visitor and one user of each role.
const (
	anon = iota
	viewer
	operator
	admin
)

var whoNames = [...]string{"anonymous", "viewer", "operator", "admin"}

// whoUser is the user each column signs in as.
var whoUser = [...]string{"", veraName, olgaName, adminName}

// accessCase is one route of the access table. prepare returns the path and
// (for POST) the form, fresh for every column, so that each request acts on
// something of its own (a run to cancel, a user to disable).
type accessCase struct {
	method  string
	route   string
	prepare func(a *testApp, who int) (path string, form url.Values)
	// want is the status per column: anonymous, viewer, operator, admin.
	want [4]int
	// loc is the Location a 303 must name; "login" means the sign-in page
	// with the requested path as next.
	loc [4]string
}

func get(path string) func(*testApp, int) (string, url.Values) {
	return func(*testApp, int) (string, url.Values) { return path, nil }
}

// TestAccess is the access rule of every route, for a visitor and each role,
// with a valid CSRF token on every POST. It reads as the documentation of the
// rules:
//
//   - /healthz and /static/ are public;
//   - a visitor's GET of a page is sent to /login?next=<the page>, any other
//     request of a visitor is 401;
//   - viewers read (runs, run, steps, inbox, badge), operators also use the
//     playground, start, decide and cancel, admins also manage users;
//   - a role below the route's is 403;
//   - / sends each role where it can act; /login sends a signed-in user home;
//     /logout works for everyone.
func TestAccess(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	shared := a.createRun("editor", readOnlyPrompt, olgaName, time.Now())
	assets, err := static.New()
	if err != nil {
		t.Fatal(err)
	}
	css := assets.URL("app.css")
	const (
		ok     = http.StatusOK
		see    = http.StatusSeeOther
		unauth = http.StatusUnauthorized
		forbid = http.StatusForbidden
		nf     = http.StatusNotFound
		none   = http.StatusNoContent
	)
	login := [4]string{"login", "", "", ""}
	userN := 0
	newTarget := func(a *testApp) string {
		userN++
		u := a.addUser("target-"+strconv.Itoa(userN), "viewer")
		return strconv.FormatInt(u.ID, 10)
	}

	cases := []accessCase{
		{method: "GET", route: "/", prepare: get("/"), want: [4]int{see, see, see, see},
			loc: [4]string{"/login", "/runs", "/runs/new", "/runs/new"}},
		{method: "GET", route: "/login", prepare: get("/login"), want: [4]int{ok, see, see, see},
			loc: [4]string{"", "/", "/", "/"}},
		{method: "GET", route: "/runs", prepare: get("/runs"), want: [4]int{see, ok, ok, ok}, loc: login},
		{method: "GET", route: "/runs/new", prepare: get("/runs/new"), want: [4]int{see, forbid, ok, ok}, loc: login},
		{method: "GET", route: "/runs/{id}", prepare: get("/runs/" + shared.ID), want: [4]int{see, ok, ok, ok}, loc: login},
		{method: "GET", route: "/runs/{id}/steps?after=0", prepare: get("/runs/" + shared.ID + "/steps?after=0"),
			want: [4]int{see, ok, ok, ok}, loc: login},
		{method: "GET", route: "/inbox", prepare: get("/inbox"), want: [4]int{see, ok, ok, ok}, loc: login},
		{method: "GET", route: "/inbox/count", prepare: get("/inbox/count"), want: [4]int{see, ok, ok, ok}, loc: login},
		{method: "GET", route: "/inbox/updates", prepare: get("/inbox/updates"), want: [4]int{see, none, none, none}, loc: login},
		{method: "GET", route: "/users", prepare: get("/users"), want: [4]int{see, forbid, forbid, ok}, loc: login},
		{method: "GET", route: "/grants", prepare: get("/grants"), want: [4]int{see, forbid, forbid, ok}, loc: login},
		{method: "GET", route: "/healthz", prepare: get("/healthz"), want: [4]int{ok, ok, ok, ok}},
		{method: "GET", route: "/static/<hashed app.css>", prepare: get(css), want: [4]int{ok, ok, ok, ok}},

		{method: "POST", route: "/runs", want: [4]int{unauth, forbid, see, see},
			prepare: func(*testApp, int) (string, url.Values) {
				return "/runs", url.Values{"agent": {"researcher"}, "model": {"demo"}, "prompt": {readOnlyPrompt}}
			}},
		{method: "POST", route: "/tool/resume (unknown run)", want: [4]int{unauth, forbid, nf, nf},
			prepare: func(*testApp, int) (string, url.Values) {
				return "/tool/resume", url.Values{"run_id": {"01NOSUCHRUN"}, "digest": {"x"}, "decision": {"approve"}}
			}},
		{method: "POST", route: "/inbox/decide (unknown run)", want: [4]int{unauth, forbid, nf, nf},
			prepare: func(*testApp, int) (string, url.Values) {
				return "/inbox/decide", url.Values{"run_id": {"01NOSUCHRUN"}, "digest": {"x"}, "decision": {"approve"}}
			}},
		{method: "POST", route: "/inbox/decide-batch (unknown run)", want: [4]int{unauth, forbid, see, see},
			loc: [4]string{"", "", "/inbox", "/inbox"},
			prepare: func(*testApp, int) (string, url.Values) {
				return "/inbox/decide-batch", url.Values{"turn": {"01NOSUCHRUN:x"}, "decision": {"approve"}}
			}},
		{method: "POST", route: "/runs/{id}/cancel", want: [4]int{unauth, forbid, see, see},
			prepare: func(a *testApp, _ int) (string, url.Values) {
				r := a.createRun("editor", publishAbout, olgaName, time.Now())
				return "/runs/" + r.ID + "/cancel", url.Values{}
			}},
		{method: "POST", route: "/users", want: [4]int{unauth, forbid, forbid, see}, loc: [4]string{"", "", "", "/users"},
			prepare: func(_ *testApp, who int) (string, url.Values) {
				return "/users", url.Values{"name": {"new-" + whoNames[who]}, "password": {"long-enough-pw"}, "role": {"viewer"}}
			}},
		{method: "POST", route: "/users/{id}/role", want: [4]int{unauth, forbid, forbid, see}, loc: [4]string{"", "", "", "/users"},
			prepare: func(a *testApp, _ int) (string, url.Values) {
				return "/users/" + newTarget(a) + "/role", url.Values{"role": {"operator"}}
			}},
		{method: "POST", route: "/users/{id}/disable", want: [4]int{unauth, forbid, forbid, see}, loc: [4]string{"", "", "", "/users"},
			prepare: func(a *testApp, _ int) (string, url.Values) {
				return "/users/" + newTarget(a) + "/disable", url.Values{}
			}},
		{method: "POST", route: "/logout", want: [4]int{see, see, see, see},
			loc:     [4]string{"/login", "/login", "/login", "/login"},
			prepare: func(*testApp, int) (string, url.Values) { return "/logout", url.Values{} }},
	}

	for _, tc := range cases {
		for who := anon; who <= admin; who++ {
			t.Run(tc.method+" "+tc.route+" as "+whoNames[who], func(t *testing.T) {
				a := a.with(t)
				c := a.newClient()
				if who == anon {
					c.token()
				} else {
					c.signIn(whoUser[who], passwordOf(whoUser[who]))
				}
				path, form := tc.prepare(a, who)
				var res *response
				if tc.method == "GET" {
					res = c.get(path)
				} else {
					res = c.submit(path, form)
				}
				want := tc.want[who]
				if want >= 400 {
					mustCleanError(t, res, want)
				} else {
					mustStatus(t, res, want)
				}
				switch loc := tc.loc[who]; {
				case want != http.StatusSeeOther || loc == "":
				case loc == "login":
					mustRedirect(t, res, "/login?next="+url.QueryEscape(path))
				default:
					mustRedirect(t, res, loc)
				}
				switch want {
				case http.StatusUnauthorized:
					if got := text(res.doc, testid("error-title")); got != "Sign in needed" {
						t.Errorf("401 title %q", got)
					}
				case http.StatusForbidden:
					if got := text(res.doc, testid("error-title")); got != "Not allowed" {
						t.Errorf("403 title %q", got)
					}
				}
			})
		}
	}
}

// TestAccessHTMX checks what a visitor's htmx request gets: 401 with an
// HX-Redirect to the sign-in page (a redirect would be swapped into the
// page), and a fragment rather than a whole page.
func TestAccessHTMX(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	r := a.createRun("editor", publishAbout, olgaName, time.Now())
	for _, path := range []string{"/inbox/count", "/runs/" + r.ID + "/steps?after=1"} {
		res := a.newClient().get(path, htmx())
		mustCleanError(t, res, http.StatusUnauthorized)
		if got := res.Header.Get("HX-Redirect"); got != "/login" {
			t.Errorf("%s: HX-Redirect %q, want /login", path, got)
		}
		if res.doc.Find("html body nav").Length() != 0 || res.doc.Find(testid("error")).Length() != 1 {
			t.Errorf("%s: want the error fragment, got\n%s", path, res.body)
		}
	}
}
