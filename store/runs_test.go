package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"countersign/engine"
)

const lease = time.Minute

func newRun(t *testing.T, db *DB, now time.Time) engine.Run {
	t.Helper()
	r, err := db.CreateRun(context.Background(),
		engine.NewRun{Agent: "editor", Model: "demo", Prompt: "fix the pricing page", InitiatedBy: "alice"},
		engine.Event{Kind: engine.EventPrompt, Text: "fix the pricing page"}, now)
	if err != nil {
		t.Fatalf("create run: %v", err)
	}
	return r
}

// runningRun returns a run acquired by owner at t0.
func runningRun(t *testing.T, db *DB, owner string) engine.Run {
	t.Helper()
	r := newRun(t, db, t0)
	r, err := db.AcquireRun(context.Background(), r.ID, owner, t0, t0.Add(lease))
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	return r
}

// waitingRun returns a run suspended on digest with state.
func waitingRun(t *testing.T, db *DB, digest string, state []byte) engine.Run {
	t.Helper()
	r := runningRun(t, db, "w1")
	ev := engine.Event{Kind: engine.EventSuspended, Digest: digest}
	if err := db.SuspendRun(context.Background(), r.ID, "w1", engine.Suspend{Suspension: engine.Suspension{State: state, Digest: digest}, Event: ev, Now: t0.Add(time.Second)}); err != nil {
		t.Fatalf("suspend: %v", err)
	}
	return mustRun(t, db, r.ID)
}

func mustRun(t *testing.T, db *DB, id string) engine.Run {
	t.Helper()
	r, err := db.Run(context.Background(), id)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return r
}

func allEvents(t *testing.T, db *DB, id string) []engine.RecordedEvent {
	t.Helper()
	evs, err := db.Events(context.Background(), id, 0, 5000)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	return evs
}

func kinds(evs []engine.RecordedEvent) string {
	ks := make([]string, len(evs))
	for i, e := range evs {
		ks[i] = string(e.Event.Kind)
	}
	return strings.Join(ks, ",")
}

func decision(by string, dec engine.Verdict, at time.Time, digest string) engine.Claim {
	return engine.Claim{
		Digest:     digest,
		Owner:      "w2",
		LeaseUntil: at.Add(lease),
		Event:      engine.Event{Kind: engine.EventDecision, At: at, By: by, Decision: dec, Digest: digest},
		Now:        at,
	}
}

func TestCreateRun(t *testing.T) {
	db := newTestDB(t)
	r := newRun(t, db, t0)
	if len(r.ID) != 26 || r.Status != engine.StatusQueued || r.Agent != "editor" || r.InitiatedBy != "alice" {
		t.Fatalf("created run = %+v", r)
	}
	if !r.CreatedAt.Equal(t0) || !r.UpdatedAt.Equal(t0) || !r.StartedAt.IsZero() || !r.FinishedAt.IsZero() || !r.LeaseExpiresAt.IsZero() {
		t.Errorf("times = created %v updated %v started %v finished %v lease %v", r.CreatedAt, r.UpdatedAt, r.StartedAt, r.FinishedAt, r.LeaseExpiresAt)
	}
	if got := mustRun(t, db, r.ID); !reflect.DeepEqual(got, r) {
		t.Errorf("Run = %+v, want %+v", got, r)
	}
	evs := allEvents(t, db, r.ID)
	if len(evs) != 1 || evs[0].Seq != 1 || evs[0].Event.Kind != engine.EventPrompt || evs[0].Event.Text != "fix the pricing page" || !evs[0].Event.At.Equal(t0) {
		t.Errorf("events = %+v", evs)
	}
	// Ids sort by creation.
	later := newRun(t, db, t0.Add(time.Millisecond))
	same := newRun(t, db, t0.Add(time.Millisecond))
	if !(r.ID < later.ID && later.ID < same.ID) {
		t.Errorf("ids out of order: %s %s %s", r.ID, later.ID, same.ID)
	}
	if _, err := db.Run(context.Background(), "nope"); !errors.Is(err, engine.ErrRunNotFound) {
		t.Errorf("unknown run: err = %v", err)
	}
}

