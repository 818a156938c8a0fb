package webhook_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"countersign/app/apptest"
	"countersign/engine"
	"countersign/store"
	"countersign/webhook"
)

// receiver is an endpoint that verifies every request with the Standard
// Webhooks library and answers with the status answer gives for the n-th
// request (1 for the first).
type receiver struct {
	t      *testing.T
	secret string
	answer func(n int) int

	mu  sync.Mutex
	got []request
	bad []string
}

// request is a request as the receiver got it.
type request struct {
	id, body string
	header   http.Header
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	return &receiver{t: t, answer: answer}
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	rc.mu.Lock()
	wh, werr := standardwebhooks.NewWebhook(rc.secret)
	switch {
	case err != nil || werr != nil:
		rc.bad = append(rc.bad, "read or key: "+errString(err)+errString(werr))
	case r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json":
		rc.bad = append(rc.bad, r.Method+" "+r.Header.Get("Content-Type"))
	default:
		if err := wh.Verify(body, r.Header); err != nil {
			rc.bad = append(rc.bad, "verify: "+err.Error())
		}
	}
	rc.got = append(rc.got, request{id: r.Header.Get("webhook-id"), body: string(body), header: r.Header.Clone()})
	n := len(rc.got)
	rc.mu.Unlock()
	w.WriteHeader(rc.answer(n))
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// requests returns what the receiver got so far, and fails the test for
// any request that did not verify.
func (rc *receiver) requests() []request {
	rc.t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, b := range rc.bad {
		rc.t.Errorf("receiver refused a request: %s", b)
	}
	rc.bad = nil
	return append([]request(nil), rc.got...)
}

func always(code int) func(int) int { return func(int) int { return code } }

// fixture is a database with one endpoint and a deliverer over it.
type fixture struct {
	t      *testing.T
	path   string
	db     *store.DB
	ep     store.WebhookEndpoint
	secret string
	log    *apptest.Buffer
}

func newFixture(t *testing.T, url string) *fixture {
	t.Helper()
	f := &fixture{t: t, path: filepath.Join(t.TempDir(), "cs.db"), log: &apptest.Buffer{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", f.log.String())
		}
	})
	f.open()
	ep, secret, err := f.db.CreateWebhookEndpoint(context.Background(), store.NewWebhookEndpoint{
		URL: url, Events: store.WebhookEventTypes(), CreatedBy: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	f.ep, f.secret = ep, secret
	return f
}

// open opens the database file, closed at the end of the test unless
// closed before.
func (f *fixture) open() {
	f.t.Helper()
	db, err := store.Open(context.Background(), f.path)
	if err != nil {
		f.t.Fatal(err)
	}
	f.db = db
	f.t.Cleanup(func() { db.Close() })
}

// deliverer starts a deliverer over the database, polling every 5ms and
// waiting wait after each failed attempt (a hundred times, then giving
// up), closed at the end of the test unless closed before.
func (f *fixture) deliverer(wait time.Duration) *webhook.Deliverer {
	f.t.Helper()
	backoff := make([]time.Duration, 100)
	for i := range backoff {
		backoff[i] = wait
	}
	return f.delivererWith(backoff)
}

func (f *fixture) delivererWith(backoff []time.Duration) *webhook.Deliverer {
	f.t.Helper()
	d, err := webhook.New(webhook.Config{Outbox: f.db, Poll: 5 * time.Millisecond, Backoff: backoff, Timeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(f.log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		f.t.Fatal(err)
	}
	d.Start()
	f.t.Cleanup(d.Close)
	return d
}

// waitingRun stores a run that waits for a decision, which enqueues a
// run.waiting delivery, and returns that delivery.
func (f *fixture) waitingRun() store.WebhookDelivery {
	f.t.Helper()
	ctx, now := context.Background(), time.Now()
	r, err := f.db.CreateRun(ctx, engine.NewRun{Agent: "editor", Model: "demo", Prompt: "p", InitiatedBy: "olga"},
		engine.Event{Kind: engine.EventPrompt, Text: "p"}, now)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.db.AcquireRun(ctx, r.ID, "w", now, now.Add(time.Minute)); err != nil {
		f.t.Fatal(err)
	}
	ev := engine.Event{Kind: engine.EventSuspended, Digest: "d1", Pending: []engine.ToolCall{{ID: "c1", Name: "publish_page"}}}
	if err := f.db.SuspendRun(ctx, r.ID, "w", engine.Suspend{Suspension: engine.Suspension{State: []byte(`{}`), Digest: "d1"}, Event: ev, Now: now}); err != nil {
		f.t.Fatal(err)
	}
	ds := f.deliveries()
	if len(ds) == 0 || ds[0].RunID != r.ID || ds[0].Type != store.WebhookRunWaiting {
		f.t.Fatalf("deliveries after suspending: %+v", ds)
	}
	return ds[0]
}

func (f *fixture) deliveries() []store.WebhookDelivery {
	f.t.Helper()
	ds, err := f.db.RecentDeliveries(context.Background(), store.DeliveryFilter{})
	if err != nil {
		f.t.Fatal(err)
	}
	return ds
}

func (f *fixture) delivery(id string) store.WebhookDelivery {
	f.t.Helper()
	for _, d := range f.deliveries() {
		if d.ID == id {
			return d
		}
	}
	f.t.Fatalf("no delivery %s", id)
	return store.WebhookDelivery{}
}

// waitFor polls cond until it holds, failing the test after ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s still waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestDelivery(t *testing.T) {
	rc := newReceiver(t, always(http.StatusOK))
	srv := httptest.NewServer(rc)
	defer srv.Close()
	f := newFixture(t, srv.URL+"/hooks")
	rc.secret = f.secret
	want := f.waitingRun()
	f.deliverer(time.Millisecond)

	waitFor(t, "the delivery", func() bool { return f.delivery(want.ID).Status == store.DeliveryDelivered })
	got := rc.requests()
	if len(got) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(got))
	}
	r := got[0]
	if r.id != want.ID || !strings.HasPrefix(r.id, "msg_") || r.body != string(want.Payload) {
		t.Errorf("request id %q body %s; want id %q body %s", r.id, r.body, want.ID, want.Payload)
	}
	if ts := r.header.Get("webhook-timestamp"); ts == "" || !strings.HasPrefix(r.header.Get("webhook-signature"), "v1,") {
		t.Errorf("headers %v", r.header)
	}
	d := f.delivery(want.ID)
	if d.Attempts != 1 || d.LastStatusCode != 200 || d.LastError != "" || d.DeliveredAt.IsZero() {
		t.Errorf("delivery after success = %+v", d)
	}
	// A wrong secret does not verify: the receiver's check can fail.
	wh, _ := standardwebhooks.NewWebhook("whsec_" + strings.Repeat("A", 43) + "=")
	if err := wh.Verify([]byte(r.body), r.header); err == nil {
		t.Error("the signature verifies with another secret")
	}
}

func TestRetriesUntilTheReceiverRecovers(t *testing.T) {
	rc := newReceiver(t, func(n int) int {
		if n <= 2 {
			return []int{http.StatusInternalServerError, http.StatusServiceUnavailable}[n-1]
		}
		return http.StatusNoContent
	})
	srv := httptest.NewServer(rc)
	defer srv.Close()
	f := newFixture(t, srv.URL)
	rc.secret = f.secret
	want := f.waitingRun()
	f.deliverer(10 * time.Millisecond)

	waitFor(t, "the third attempt to succeed", func() bool { return f.delivery(want.ID).Status == store.DeliveryDelivered })
	got := rc.requests()
	if len(got) != 3 {
		t.Fatalf("receiver got %d requests, want 3", len(got))
	}
	for i, r := range got {
		if r.id != want.ID || r.body != string(want.Payload) {
			t.Errorf("attempt %d: id %q, want %q every time, and the same body", i+1, r.id, want.ID)
		}
	}
	if d := f.delivery(want.ID); d.Attempts != 3 || d.LastStatusCode != 204 {
		t.Errorf("delivery = %+v, want 3 attempts ending in 204", d)
	}
}

func TestGivesUpWhenTheScheduleRunsOut(t *testing.T) {
	rc := newReceiver(t, always(http.StatusBadGateway))
	srv := httptest.NewServer(rc)
	defer srv.Close()
	f := newFixture(t, srv.URL)
	rc.secret = f.secret
	want := f.waitingRun()
	f.delivererWith([]time.Duration{5 * time.Millisecond})

	waitFor(t, "the delivery to fail", func() bool { return f.delivery(want.ID).Status == store.DeliveryFailed })
	d := f.delivery(want.ID)
	if d.Attempts != 2 || d.LastStatusCode != http.StatusBadGateway || !strings.Contains(d.LastError, "502") {
		t.Errorf("failed delivery = %+v, want 2 attempts ending in 502", d)
	}
	if n := len(rc.requests()); n != 2 {
		t.Errorf("receiver got %d requests, want 2", n)
	}
}

// TestRedirectIsNotFollowed: a 3xx is a failed attempt; the payload never
// goes where the redirect points.
func TestRedirectIsNotFollowed(t *testing.T) {
	elsewhere := newReceiver(t, always(http.StatusOK))
	other := httptest.NewServer(elsewhere)
	defer other.Close()
	srv := httptest.NewServer(http.RedirectHandler(other.URL, http.StatusTemporaryRedirect))
	defer srv.Close()
	f := newFixture(t, srv.URL)
	want := f.waitingRun()
	f.delivererWith([]time.Duration{})
	waitFor(t, "the delivery to fail", func() bool { return f.delivery(want.ID).Status == store.DeliveryFailed })
	if d := f.delivery(want.ID); d.LastStatusCode != http.StatusTemporaryRedirect {
		t.Errorf("delivery = %+v, want it failed on the 307", d)
	}
	if n := len(elsewhere.requests()); n != 0 {
		t.Errorf("the redirect target got %d requests", n)
	}
}

// TestReceiverDownAcrossRestart: the receiver drops every connection
// unanswered while the deliverer tries; the deliverer and the database are
// closed and reopened on the same file, the receiver comes up, and the
// pending delivery arrives, with the id it had before the restart.
func TestReceiverDownAcrossRestart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gate := &downListener{Listener: l}
	rc := newReceiver(t, always(http.StatusOK))
	srv := &httptest.Server{Listener: gate, Config: &http.Server{Handler: rc}}
	srv.Start()
	defer srv.Close()
	f := newFixture(t, "http://"+l.Addr().String()+"/hook")
	rc.secret = f.secret
	want := f.waitingRun()

	d := f.deliverer(10 * time.Millisecond)
	waitFor(t, "two failed attempts", func() bool { return f.delivery(want.ID).Attempts >= 2 })
	d.Close()
	before := f.delivery(want.ID)
	if before.Status != store.DeliveryPending || before.LastStatusCode != 0 || before.LastError == "" {
		t.Fatalf("delivery while the receiver is down = %+v", before)
	}
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("the receiver, down, answered %d requests", n)
	}
	if err := f.db.Close(); err != nil {
		t.Fatal(err)
	}

	// The receiver comes up on its address, and the app restarts.
	gate.up.Store(true)
	f.open()
	f.deliverer(10 * time.Millisecond)

	waitFor(t, "the delivery after the restart", func() bool { return f.delivery(want.ID).Status == store.DeliveryDelivered })
	got := rc.requests()
	if len(got) != 1 || got[0].id != want.ID || got[0].body != string(want.Payload) {
		t.Fatalf("after the restart the receiver got %+v, want the one delivery %s", got, want.ID)
	}
	if after := f.delivery(want.ID); after.Attempts != before.Attempts+1 {
		t.Errorf("attempts %d after the restart, want %d", after.Attempts, before.Attempts+1)
	}
}

