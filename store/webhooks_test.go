package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"countersign/engine"
)

// addEndpoint registers an endpoint for events at url and returns it.
func addEndpoint(t *testing.T, db *DB, url string, events ...string) WebhookEndpoint {
	t.Helper()
	e, _, err := db.CreateWebhookEndpoint(context.Background(), NewWebhookEndpoint{URL: url, Events: events, CreatedBy: "admin"})
	if err != nil {
		t.Fatalf("create endpoint %s: %v", url, err)
	}
	return e
}

// deliveries lists every delivery, newest first.
func deliveries(t *testing.T, db *DB) []WebhookDelivery {
	t.Helper()
	ds, err := db.RecentDeliveries(context.Background(), DeliveryFilter{Limit: 500})
	if err != nil {
		t.Fatalf("deliveries: %v", err)
	}
	return ds
}

// summary lists deliveries as "type@endpoint" in ascending order.
func summary(ds []WebhookDelivery) string {
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%s@%d", d.Type, d.EndpointID))
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

func TestCreateWebhookEndpoint(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	e, secret, err := db.CreateWebhookEndpoint(ctx, NewWebhookEndpoint{URL: " https://hooks.example.com/cs?x=1 ",
		Events: []string{WebhookRunFinished, WebhookRunWaiting, WebhookRunWaiting}, Description: "ops", CreatedBy: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	if e.URL != "https://hooks.example.com/cs?x=1" || strings.Join(e.Events, ",") != "run.waiting,run.finished" ||
		e.Description != "ops" || e.CreatedBy != "admin" || !e.CreatedAt.Equal(t0) || !e.Enabled() {
		t.Errorf("endpoint = %+v", e)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if !strings.HasPrefix(secret, "whsec_") || err != nil || len(key) != 32 {
		t.Errorf("secret %q: want whsec_ and the base64 of 32 bytes (%v, %d bytes)", secret, err, len(key))
	}
	if _, again, _ := db.CreateWebhookEndpoint(ctx, NewWebhookEndpoint{URL: "http://b.example", Events: []string{WebhookRunDecided}}); again == secret {
		t.Error("two endpoints got the same secret")
	}
	list, err := db.WebhookEndpoints(ctx)
	if err != nil || len(list) != 2 || list[0].ID != e.ID {
		t.Fatalf("endpoints = %+v, %v", list, err)
	}
}

func TestCreateWebhookEndpointRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	all := WebhookEventTypes()
	for _, tc := range []struct {
		name, url string
		events    []string
		desc      string
		field     string
	}{
		{"empty url", "", all, "", "url"},
		{"relative", "/hooks", all, "", "url"},
		{"no host", "http://", all, "", "url"},
		{"ftp", "ftp://example.com/x", all, "", "url"},
		{"javascript", "javascript:alert(1)", all, "", "url"},
		{"credentials", "https://user:pw@example.com/", all, "", "url"},
		{"space", "https://example.com/a b", all, "", "url"},
		{"too long", "https://example.com/" + strings.Repeat("a", 2048), all, "", "url"},
		{"no events", "https://example.com/", nil, "", "events"},
		{"unknown event", "https://example.com/", []string{"run.started"}, "", "events"},
		{"long description", "https://example.com/", all, strings.Repeat("d", 201), "description"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := db.CreateWebhookEndpoint(ctx, NewWebhookEndpoint{URL: tc.url, Events: tc.events, Description: tc.desc})
			var in *engine.InputError
			if !errors.As(err, &in) || in.Field != tc.field || in.Message == "" {
				t.Fatalf("err = %v, want an input error on %s", err, tc.field)
			}
		})
	}
	if list, err := db.WebhookEndpoints(ctx); err != nil || len(list) != 0 {
		t.Errorf("bad input stored %d endpoints (%v)", len(list), err)
	}
}

// TestEnqueueOnlySubscribedEndpoints drives a run through a turn, a decision
// and its end, and checks that each event reaches exactly the enabled
// endpoints subscribed to its type, with the payload documented in README.
func TestEnqueueOnlySubscribedEndpoints(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	waiting := addEndpoint(t, db, "https://a.example/", WebhookRunWaiting)
	every := addEndpoint(t, db, "https://b.example/", WebhookEventTypes()...)
	off := addEndpoint(t, db, "https://c.example/", WebhookEventTypes()...)
	if _, err := db.SetWebhookEndpointEnabled(ctx, off.ID, false); err != nil {
		t.Fatal(err)
	}

	r := runningRun(t, db, "w1")
	if len(deliveries(t, db)) != 0 {
		t.Fatal("a prompt and a start made deliveries")
	}
	if _, _, err := db.AppendEvent(ctx, r.ID, "w1", engine.Event{Kind: engine.EventModelTurn}, t0.Add(lease)); err != nil {
		t.Fatal(err)
	}
	at := t0.Add(time.Second)
	sus := engine.Event{Kind: engine.EventSuspended, Digest: "d1",
		Pending: []engine.ToolCall{{ID: "c1", Name: "publish_page", Arguments: `{"slug":"about"}`}}}
	if err := db.SuspendRun(ctx, r.ID, "w1", engine.Suspend{Suspension: engine.Suspension{State: []byte(`{}`), Digest: "d1"}, Event: sus, Now: at}); err != nil {
		t.Fatal(err)
	}
	ds := deliveries(t, db)
	if got := summary(ds); got != fmt.Sprintf("run.waiting@%d,run.waiting@%d", waiting.ID, every.ID) {
		t.Fatalf("deliveries after suspending: %s", got)
	}
	d := ds[0]
	if d.ID != fmt.Sprintf("msg_%s_3_%d", r.ID, d.EndpointID) || d.RunID != r.ID || d.Seq != 3 || d.Status != DeliveryPending ||
		d.Attempts != 0 || !d.NextAttemptAt.Equal(at) || !d.CreatedAt.Equal(at) {
		t.Errorf("delivery = %+v", d)
	}
	var p struct {
		Type      string         `json:"type"`
		Timestamp string         `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}
	if err := json.Unmarshal(d.Payload, &p); err != nil {
		t.Fatalf("payload %s: %v", d.Payload, err)
	}
	want := `{"digest":"d1","initiated_by":"alice","agent":"editor","model":"demo","pending":[{"id":"c1","tool":"publish_page"}],` +
		`"run_id":"` + r.ID + `","seq":3,"status":"waiting_for_approval"}`
	if got, _ := json.Marshal(p.Data); p.Type != "run.waiting" || p.Timestamp != "2026-03-01T09:00:01Z" || !jsonEqual(t, got, want) {
		t.Errorf("payload = %s", d.Payload)
	}

	dec := decision("bob", engine.VerdictApprove, at.Add(time.Minute), "d1")
	dec.Event.Verdicts = []engine.CallVerdict{{CallID: "c1", Tool: "publish_page", Verdict: engine.VerdictApprove}}
	if _, err := db.ClaimRun(ctx, r.ID, dec); err != nil {
		t.Fatal(err)
	}
	if err := db.FinishRun(ctx, r.ID, "w2", engine.Finish{Status: engine.StatusCompleted, Termination: engine.TermCompleted,
		Event: engine.Event{Kind: engine.EventFinished, Text: "Published.", Termination: engine.TermCompleted}, Now: at.Add(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	ds = deliveries(t, db)
	if got := summary(ds); got != fmt.Sprintf("run.decided@%d,run.finished@%d,run.waiting@%d,run.waiting@%d", every.ID, every.ID, waiting.ID, every.ID) {
		t.Fatalf("deliveries: %s", got)
	}
	for _, d := range ds {
		var p struct {
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(d.Payload, &p); err != nil {
			t.Fatal(err)
		}
		switch d.Type {
		case WebhookRunDecided:
			if p.Data["decided_by"] != "bob" || p.Data["status"] != "running" || p.Data["decision"] != "approve" ||
				fmt.Sprint(p.Data["verdicts"]) != "[map[call_id:c1 tool:publish_page verdict:approve]]" {
				t.Errorf("decided payload = %s", d.Payload)
			}
		case WebhookRunFinished:
			if p.Data["status"] != "completed" || p.Data["termination"] != "completed" || p.Data["answer"] != "Published." {
				t.Errorf("finished payload = %s", d.Payload)
			}
		}
	}
}

func jsonEqual(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &b); err != nil {
		t.Fatal(err)
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestCancelledRunIsFinished: a cancel ends a waiting run with a failed
// event, which is a run.finished naming who cancelled.
func TestCancelledRunIsFinished(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	addEndpoint(t, db, "https://a.example/", WebhookRunFinished)
	r := waitingRun(t, db, "d1", []byte(`{}`))
	if _, err := db.RequestCancel(ctx, r.ID, engine.Event{Kind: engine.EventFailed, Termination: engine.TermCancelled,
		Error: "cancelled by bob", By: "bob"}, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ds := deliveries(t, db)
	if len(ds) != 1 || ds[0].Type != WebhookRunFinished {
		t.Fatalf("deliveries: %+v", ds)
	}
	var p struct {
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(ds[0].Payload, &p); err != nil {
		t.Fatal(err)
	}
	if p.Data["status"] != "cancelled" || p.Data["termination"] != "cancelled" || p.Data["cancelled_by"] != "bob" {
		t.Errorf("payload = %s", ds[0].Payload)
	}
}

// TestRolledBackEventLeavesNoDelivery: the delivery is written in the
// event's transaction, so when that transaction rolls back neither stays.
func TestRolledBackEventLeavesNoDelivery(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	addEndpoint(t, db, "https://a.example/", WebhookEventTypes()...)
	r := runningRun(t, db, "w1")
	boom := errors.New("boom")
	var inside int
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		if err := db.insertEvent(ctx, tx, r.ID, 99, engine.Event{Kind: engine.EventFailed, Termination: engine.TermModelError}, t0); err != nil {
			return err
		}
		if err := tx.GetContext(ctx, &inside, `SELECT count(*) FROM webhook_delivery`); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("tx = %v", err)
	}
	if inside != 1 {
		t.Fatalf("%d deliveries inside the event's transaction, want 1", inside)
	}
	if ds := deliveries(t, db); len(ds) != 0 {
		t.Fatalf("a rolled-back event left %d deliveries", len(ds))
	}
}

// pendingDeliveries makes n waiting runs, each with a run.waiting delivery
// to one endpoint, due at t0+1s.
func pendingDeliveries(t *testing.T, db *DB, n int) WebhookEndpoint {
	t.Helper()
	e := addEndpoint(t, db, "https://a.example/", WebhookRunWaiting)
	for range n {
		waitingRun(t, db, "d", []byte(`{}`))
	}
	return e
}

// TestClaimIsExclusive: goroutines over two handles of the same file (two
// processes) claim at once; every delivery is claimed exactly once.
func TestClaimIsExclusive(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "claim.db")
	db1, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db1.Close()
	db2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	const n = 40
	pendingDeliveries(t, db1, n)

	var mu sync.Mutex
	claimed := map[string]int{}
	total := 0
	var wg sync.WaitGroup
	for i := range 8 {
		db := db1
		if i%2 == 1 {
			db = db2
		}
		wg.Go(func() {
			for {
				ds, err := db.ClaimDueDeliveries(ctx, t0.Add(time.Hour), time.Hour, 3)
				if err != nil {
					t.Error(err)
					return
				}
				if len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					claimed[d.ID]++
					total++
					if d.URL != "https://a.example/" || !strings.HasPrefix(d.Secret, "whsec_") || d.Attempts != 1 {
						t.Errorf("claimed %+v", d)
					}
				}
				over := total > n // a claim that takes rows again would never run dry
				mu.Unlock()
				if over {
					return
				}
			}
		})
	}
	wg.Wait()
	if len(claimed) != n {
		t.Errorf("%d deliveries claimed, want %d", len(claimed), n)
	}
	for id, k := range claimed {
		if k != 1 {
			t.Errorf("delivery %s claimed %d times", id, k)
		}
	}
}

// TestBackoffSchedule follows one delivery through its retries to failing
// for good, and a lease that runs out.
func TestBackoffSchedule(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	pendingDeliveries(t, db, 1)
	schedule := []time.Duration{10 * time.Second, 30 * time.Second}
	due := t0.Add(time.Second)
	claim := func(at time.Time) []WebhookDelivery {
		t.Helper()
		ds, err := db.ClaimDueDeliveries(ctx, at, time.Minute, 10)
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	if ds := claim(due.Add(-time.Millisecond)); len(ds) != 0 {
		t.Fatalf("claimed %d deliveries before they are due", len(ds))
	}
	ds := claim(due)
	if len(ds) != 1 || ds[0].Attempts != 1 {
		t.Fatalf("first claim = %+v", ds)
	}
	id := ds[0].ID
	// The lease keeps it while the attempt runs; when it runs out, the
	// delivery is due again and the lost attempt's report is refused.
	if ds := claim(due.Add(time.Minute - time.Millisecond)); len(ds) != 0 {
		t.Fatal("claimed a delivery under lease")
	}
	if ds := claim(due.Add(time.Minute)); len(ds) != 1 || ds[0].Attempts != 2 {
		t.Fatalf("claim after the lease = %+v", ds)
	}
	if err := db.DeliverySucceeded(ctx, id, 1, 200, due); !errors.Is(err, ErrStaleAttempt) {
		t.Fatalf("report of a lost attempt: %v, want ErrStaleAttempt", err)
	}
	now := due.Add(time.Minute)
	st, err := db.DeliveryFailedAttempt(ctx, id, 2, 500, "status 500", now, schedule)
	if err != nil || st != DeliveryPending {
		t.Fatalf("fail attempt 2 = %s, %v", st, err)
	}
	// Attempt 2 failed: the second wait (30s) applies.
	if ds := claim(now.Add(30*time.Second - time.Millisecond)); len(ds) != 0 {
		t.Fatal("claimed before the backoff")
	}
	now = now.Add(30 * time.Second)
	if ds := claim(now); len(ds) != 1 || ds[0].Attempts != 3 || ds[0].LastStatusCode != 500 || ds[0].LastError != "status 500" {
		t.Fatalf("claim after the backoff = %+v", ds)
	}
	st, err = db.DeliveryFailedAttempt(ctx, id, 3, 0, "connection refused", now, schedule)
	if err != nil || st != DeliveryFailed {
		t.Fatalf("fail attempt 3 = %s, %v; want failed for good", st, err)
	}
	if ds := claim(now.Add(24 * time.Hour)); len(ds) != 0 {
		t.Fatal("claimed a failed delivery")
	}
	d := deliveries(t, db)[0]
	if d.Status != DeliveryFailed || d.Attempts != 3 || d.LastError != "connection refused" {
		t.Errorf("failed delivery = %+v", d)
	}

	// A redelivery starts over; a pending one cannot be redelivered.
	if _, err := db.Redeliver(ctx, id, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Redeliver(ctx, id, now.Add(time.Hour)); !errors.Is(err, ErrDeliveryPending) {
		t.Fatalf("redeliver a pending delivery: %v", err)
	}
	if _, err := db.Redeliver(ctx, "msg_nope", now); !errors.Is(err, ErrNotFound) {
		t.Fatalf("redeliver an unknown delivery: %v", err)
	}
	ds = claim(now.Add(time.Hour))
	if len(ds) != 1 || ds[0].Attempts != 1 {
		t.Fatalf("claim after redeliver = %+v", ds)
	}
	if err := db.DeliverySucceeded(ctx, id, 1, 204, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	d = deliveries(t, db)[0]
	if d.Status != DeliveryDelivered || d.LastStatusCode != 204 || d.LastError != "" || !d.DeliveredAt.Equal(now.Add(time.Hour)) {
		t.Errorf("delivered = %+v", d)
	}
	if _, err := db.DeliveryFailedAttempt(ctx, id, 1, 500, "late", now, schedule); !errors.Is(err, ErrStaleAttempt) {
		t.Errorf("failing a delivered delivery: %v, want ErrStaleAttempt", err)
	}
}

func TestDefaultBackoffGivesUpAfterAboutADay(t *testing.T) {
	var total time.Duration
	for attempt := 1; ; attempt++ {
		next, ok := NextAttempt(DefaultBackoff, attempt, t0.Add(total))
		if !ok {
			if attempt != len(DefaultBackoff)+1 {
				t.Fatalf("gave up after attempt %d", attempt)
			}
			break
		}
		if d := next.Sub(t0.Add(total)); attempt > 1 && d < DefaultBackoff[attempt-2] {
			t.Errorf("wait after attempt %d is %s, shorter than the one before", attempt, d)
		}
		total = next.Sub(t0)
	}
	if total < 20*time.Hour || total > 26*time.Hour {
		t.Errorf("the last attempt comes %s after the first, want about a day", total)
	}
	if _, ok := NextAttempt(DefaultBackoff, 0, t0); ok {
		t.Error("attempt 0 has a next attempt")
	}
}

// TestDisabledAndDeletedEndpoints: a disabled endpoint gets no new
// deliveries and its pending ones wait; deleting it deletes them.
func TestDisabledAndDeletedEndpoints(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	e := pendingDeliveries(t, db, 1)
	if _, err := db.SetWebhookEndpointEnabled(ctx, e.ID, false); err != nil {
		t.Fatal(err)
	}
	waitingRun(t, db, "d", []byte(`{}`))
	if n := len(deliveries(t, db)); n != 1 {
		t.Fatalf("%d deliveries, want the one from before disabling", n)
	}
	if ds, err := db.ClaimDueDeliveries(ctx, t0.Add(time.Hour), time.Minute, 10); err != nil || len(ds) != 0 {
		t.Fatalf("claimed %d deliveries of a disabled endpoint (%v)", len(ds), err)
	}
	again, err := db.SetWebhookEndpointEnabled(ctx, e.ID, true)
	if err != nil || !again.Enabled() {
		t.Fatalf("enable = %+v, %v", again, err)
	}
	if ds, err := db.ClaimDueDeliveries(ctx, t0.Add(time.Hour), time.Minute, 10); err != nil || len(ds) != 1 {
		t.Fatalf("claimed %d deliveries after enabling (%v)", len(ds), err)
	}
	if _, err := db.DeleteWebhookEndpoint(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	if n := len(deliveries(t, db)); n != 0 {
		t.Errorf("%d deliveries after deleting their endpoint", n)
	}
	if _, err := db.DeleteWebhookEndpoint(ctx, e.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete again: %v", err)
	}
	if _, err := db.SetWebhookEndpointEnabled(ctx, e.ID, true); !errors.Is(err, ErrNotFound) {
		t.Errorf("enable a deleted endpoint: %v", err)
	}
}

// TestPurgeTakesDeliveries: a purged run's deliveries go with it.
func TestPurgeTakesDeliveries(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	addEndpoint(t, db, "https://a.example/", WebhookRunFinished)
	r := waitingRun(t, db, "d1", []byte(`{}`))
	if _, err := db.RequestCancel(ctx, r.ID, engine.Event{Kind: engine.EventFailed, Termination: engine.TermCancelled}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n := len(deliveries(t, db)); n != 1 {
		t.Fatalf("%d deliveries before the purge", n)
	}
	if n, err := db.PurgeFinishedBefore(ctx, t0.Add(time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("purge = %d, %v", n, err)
	}
	if n := len(deliveries(t, db)); n != 0 {
		t.Errorf("%d deliveries after purging their run", n)
	}
}
