package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"countersign/engine"
	"countersign/store"
)

// endpoints lists the stored webhook endpoints.
func (a *testApp) endpoints() []store.WebhookEndpoint {
	a.t.Helper()
	es, err := a.db.WebhookEndpoints(context.Background())
	if err != nil {
		a.t.Fatalf("webhook endpoints: %v", err)
	}
	return es
}

// addWebhook adds an endpoint through the admin's form and returns the
// page that shows its secret.
func addWebhook(t *testing.T, admin *client, form url.Values) *response {
	t.Helper()
	mustStatus(t, admin.get("/webhooks"), http.StatusOK)
	return admin.submit("/webhooks", form)
}

// checkedEvents lists the events the add form has checked.
func checkedEvents(page *response) string {
	var out []string
	page.doc.Find(testid("add-webhook") + ` input[name="events"][checked]`).Each(func(_ int, s *goquery.Selection) {
		out = append(out, s.AttrOr("value", ""))
	})
	return strings.Join(out, ",")
}

func TestWebhooksPageIsForAdmins(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	form := url.Values{"url": {"https://hooks.example.com/x"}, "events": {store.WebhookRunWaiting}}
	for _, name := range []string{veraName, olgaName} {
		c := a.as(name)
		mustCleanError(t, c.get("/webhooks"), http.StatusForbidden)
		mustCleanError(t, c.submit("/webhooks", form), http.StatusForbidden)
		if n := c.get("/runs").doc.Find(testid("nav-webhooks")).Length(); n != 0 {
			t.Errorf("%s's nav links the webhooks page", name)
		}
	}
	res := a.newClient().get("/webhooks")
	mustRedirect(t, res, "/login?next="+url.QueryEscape("/webhooks"))
	if n := len(a.endpoints()); n != 0 {
		t.Fatalf("%d endpoints added by people who are not admins", n)
	}
	page := a.as(adminName).get("/webhooks")
	mustStatus(t, page, http.StatusOK)
	if attr(page.doc, testid("nav-webhooks"), "aria-current") != "page" {
		t.Error("the admin's nav does not mark the webhooks page")
	}
	if page.doc.Find(testid("webhooks-empty")).Length() != 1 || page.doc.Find(testid("deliveries-empty")).Length() != 1 {
		t.Error("an empty webhooks page does not say so")
	}
	// The form offers every event, checked.
	if got := checkedEvents(page); got != strings.Join(store.WebhookEventTypes(), ",") {
		t.Errorf("form events %q, want all checked", got)
	}
}

func TestWebhooksAddShowsTheSecretOnce(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	admin := a.as(adminName)
	res := addWebhook(t, admin, url.Values{"url": {" https://hooks.example.com/cs "}, "description": {"ops channel"},
		"events": {store.WebhookRunWaiting, store.WebhookRunFinished}})
	mustStatus(t, res, http.StatusCreated)
	secret := text(res.doc, testid("webhook-secret"))
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("secret %q, want whsec_…", secret)
	}
	if _, err := standardwebhooks.NewWebhook(secret); err != nil {
		t.Errorf("the Standard Webhooks library refuses the secret: %v", err)
	}
	es := a.endpoints()
	if len(es) != 1 || es[0].URL != "https://hooks.example.com/cs" || es[0].Description != "ops channel" ||
		strings.Join(es[0].Events, ",") != "run.waiting,run.finished" || es[0].CreatedBy != adminName || !es[0].Enabled() {
		t.Fatalf("endpoints = %+v", es)
	}
	page := admin.get("/webhooks")
	mustStatus(t, page, http.StatusOK)
	if strings.Contains(page.body, secret) || page.doc.Find(testid("webhook-secret")).Length() != 0 {
		t.Error("the secret is shown again")
	}
	row := page.doc.Find(testid("webhook-row"))
	if row.Length() != 1 || text(page.doc, testid("webhook-row-url")) != "https://hooks.example.com/cs" ||
		text(page.doc, testid("webhook-row-events")) != "run.waiting, run.finished" || row.Find(testid("webhook-enabled")).Length() != 1 {
		t.Errorf("endpoint row: %s", clip(page.body, 3000))
	}
	for _, c := range res.Cookies() {
		if strings.Contains(c.Value, strings.TrimPrefix(secret, "whsec_")) {
			t.Error("the secret went into a cookie")
		}
	}
}