// downListener is a receiver's address that is down until up is set: it
// drops every connection before a byte is read, so a sender sees the
// connection fail, as when nothing listens. Keeping the address open spares
// the test from reopening a closed port that something else may take.
type downListener struct {
	net.Listener
	up atomic.Bool
}

// Accept returns the next connection once up is set, closing the ones
// that come before.
func (g *downListener) Accept() (net.Conn, error) {
	for {
		c, err := g.Listener.Accept()
		if err != nil || g.up.Load() {
			return c, err
		}
		c.Close()
	}
}

// TestCloseWaitsForTheAttemptInFlight: an answer that comes while the
// deliverer closes is still recorded.
func TestCloseWaitsForTheAttemptInFlight(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(int) int { <-release; return http.StatusOK })
	srv := httptest.NewServer(rc)
	defer srv.Close()
	f := newFixture(t, srv.URL)
	rc.secret = f.secret
	want := f.waitingRun()
	d := f.deliverer(time.Millisecond)
	waitFor(t, "the attempt to reach the receiver", func() bool { return len(rc.requests()) == 1 })
	closed := make(chan struct{})
	go func() {
		d.Close()
		close(closed)
	}()
	close(release)
	<-closed
	if got := f.delivery(want.ID); got.Status != store.DeliveryDelivered {
		t.Errorf("after Close the delivery is %s, want delivered", got.Status)
	}
}