func TestAcquireRun(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	r := newRun(t, db, t0)

	got, err := db.AcquireRun(ctx, r.ID, "w1", t0.Add(time.Second), t0.Add(time.Second+lease))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != engine.StatusRunning || got.ClaimedBy != "w1" || got.Attempts != 1 ||
		!got.LeaseExpiresAt.Equal(t0.Add(time.Second+lease)) || !got.StartedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("acquired = %+v", got)
	}

	// A live lease keeps others out.
	if _, err := db.AcquireRun(ctx, r.ID, "w2", t0.Add(2*time.Second), t0.Add(lease)); !errors.Is(err, engine.ErrLeaseLost) {
		t.Fatalf("acquire held run: err = %v, want ErrLeaseLost", err)
	}
	if exp, err := db.ExpiredRuns(ctx, t0.Add(time.Second+lease), 10); err != nil || len(exp) != 0 {
		t.Fatalf("expired at the lease's end = %v, %v; want none", exp, err)
	}

	// Once it expired, ExpiredRuns lists it and another worker takes it over.
	after := t0.Add(2 * lease)
	exp, err := db.ExpiredRuns(ctx, after, 10)
	if err != nil || len(exp) != 1 || exp[0].ID != r.ID {
		t.Fatalf("expired = %v, %v; want the run", exp, err)
	}
	got, err = db.AcquireRun(ctx, r.ID, "w2", after, after.Add(lease))
	if err != nil {
		t.Fatalf("take over: %v", err)
	}
	if got.ClaimedBy != "w2" || got.Attempts != 2 || !got.StartedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("taken over = %+v", got)
	}
	if _, _, err := db.AppendEvent(ctx, r.ID, "w1", engine.Event{Kind: engine.EventModelTurn}, after.Add(lease)); !errors.Is(err, engine.ErrLeaseLost) {
		t.Fatalf("append by the old owner: err = %v, want ErrLeaseLost", err)
	}

	tests := []struct {
		name string
		run  func() string
		want error
	}{
		{"unknown", func() string { return "nope" }, engine.ErrRunNotFound},
		{"waiting", func() string { return waitingRun(t, db, "d", []byte("{}")).ID }, engine.ErrLeaseLost},
		{"finished", func() string {
			r := newRun(t, db, t0)
			if err := db.FinishRun(ctx, r.ID, "", engine.Finish{Status: engine.StatusCancelled, Now: t0}); err != nil {
				t.Fatal(err)
			}
			return r.ID
		}, engine.ErrLeaseLost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := db.AcquireRun(ctx, tt.run(), "w3", after, after.Add(lease)); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestQueuedRunsOldestFirst(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	var want []string
	for i := range 5 {
		want = append(want, newRun(t, db, t0.Add(time.Duration(i)*time.Second)).ID)
	}
	if _, err := db.AcquireRun(ctx, want[1], "w1", t0, t0.Add(lease)); err != nil {
		t.Fatal(err)
	}
	want = slices.Delete(want, 1, 2)
	got, err := db.QueuedRuns(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, want) {
		t.Errorf("queued = %v, want %v", ids, want)
	}
	if got, _ := db.QueuedRuns(ctx, 2); len(got) != 2 {
		t.Errorf("limit 2 returned %d", len(got))
	}
}

func TestAppendEventConcurrentSeqsAreContiguous(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	r := runningRun(t, db, "w1")

	const goroutines, each = 20, 10
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each)
	seqs := make(chan int64, goroutines*each)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				ev := engine.Event{Kind: engine.EventModelTurn, Text: fmt.Sprintf("%d/%d", g, i)}
				seq, _, err := db.AppendEvent(ctx, r.ID, "w1", ev, t0.Add(lease))
				if err != nil {
					errs <- err
					return
				}
				seqs <- seq
			}
		}()
	}
	wg.Wait()
	close(errs)
	close(seqs)
	for err := range errs {
		t.Fatalf("append: %v", err)
	}
	var returned []int64
	for s := range seqs {
		returned = append(returned, s)
	}
	slices.Sort(returned)

	evs := allEvents(t, db, r.ID)
	if len(evs) != goroutines*each+1 {
		t.Fatalf("%d events, want %d", len(evs), goroutines*each+1)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: seqs must run 1..n without gaps", i, e.Seq)
		}
	}
	for i, s := range returned {
		if s != int64(i+2) {
			t.Fatalf("returned seqs %v: want 2..%d once each", returned, goroutines*each+1)
		}
	}
}