func TestWebhooksAddRefusesBadInput(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	admin := a.as(adminName)
	for _, tc := range []struct {
		name  string
		form  url.Values
		field string
	}{
		{"relative url", url.Values{"url": {"/hooks"}, "events": {"run.waiting"}}, "url"},
		{"ftp url", url.Values{"url": {"ftp://example.com/"}, "events": {"run.waiting"}}, "url"},
		{"no url", url.Values{"events": {"run.waiting"}}, "url"},
		{"no events", url.Values{"url": {"https://example.com/"}}, "events"},
		{"unknown event", url.Values{"url": {"https://example.com/"}, "events": {"run.deleted"}}, "events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := addWebhook(t, admin.with(t), tc.form)
			mustStatus(t, res, http.StatusUnprocessableEntity)
			if got := attr(res.doc, testid("form-error"), "data-field"); got != tc.field {
				t.Errorf("form error on %q, want %q: %s", got, tc.field, text(res.doc, testid("form-error")))
			}
			if got := attr(res.doc, testid("webhook-url"), "value"); got != tc.form.Get("url") {
				t.Errorf("URL refilled as %q, want %q", got, tc.form.Get("url"))
			}
			if res.doc.Find(testid("webhook-secret")).Length() != 0 {
				t.Error("a refused form shows a secret")
			}
		})
	}
	// The refilled form keeps the events chosen.
	res := addWebhook(t, admin, url.Values{"url": {"nope"}, "events": {store.WebhookRunDecided}})
	if got := checkedEvents(res); got != store.WebhookRunDecided {
		t.Errorf("refilled events %q", got)
	}
	if n := len(a.endpoints()); n != 0 {
		t.Fatalf("bad input added %d endpoints", n)
	}
}

func TestWebhooksFormsNeedCSRF(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	admin := a.as(adminName)
	e, _, err := a.db.CreateWebhookEndpoint(context.Background(), store.NewWebhookEndpoint{URL: "https://a.example/", Events: []string{"run.waiting"}})
	if err != nil {
		t.Fatal(err)
	}
	id := itoa(e.ID)
	for _, path := range []string{"/webhooks", "/webhooks/" + id + "/disable", "/webhooks/" + id + "/delete", "/webhooks/deliveries/msg_x/redeliver"} {
		res := admin.post(path, url.Values{"url": {"https://b.example/"}, "events": {"run.waiting"}, "_csrf": {"forged"}})
		mustCleanError(t, res, http.StatusForbidden)
	}
	if es := a.endpoints(); len(es) != 1 || !es[0].Enabled() {
		t.Fatalf("forged forms changed the endpoints: %+v", es)
	}
}

