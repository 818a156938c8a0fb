package store

import (
	"context"
	"testing"
	"time"

	"countersign/engine"
)

func TestFinishWithoutTotalsKeepsTheStoredCounters(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	turn := engine.Event{Kind: engine.EventModelTurn, Usage: &engine.Usage{PromptTokens: 40, CompletionTokens: 2, TotalTokens: 42}}
	for _, ended := range []struct {
		name   string
		finish func(r engine.Run) error
	}{
		{"held run fails", func(r engine.Run) error {
			return db.FinishRun(ctx, r.ID, "w1", engine.Finish{Status: engine.StatusFailed, Termination: engine.TermToolError,
				Event: engine.Event{Kind: engine.EventFailed}, Now: t0})
		}},
		{"waiting run cancelled", func(r engine.Run) error {
			if err := db.SuspendRun(ctx, r.ID, "w1", engine.Suspend{Suspension: engine.Suspension{State: []byte("{}"), Digest: "d1"}, Event: engine.Event{Kind: engine.EventSuspended}, Now: t0}); err != nil {
				return err
			}
			_, err := db.RequestCancel(ctx, r.ID, engine.Event{Kind: engine.EventFailed, Termination: engine.TermCancelled}, t0)
			return err
		}},
	} {
		t.Run(ended.name, func(t *testing.T) {
			r := runningRun(t, db, "w1")
			if _, _, err := db.AppendEvent(ctx, r.ID, "w1", turn, t0.Add(lease)); err != nil {
				t.Fatal(err)
			}
			if err := ended.finish(r); err != nil {
				t.Fatal(err)
			}
			got := mustRun(t, db, r.ID)
			if got.Iterations != 1 || got.Usage != *turn.Usage {
				t.Fatalf("counters reset: %d, %+v", got.Iterations, got.Usage)
			}
			evs := allEvents(t, db, r.ID)
			last := evs[len(evs)-1].Event
			if last.Totals == nil || last.Totals.Iterations != 1 || last.Totals.Usage != *turn.Usage {
				t.Fatalf("the %s event records %+v", last.Kind, last.Totals)
			}
		})
	}
}

func TestNextLeaseExpiry(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	if _, ok, err := db.NextLeaseExpiry(ctx); err != nil || ok {
		t.Fatalf("no lease held: ok=%v err=%v", ok, err)
	}
	for i, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
		r := newRun(t, db, t0)
		if _, err := db.AcquireRun(ctx, r.ID, "w", t0, t0.Add(d)); err != nil {
			t.Fatal(i, err)
		}
	}
	// A waiting run holds no lease.
	waitingRun(t, db, "d1", []byte("{}"))
	got, ok, err := db.NextLeaseExpiry(ctx)
	if err != nil || !ok || !got.Equal(t0.Add(time.Second)) {
		t.Fatalf("next expiry %v ok=%v err=%v, want %v", got, ok, err, t0.Add(time.Second))
	}
}

func TestDecisionOnNamesTheTurn(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	r := waitingRun(t, db, "d1", []byte("{}"))
	if _, err := db.ClaimRun(ctx, r.ID, decision("bob", engine.VerdictApprove, t0, "d1")); err != nil {
		t.Fatal(err)
	}
	if err := db.SuspendRun(ctx, r.ID, "w2", engine.Suspend{Suspension: engine.Suspension{State: []byte("{}"), Digest: "d2"}, Event: engine.Event{Kind: engine.EventSuspended}, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ClaimRun(ctx, r.ID, decision("carol", engine.VerdictDeny, t0.Add(time.Minute), "d2")); err != nil {
		t.Fatal(err)
	}
	for digest, want := range map[string]string{"d1": "bob", "d2": "carol"} {
		ev, ok, err := db.DecisionOn(ctx, r.ID, digest)
		if err != nil || !ok || ev.By != want {
			t.Errorf("decision on %s: %+v ok=%v err=%v, want by %s", digest, ev, ok, err, want)
		}
	}
	if _, ok, err := db.DecisionOn(ctx, r.ID, "d3"); ok || err != nil {
		t.Errorf("undecided turn: ok=%v err=%v", ok, err)
	}
}