func TestAppendEventRenewsLeaseAndReportsCancel(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	r := runningRun(t, db, "w1")
	at := t0.Add(5 * time.Second)
	seq, cancel, err := db.AppendEvent(ctx, r.ID, "w1", engine.Event{Kind: engine.EventModelTurn, At: at}, at.Add(lease))
	if err != nil || seq != 2 || cancel {
		t.Fatalf("append = %d, %v, %v; want 2, false, nil", seq, cancel, err)
	}
	got := mustRun(t, db, r.ID)
	if !got.LeaseExpiresAt.Equal(at.Add(lease)) || !got.UpdatedAt.Equal(at) {
		t.Errorf("lease %v updated %v, want %v and %v", got.LeaseExpiresAt, got.UpdatedAt, at.Add(lease), at)
	}
	if cancelled, err := db.RequestCancel(ctx, r.ID, engine.Event{Kind: engine.EventFailed}, at); err != nil || cancelled {
		t.Fatalf("cancel running = %v, %v; want false, nil", cancelled, err)
	}
	if _, cancel, err = db.AppendEvent(ctx, r.ID, "w1", engine.Event{Kind: engine.EventModelTurn}, at.Add(lease)); err != nil || !cancel {
		t.Fatalf("append after cancel request: cancel = %v, err = %v; want true", cancel, err)
	}
}

func TestAppendEventLosers(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	finished := runningRun(t, db, "w1")
	if err := db.FinishRun(ctx, finished.ID, "w1", engine.Finish{Status: engine.StatusCompleted, Now: t0}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, id, owner string
		want            []error
	}{
		{"wrong owner", runningRun(t, db, "w1").ID, "w2", []error{engine.ErrLeaseLost}},
		{"queued", newRun(t, db, t0).ID, "w1", []error{engine.ErrLeaseLost}},
		{"waiting", waitingRun(t, db, "d", []byte("{}")).ID, "w1", []error{engine.ErrLeaseLost}},
		{"finished", finished.ID, "w1", []error{engine.ErrLeaseLost, engine.ErrRunTerminal}},
		{"unknown", "nope", "w1", []error{engine.ErrRunNotFound}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(allEventsOrNone(db, tt.id))
			_, _, err := db.AppendEvent(ctx, tt.id, tt.owner, engine.Event{Kind: engine.EventModelTurn}, t0.Add(lease))
			for _, want := range tt.want {
				if !errors.Is(err, want) {
					t.Errorf("err = %v, want %v", err, want)
				}
			}
			if after := len(allEventsOrNone(db, tt.id)); after != before {
				t.Errorf("events went from %d to %d", before, after)
			}
		})
	}
}

func allEventsOrNone(db *DB, id string) []engine.RecordedEvent {
	evs, _ := db.Events(context.Background(), id, 0, 5000)
	return evs
}