func TestWebhooksDisableEnableDelete(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	admin := a.as(adminName)
	addWebhook(t, admin, url.Values{"url": {"https://a.example/"}, "events": {"run.waiting"}})
	id := itoa(a.endpoints()[0].ID)

	mustStatus(t, admin.get("/webhooks"), http.StatusOK)
	mustRedirect(t, admin.submit("/webhooks/"+id+"/disable", nil), "/webhooks")
	page := admin.get("/webhooks")
	if !strings.Contains(text(page.doc, testid("flash")), "Disabled https://a.example/") ||
		page.doc.Find(testid("webhook-disabled")).Length() != 1 || page.doc.Find(testid("enable-webhook")).Length() != 1 {
		t.Fatalf("after disabling: %s", clip(page.body, 3000))
	}
	if a.endpoints()[0].Enabled() {
		t.Fatal("the endpoint is still enabled")
	}
	mustRedirect(t, admin.submit("/webhooks/"+id+"/enable", nil), "/webhooks")
	if !a.endpoints()[0].Enabled() {
		t.Fatal("the endpoint is still disabled")
	}
	mustStatus(t, admin.get("/webhooks"), http.StatusOK)
	mustRedirect(t, admin.submit("/webhooks/"+id+"/delete", nil), "/webhooks")
	if n := len(a.endpoints()); n != 0 {
		t.Fatalf("%d endpoints after deleting", n)
	}
	for _, path := range []string{"/webhooks/" + id + "/delete", "/webhooks/" + id + "/enable", "/webhooks/x/disable",
		"/webhooks/deliveries/msg_nope/redeliver"} {
		mustStatus(t, admin.get("/webhooks"), http.StatusOK)
		mustCleanError(t, admin.submit(path, nil), http.StatusNotFound)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// hookReceiver is an endpoint that verifies every request with the
// Standard Webhooks library, as a receiver should.
type hookReceiver struct {
	t      *testing.T
	mu     sync.Mutex
	secret string
	got    []hookRequest
}

type hookRequest struct {
	ID      string
	Type    string `json:"type"`
	Payload struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
		By     string `json:"decided_by"`
		Pend   []struct {
			ID, Tool string
		} `json:"pending"`
	} `json:"data"`
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	wh, err := standardwebhooks.NewWebhook(h.secret)
	if err == nil {
		err = wh.Verify(body, r.Header)
	}
	if err != nil {
		h.t.Errorf("receiver: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var req hookRequest
	if err := json.Unmarshal(body, &req); err != nil {
		h.t.Errorf("receiver: payload %s: %v", body, err)
	}
	req.ID = r.Header.Get("webhook-id")
	h.got = append(h.got, req)
	w.WriteHeader(http.StatusNoContent)
}

func (h *hookReceiver) requests() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookRequest(nil), h.got...)
}

// waitRequests waits until the receiver has got n requests.
func (h *hookReceiver) waitRequests(n int) []hookRequest {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := h.requests()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the receiver got %d requests after 15s, want %d: %+v", len(got), n, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWebhooksEndToEnd registers an endpoint through the admin's page, and
// follows a run of the real app that waits, is approved through the run
// page and ends: the receiver gets run.waiting, then run.decided and
// run.finished, each signed with the secret the page showed; the page lists
// them delivered, and a redelivery comes again under the same webhook-id.
func TestWebhooksEndToEnd(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	rc := &hookReceiver{t: t}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	admin := a.as(adminName)
	res := addWebhook(t, admin, url.Values{"url": {srv.URL + "/hooks"}, "events": store.WebhookEventTypes()})
	mustStatus(t, res, http.StatusCreated)
	rc.mu.Lock()
	rc.secret = text(res.doc, testid("webhook-secret"))
	rc.mu.Unlock()

	r := a.startRun("editor", publishAbout, olgaName)
	a.waitStatus(r.ID, engine.StatusWaiting)
	got := rc.waitRequests(1)
	w := got[0]
	if w.Type != store.WebhookRunWaiting || w.Payload.RunID != r.ID || w.Payload.Status != "waiting_for_approval" ||
		len(w.Payload.Pend) != 1 || w.Payload.Pend[0].Tool == "" || !strings.HasPrefix(w.ID, "msg_"+r.ID+"_") {
		t.Fatalf("first webhook = %+v", w)
	}

	olga := a.as(olgaName)
	mustRedirect(t, olga.post("/tool/resume", cardForm(t, olga, r.ID, "approve")), "/runs/"+r.ID)
	if end := a.waitTerminal(r.ID); end.Status != engine.StatusCompleted {
		t.Fatalf("run ended %s", end.Status)
	}
	got = rc.waitRequests(3)
	types := map[string]hookRequest{}
	for _, g := range got[1:] {
		types[g.Type] = g
	}
	if d := types[store.WebhookRunDecided]; d.Payload.By != olgaName || d.Payload.RunID != r.ID {
		t.Errorf("run.decided = %+v", d)
	}
	if f := types[store.WebhookRunFinished]; f.Payload.Status != "completed" || f.Payload.RunID != r.ID {
		t.Errorf("run.finished = %+v", f)
	}

	// The page lists the three, delivered, newest first.
	var page *response
	deadline := time.Now().Add(10 * time.Second)
	for {
		page = admin.get("/webhooks")
		mustStatus(t, page, http.StatusOK)
		if page.doc.Find(`[data-testid="delivery-row"][data-status="delivered"]`).Length() == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	rows := page.doc.Find(testid("delivery-row"))
	if rows.Length() != 3 || rows.Filter(`[data-status="delivered"]`).Length() != 3 {
		t.Fatalf("deliveries on the page: %s", clip(page.body, 4000))
	}
	if href := attr(page.doc, testid("delivery-run"), "href"); href != "/runs/"+r.ID {
		t.Errorf("delivery links %q", href)
	}

	// Redeliver the waiting one: it comes again with the same id.
	id := w.ID
	mustRedirect(t, admin.submit("/webhooks/deliveries/"+url.PathEscape(id)+"/redeliver", nil), "/webhooks")
	got = rc.waitRequests(4)
	if got[3].ID != id || got[3].Type != store.WebhookRunWaiting {
		t.Errorf("redelivery = %+v, want %s again", got[3], id)
	}
}
