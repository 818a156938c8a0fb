package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"countersign/engine"
)

// TestAPIAuth: every route but the description needs a valid token; a
// missing, wrong or revoked token, or the token of a disabled user, is a
// 401 with WWW-Authenticate: Bearer, and changes nothing.
func TestAPIAuth(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	ctx := context.Background()
	w := a.waitingRun("editor", publishAbout, olgaName)

	revoked := a.api(oscarName)
	if err := a.db.RevokeToken(ctx, revoked.tokenID, 0); err != nil {
		t.Fatal(err)
	}
	disabled := a.addUser("dora", "operator")
	dora := a.api("dora")
	if err := a.db.DisableUser(ctx, disabled.ID); err != nil {
		t.Fatal(err)
	}
	wrong := a.api(olgaName)
	wrong.token += "x"
	basic := a.anonymousAPI()

	routes := []struct {
		method, path string
		body         any
	}{
		{http.MethodGet, "/api/v1/runs", nil},
		{http.MethodPost, "/api/v1/runs", map[string]string{"agent": "editor", "prompt": publishAbout}},
		{http.MethodGet, "/api/v1/runs/" + w.ID, nil},
		{http.MethodGet, "/api/v1/runs/" + w.ID + "/events", nil},
		{http.MethodPost, "/api/v1/runs/" + w.ID + "/decision", map[string]any{"digest": w.PendingDigest, "verdict": "approve"}},
		{http.MethodPost, "/api/v1/runs/" + w.ID + "/cancel", nil},
		{http.MethodGet, "/api/v1/inbox", nil},
	}
	runs := a.countRuns()
	for _, who := range []struct {
		name   string
		c      *apiClient
		header string
	}{{"no token", a.anonymousAPI(), ""}, {"wrong token", wrong, ""}, {"revoked token", revoked, ""},
		{"disabled user", dora, ""}, {"basic auth", basic, "Basic b2xnYTpvbGdhLXBhc3N3b3Jk"}, {"empty bearer", basic, "Bearer "}} {
		for _, r := range routes {
			t.Run(who.name+" "+r.method+" "+r.path, func(t *testing.T) {
				opts := []callOpt{invalidRequest()}
				if who.header != "" {
					opts = append(opts, withHeader("Authorization", who.header))
				}
				res := who.c.with(t).call(r.method, r.path, r.body, opts...)
				p := mustProblem(t, res, http.StatusUnauthorized)
				if h := res.Header.Get("WWW-Authenticate"); !strings.HasPrefix(h, "Bearer") {
					t.Errorf("WWW-Authenticate %q, want Bearer", h)
				}
				if !strings.Contains(p.Detail, "token") {
					t.Errorf("detail %q does not speak of the token", p.Detail)
				}
			})
		}
	}
	if n := a.countRuns(); n != runs {
		t.Errorf("%d runs after refused starts, want %d", n, runs)
	}
	if r := a.run(w.ID); r.Status != engine.StatusWaiting {
		t.Errorf("refused calls changed the run: %s", r.Status)
	}
}

// TestAPIIgnoresSessions: a signed-in browser's cookie does not authenticate
// an API call, and a token call needs no CSRF token.
func TestAPIIgnoresSessions(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	browser := a.as(olgaName)
	res := browser.get("/api/v1/runs")
	if res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("GET /api/v1/runs with a session cookie: %d %s, want a 401 problem", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if c := res.Header.Get("Set-Cookie"); c != "" {
		t.Errorf("the API set a cookie: %s", c)
	}
	// A token POST without any CSRF token is accepted.
	res2 := a.api(olgaName).call(http.MethodPost, "/api/v1/runs", map[string]string{"agent": "editor", "prompt": publishAbout})
	mustAPIStatus(t, res2, http.StatusCreated)
}

// TestAPIRoles: a viewer's token reads but does not start, decide or
// cancel (403, nothing changes); an admin's token may do all.
func TestAPIRoles(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	w := a.waitingRun("editor", publishAbout, olgaName)
	vera := a.api(veraName)

	for _, path := range []string{"/api/v1/runs", "/api/v1/runs/" + w.ID, "/api/v1/runs/" + w.ID + "/events", "/api/v1/inbox"} {
		mustAPIStatus(t, vera.call(http.MethodGet, path, nil), http.StatusOK)
	}
	runs := a.countRuns()
	mustProblem(t, vera.call(http.MethodPost, "/api/v1/runs", map[string]string{"agent": "editor", "prompt": publishAbout}),
		http.StatusForbidden)
	mustProblem(t, vera.call(http.MethodPost, "/api/v1/runs/"+w.ID+"/decision",
		map[string]any{"digest": w.PendingDigest, "verdict": "approve"}), http.StatusForbidden)
	mustProblem(t, vera.call(http.MethodPost, "/api/v1/runs/"+w.ID+"/cancel", nil), http.StatusForbidden)
	if n := a.countRuns(); n != runs {
		t.Errorf("a viewer started a run")
	}
	if r := a.run(w.ID); r.Status != engine.StatusWaiting {
		t.Errorf("a viewer changed the run: %s", r.Status)
	}

	admin := a.api(adminName)
	res := admin.call(http.MethodPost, "/api/v1/runs/"+w.ID+"/cancel", nil)
	mustAPIStatus(t, res, http.StatusOK)
	var got apiRunBody
	res.decode(t, &got)
	if got.Status != string(engine.StatusCancelled) {
		t.Errorf("cancelled run is %s", got.Status)
	}
}