func TestSuspendAndClaim(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	state := []byte(`{"version":1}`)
	r := runningRun(t, db, "w1")

	if _, err := db.SuspendedState(ctx, r.ID); !errors.Is(err, engine.ErrNotWaiting) {
		t.Fatalf("state of a running run never suspended: err = %v, want ErrNotWaiting", err)
	}
	if err := db.SuspendRun(ctx, r.ID, "w2", engine.Suspend{Suspension: engine.Suspension{State: state, Digest: "d1"}, Event: engine.Event{Kind: engine.EventSuspended}, Now: t0}); !errors.Is(err, engine.ErrLeaseLost) {
		t.Fatalf("suspend by another owner: err = %v, want ErrLeaseLost", err)
	}
	if err := db.SuspendRun(ctx, r.ID, "w1", engine.Suspend{Suspension: engine.Suspension{State: state, Digest: "d1"}, Event: engine.Event{Kind: engine.EventSuspended}, Now: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	got := mustRun(t, db, r.ID)
	if got.Status != engine.StatusWaiting || got.PendingDigest != "d1" || got.ClaimedBy != "" || !got.LeaseExpiresAt.IsZero() {
		t.Fatalf("suspended run = %+v", got)
	}
	if s, err := db.SuspendedState(ctx, r.ID); err != nil || string(s.State) != string(state) {
		t.Fatalf("state = %q, %v", s, err)
	}
	if err := db.SuspendRun(ctx, r.ID, "w1", engine.Suspend{Suspension: engine.Suspension{State: state, Digest: "d1"}, Event: engine.Event{Kind: engine.EventSuspended}, Now: t0}); !errors.Is(err, engine.ErrLeaseLost) {
		t.Fatalf("suspend a waiting run: err = %v, want ErrLeaseLost", err)
	}

	at := t0.Add(time.Minute)
	s, err := db.ClaimRun(ctx, r.ID, decision("bob", engine.VerdictApprove, at, "d1"))
	if err != nil || string(s) != string(state) {
		t.Fatalf("claim = %q, %v", s, err)
	}
	got = mustRun(t, db, r.ID)
	if got.Status != engine.StatusRunning || got.ClaimedBy != "w2" || !got.LeaseExpiresAt.Equal(at.Add(lease)) || got.Attempts != 1 {
		t.Fatalf("claimed run = %+v", got)
	}
	if k := kinds(allEvents(t, db, r.ID)); k != "prompt,suspended,decision" {
		t.Errorf("events = %s", k)
	}
	ev, ok, err := db.LastDecision(ctx, r.ID)
	if err != nil || !ok || ev.By != "bob" || ev.Decision != engine.VerdictApprove || !ev.At.Equal(at) {
		t.Errorf("last decision = %+v, %v, %v", ev, ok, err)
	}
	// The new owner appends; the old one cannot.
	if seq, _, err := db.AppendEvent(ctx, r.ID, "w2", engine.Event{Kind: engine.EventToolStarted}, at.Add(lease)); err != nil || seq != 4 {
		t.Errorf("append by claimer = %d, %v", seq, err)
	}
}

func TestClaimRunConcurrentDecisionsOneWins(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	r := waitingRun(t, db, "d1", []byte("{}"))

	const n = 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	var wins []string
	var decided []*engine.DecidedError
	var others []error
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			by := fmt.Sprintf("user%d", i)
			dec := engine.VerdictApprove
			if i%2 == 1 {
				dec = engine.VerdictDeny
			}
			_, err := db.ClaimRun(ctx, r.ID, decision(by, dec, t0.Add(time.Duration(i)*time.Millisecond), "d1"))
			mu.Lock()
			defer mu.Unlock()
			var de *engine.DecidedError
			switch {
			case err == nil:
				wins = append(wins, by)
			case errors.As(err, &de):
				decided = append(decided, de)
			default:
				others = append(others, err)
			}
		}()
	}
	wg.Wait()
	if len(wins) != 1 || len(decided) != n-1 || len(others) != 0 {
		t.Fatalf("wins %v, decided %d, other errors %v; want 1, %d, none", wins, len(decided), others, n-1)
	}
	var decisions []engine.RecordedEvent
	for _, e := range allEvents(t, db, r.ID) {
		if e.Event.Kind == engine.EventDecision {
			decisions = append(decisions, e)
		}
	}
	if len(decisions) != 1 || decisions[0].Event.By != wins[0] {
		t.Fatalf("decision events = %+v; want one by %s", decisions, wins[0])
	}
	w := decisions[0].Event
	for _, de := range decided {
		if de.By != w.By || de.Dec != w.Decision || !de.At.Equal(w.At) {
			t.Fatalf("DecidedError = %+v; want by %s, %s at %v", de, w.By, w.Decision, w.At)
		}
	}
}

func TestClaimRunStaleDigestChangesNothing(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	r := waitingRun(t, db, "d2", []byte("{}"))
	before := allEvents(t, db, r.ID)

	_, err := db.ClaimRun(ctx, r.ID, decision("bob", engine.VerdictApprove, t0.Add(time.Hour), "d1"))
	if !errors.Is(err, engine.ErrStaleTurn) {
		t.Fatalf("err = %v, want ErrStaleTurn", err)
	}
	if got := mustRun(t, db, r.ID); !reflect.DeepEqual(got, r) {
		t.Errorf("run changed: %+v, was %+v", got, r)
	}
	if after := allEvents(t, db, r.ID); len(after) != len(before) {
		t.Errorf("events went from %d to %d", len(before), len(after))
	}
}

func TestClaimRunLosers(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)

	// A run decided, resumed, suspended on a new turn: a decision on the old
	// turn names the one that won it; a turn never decided is stale.
	moved := waitingRun(t, db, "d1", []byte("{}"))
	if _, err := db.ClaimRun(ctx, moved.ID, decision("bob", engine.VerdictApprove, t0, "d1")); err != nil {
		t.Fatal(err)
	}
	if err := db.SuspendRun(ctx, moved.ID, "w2", engine.Suspend{Suspension: engine.Suspension{State: []byte("{}"), Digest: "d2"}, Event: engine.Event{Kind: engine.EventSuspended}, Now: t0}); err != nil {
		t.Fatal(err)
	}
	// A run denied and ended at once: the decision still names its turn.
	ended := waitingRun(t, db, "d1", []byte("{}"))
	if _, err := db.ClaimRun(ctx, ended.ID, decision("bob", engine.VerdictDeny, t0, "d1")); err != nil {
		t.Fatal(err)
	}
	if err := db.FinishRun(ctx, ended.ID, "w2", engine.Finish{Status: engine.StatusCompleted, Now: t0}); err != nil {
		t.Fatal(err)
	}
	cancelled := waitingRun(t, db, "d1", []byte("{}"))
	if _, err := db.RequestCancel(ctx, cancelled.ID, engine.Event{Kind: engine.EventFailed}, t0); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, id, digest string
		want             error
	}{
		{"unknown", "nope", "d1", engine.ErrRunNotFound},
		{"queued", newRun(t, db, t0).ID, "d1", engine.ErrNotWaiting},
		{"running, never suspended", runningRun(t, db, "w1").ID, "d1", engine.ErrNotWaiting},
		{"waiting on a newer turn, never decided", moved.ID, "d0", engine.ErrStaleTurn},
		{"cancelled", cancelled.ID, "d1", engine.ErrRunTerminal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := db.ClaimRun(ctx, tt.id, decision("carol", engine.VerdictApprove, t0, tt.digest))
			if !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("running after a decision", func(t *testing.T) {
		r := waitingRun(t, db, "d1", []byte("{}"))
		if _, err := db.ClaimRun(ctx, r.ID, decision("bob", engine.VerdictApprove, t0, "d1")); err != nil {
			t.Fatal(err)
		}
		// The runtime asks with a digest no turn has to learn why.
		for _, digest := range []string{"d1", "-"} {
			_, err := db.ClaimRun(ctx, r.ID, decision("carol", engine.VerdictDeny, t0, digest))
			var de *engine.DecidedError
			if !errors.As(err, &de) || de.By != "bob" || de.Dec != engine.VerdictApprove || !de.At.Equal(t0) {
				t.Errorf("digest %s: err = %v, want DecidedError by bob", digest, err)
			}
		}
	})
	t.Run("waiting on a newer turn after a decision on this one", func(t *testing.T) {
		_, err := db.ClaimRun(ctx, moved.ID, decision("carol", engine.VerdictDeny, t0, "d1"))
		var de *engine.DecidedError
		if !errors.As(err, &de) || de.By != "bob" || de.Dec != engine.VerdictApprove {
			t.Errorf("err = %v, want DecidedError by bob", err)
		}
	})
	t.Run("ended after its decision", func(t *testing.T) {
		_, err := db.ClaimRun(ctx, ended.ID, decision("carol", engine.VerdictApprove, t0, "d1"))
		var de *engine.DecidedError
		if !errors.As(err, &de) || de.By != "bob" || de.Dec != engine.VerdictDeny {
			t.Errorf("err = %v, want DecidedError by bob", err)
		}
	})
}

func TestReleaseRun(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	r := waitingRun(t, db, "d1", []byte("state"))
	if _, err := db.ClaimRun(ctx, r.ID, decision("bob", engine.VerdictApprove, t0, "d1")); err != nil {
		t.Fatal(err)
	}
	if err := db.ReleaseRun(ctx, r.ID, "w1", engine.Event{Kind: engine.EventFailed}, t0); !errors.Is(err, engine.ErrLeaseLost) {
		t.Fatalf("release by another owner: err = %v, want ErrLeaseLost", err)
	}
	if err := db.ReleaseRun(ctx, r.ID, "w2", engine.Event{Kind: engine.EventFailed, Error: "shutting down"}, t0); err != nil {
		t.Fatal(err)
	}
	got := mustRun(t, db, r.ID)
	if got.Status != engine.StatusWaiting || got.PendingDigest != "d1" || got.ClaimedBy != "" || !got.LeaseExpiresAt.IsZero() {
		t.Fatalf("released run = %+v", got)
	}
	// The same turn can be decided again.
	if s, err := db.ClaimRun(ctx, r.ID, decision("carol", engine.VerdictApprove, t0, "d1")); err != nil || string(s) != "state" {
		t.Fatalf("claim after release = %q, %v", s, err)
	}
	if k := kinds(allEvents(t, db, r.ID)); k != "prompt,suspended,decision,failed,decision" {
		t.Errorf("events = %s", k)
	}

	never := runningRun(t, db, "w1")
	if err := db.ReleaseRun(ctx, never.ID, "w1", engine.Event{Kind: engine.EventFailed}, t0); !errors.Is(err, engine.ErrNotWaiting) {
		t.Errorf("release a run that never suspended: err = %v, want ErrNotWaiting", err)
	}
	if err := db.ReleaseRun(ctx, "nope", "w1", engine.Event{Kind: engine.EventFailed}, t0); !errors.Is(err, engine.ErrRunNotFound) {
		t.Errorf("release unknown: err = %v", err)
	}
}

func TestFinishRun(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	r := waitingRun(t, db, "d1", []byte("state"))
	if _, err := db.ClaimRun(ctx, r.ID, decision("bob", engine.VerdictApprove, t0, "d1")); err != nil {
		t.Fatal(err)
	}
	end := t0.Add(time.Hour)
	f := engine.Finish{
		Status:      engine.StatusCompleted,
		Termination: engine.TermCompleted,
		Totals:      &engine.Totals{Iterations: 3, Usage: engine.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}},
		Event:       engine.Event{Kind: engine.EventFinished, Text: "done"},
		Now:         end,
	}
	if err := db.FinishRun(ctx, r.ID, "w1", f); !errors.Is(err, engine.ErrLeaseLost) {
		t.Fatalf("finish by another owner: err = %v, want ErrLeaseLost", err)
	}
	if err := db.FinishRun(ctx, r.ID, "", f); !errors.Is(err, engine.ErrLeaseLost) {
		t.Fatalf("finish a held run without owner: err = %v, want ErrLeaseLost", err)
	}
	if err := db.FinishRun(ctx, r.ID, "w2", f); err != nil {
		t.Fatal(err)
	}
	got := mustRun(t, db, r.ID)
	want := engine.Run{
		Status: engine.StatusCompleted, Termination: engine.TermCompleted, Iterations: 3,
		Usage: f.Totals.Usage, FinishedAt: end, UpdatedAt: end,
	}
	if got.Status != want.Status || got.Termination != want.Termination || got.Iterations != want.Iterations ||
		got.Usage != want.Usage || !got.FinishedAt.Equal(end) || !got.UpdatedAt.Equal(end) ||
		got.PendingDigest != "" || got.ClaimedBy != "" || !got.LeaseExpiresAt.IsZero() {
		t.Fatalf("finished run = %+v", got)
	}
	if _, err := db.SuspendedState(ctx, r.ID); !errors.Is(err, engine.ErrRunTerminal) {
		t.Errorf("state after finish: err = %v, want ErrRunTerminal", err)
	}
	var state []byte
	if err := db.db.Get(&state, `SELECT suspended_state FROM agent_run WHERE id = ?`, r.ID); err != nil || state != nil {
		t.Errorf("suspended_state after finish = %q, %v; want NULL", state, err)
	}
	evs := allEvents(t, db, r.ID)
	if last := evs[len(evs)-1]; last.Event.Kind != engine.EventFinished || last.Event.Text != "done" || !last.Event.At.Equal(end) {
		t.Errorf("last event = %+v", last)
	}

	for _, owner := range []string{"w2", ""} {
		if err := db.FinishRun(ctx, r.ID, owner, f); !errors.Is(err, engine.ErrRunTerminal) {
			t.Errorf("finish again (owner %q): err = %v, want ErrRunTerminal", owner, err)
		}
	}
	if n := len(allEvents(t, db, r.ID)); n != len(evs) {
		t.Errorf("failed finishes appended events: %d, was %d", n, len(evs))
	}

	// A run no worker holds is finished without an owner.
	q := newRun(t, db, t0)
	if err := db.FinishRun(ctx, q.ID, "", engine.Finish{Status: engine.StatusFailed, Termination: engine.TermStateError, Error: "bad", Now: end}); err != nil {
		t.Fatal(err)
	}
	if got := mustRun(t, db, q.ID); got.Status != engine.StatusFailed || got.Error != "bad" || got.Termination != engine.TermStateError {
		t.Errorf("failed run = %+v", got)
	}
	if err := db.FinishRun(ctx, "nope", "", f); !errors.Is(err, engine.ErrRunNotFound) {
		t.Errorf("finish unknown: err = %v", err)
	}
	if err := db.FinishRun(ctx, newRun(t, db, t0).ID, "", engine.Finish{Status: engine.StatusRunning, Now: end}); err == nil {
		t.Error("finish with a non-terminal status succeeded")
	}
}

func TestRequestCancel(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	at := t0.Add(time.Hour)
	cancelEv := engine.Event{Kind: engine.EventFailed, Termination: engine.TermCancelled, By: "bob"}

	t.Run("queued and waiting end at once", func(t *testing.T) {
		for _, r := range []engine.Run{newRun(t, db, t0), waitingRun(t, db, "d1", []byte("state"))} {
			cancelled, err := db.RequestCancel(ctx, r.ID, cancelEv, at)
			if err != nil || !cancelled {
				t.Fatalf("cancel %s = %v, %v; want true", r.Status, cancelled, err)
			}
			got := mustRun(t, db, r.ID)
			if got.Status != engine.StatusCancelled || got.Termination != engine.TermCancelled ||
				!got.FinishedAt.Equal(at) || got.PendingDigest != "" {
				t.Errorf("cancelled run = %+v", got)
			}
			evs := allEvents(t, db, r.ID)
			if last := evs[len(evs)-1].Event; last.Kind != engine.EventFailed || last.By != "bob" {
				t.Errorf("last event = %+v", last)
			}
			if _, err := db.RequestCancel(ctx, r.ID, cancelEv, at); !errors.Is(err, engine.ErrRunTerminal) {
				t.Errorf("cancel again: err = %v, want ErrRunTerminal", err)
			}
		}
	})

	t.Run("running sets the flag, which survives suspension", func(t *testing.T) {
		r := runningRun(t, db, "w1")
		cancelled, err := db.RequestCancel(ctx, r.ID, cancelEv, at)
		if err != nil || cancelled {
			t.Fatalf("cancel running = %v, %v; want false", cancelled, err)
		}
		got := mustRun(t, db, r.ID)
		if got.Status != engine.StatusRunning || !got.CancelRequested {
			t.Fatalf("run after cancel request = %+v", got)
		}
		if n := len(allEvents(t, db, r.ID)); n != 1 {
			t.Errorf("a cancel request on a running run appended events: %d", n)
		}
		if err := db.SuspendRun(ctx, r.ID, "w1", engine.Suspend{Suspension: engine.Suspension{State: []byte("state"), Digest: "d1"}, Event: engine.Event{Kind: engine.EventSuspended}, Now: at}); err != nil {
			t.Fatal(err)
		}
		if got := mustRun(t, db, r.ID); !got.CancelRequested || got.Status != engine.StatusWaiting {
			t.Fatalf("suspended run = %+v", got)
		}
		if _, err := db.ClaimRun(ctx, r.ID, decision("bob", engine.VerdictApprove, at, "d1")); err != nil {
			t.Fatal(err)
		}
		if _, cancel, err := db.AppendEvent(ctx, r.ID, "w2", engine.Event{Kind: engine.EventToolStarted}, at.Add(lease)); err != nil || !cancel {
			t.Errorf("append after claim: cancel = %v, err = %v; want true", cancel, err)
		}
	})

	t.Run("unknown", func(t *testing.T) {
		if _, err := db.RequestCancel(ctx, "nope", cancelEv, at); !errors.Is(err, engine.ErrRunNotFound) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestEventsPaging(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	r := runningRun(t, db, "w1")
	for i := range 30 {
		if _, _, err := db.AppendEvent(ctx, r.ID, "w1", engine.Event{Kind: engine.EventModelTurn, Iteration: i + 1}, t0.Add(lease)); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := db.Events(ctx, r.ID, 10, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 5 || evs[0].Seq != 11 || evs[4].Seq != 15 || evs[0].Event.Iteration != 10 || evs[0].RunID != r.ID {
		t.Fatalf("events after 10, limit 5 = %+v", evs)
	}
	if evs, err := db.Events(ctx, r.ID, 31, 5); err != nil || len(evs) != 0 {
		t.Fatalf("events after the last = %v, %v; want none", evs, err)
	}
	if _, err := db.Events(ctx, "nope", 0, 5); !errors.Is(err, engine.ErrRunNotFound) {
		t.Fatalf("events of unknown run: err = %v", err)
	}

	// The read seeks the primary key to seq > after: its cost does not grow
	// with the events before.
	var plan []struct {
		ID     int    `db:"id"`
		Parent int    `db:"parent"`
		NotUse int    `db:"notused"`
		Detail string `db:"detail"`
	}
	if err := db.db.Select(&plan, `EXPLAIN QUERY PLAN SELECT seq, payload FROM agent_run_event
		WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`, r.ID, 10, 5); err != nil {
		t.Fatal(err)
	}
	if len(plan) != 1 || !strings.Contains(plan[0].Detail, "PRIMARY KEY (run_id=? AND seq>?)") {
		t.Errorf("query plan = %+v; want a primary key range search", plan)
	}
}

func TestRenewLease(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	r := runningRun(t, db, "w1")
	until := t0.Add(10 * time.Minute)
	if cancel, err := db.RenewLease(ctx, r.ID, "w1", until); err != nil || cancel {
		t.Fatalf("renew = %v, %v", cancel, err)
	}
	if got := mustRun(t, db, r.ID); !got.LeaseExpiresAt.Equal(until) {
		t.Fatalf("lease = %v, want %v", got.LeaseExpiresAt, until)
	}
	if _, err := db.RenewLease(ctx, r.ID, "w2", until); !errors.Is(err, engine.ErrLeaseLost) {
		t.Fatalf("renew by another owner: err = %v", err)
	}
	if _, err := db.RequestCancel(ctx, r.ID, engine.Event{Kind: engine.EventFailed}, t0); err != nil {
		t.Fatal(err)
	}
	// Renewed to now at shutdown: the next reaper sees it expired.
	if cancel, err := db.RenewLease(ctx, r.ID, "w1", t0); err != nil || !cancel {
		t.Fatalf("renew after cancel request = %v, %v; want true", cancel, err)
	}
	if exp, err := db.ExpiredRuns(ctx, t0.Add(time.Millisecond), 10); err != nil || len(exp) != 1 {
		t.Fatalf("expired = %v, %v", exp, err)
	}
	if err := db.FinishRun(ctx, r.ID, "w1", engine.Finish{Status: engine.StatusCancelled, Now: t0}); err != nil {
		t.Fatal(err)
	}
	_, err := db.RenewLease(ctx, r.ID, "w1", until)
	if !errors.Is(err, engine.ErrLeaseLost) || !errors.Is(err, engine.ErrRunTerminal) {
		t.Fatalf("renew after finish: err = %v, want ErrLeaseLost and ErrRunTerminal", err)
	}
	if _, err := db.RenewLease(ctx, "nope", "w1", until); !errors.Is(err, engine.ErrRunNotFound) {
		t.Fatalf("renew unknown: err = %v", err)
	}
}
