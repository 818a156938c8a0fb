package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"countersign/engine"
)

func TestIdempotencyKeyLifecycle(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	u, err := db.CreateUser(ctx, "olga", "olga-password", RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	other, err := db.CreateUser(ctx, "oscar", "oscar-password", RoleOperator)
	if err != nil {
		t.Fatal(err)
	}

	if id, err := db.ReserveIdempotencyKey(ctx, u.ID, "k1", "h1", t0); err != nil || id != "" {
		t.Fatalf("first reserve = %q, %v; want the reservation", id, err)
	}
	if _, err := db.ReserveIdempotencyKey(ctx, u.ID, "k1", "h1", t0.Add(time.Second)); !errors.Is(err, ErrKeyInFlight) {
		t.Fatalf("reserve while in flight: %v, want ErrKeyInFlight", err)
	}
	if _, err := db.ReserveIdempotencyKey(ctx, u.ID, "k1", "h2", t0.Add(time.Second)); !errors.Is(err, ErrKeyReused) {
		t.Fatalf("reserve with another body: %v, want ErrKeyReused", err)
	}
	// Keys are per user.
	if id, err := db.ReserveIdempotencyKey(ctx, other.ID, "k1", "h2", t0); err != nil || id != "" {
		t.Fatalf("another user's reserve = %q, %v; want the reservation", id, err)
	}

	run, err := db.CreateRun(ctx, engine.NewRun{Agent: "a", Model: "m", Prompt: "p"}, engine.Event{Kind: engine.EventPrompt}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CompleteIdempotencyKey(ctx, u.ID, "k1", run.ID); err != nil {
		t.Fatalf("complete: %v", err)
	}
	if err := db.CompleteIdempotencyKey(ctx, u.ID, "k1", "other"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("complete twice: %v, want ErrNotFound", err)
	}
	if id, err := db.ReserveIdempotencyKey(ctx, u.ID, "k1", "h1", t0.Add(time.Hour)); err != nil || id != run.ID {
		t.Fatalf("replay = %q, %v; want run %s", id, err, run.ID)
	}
	if _, err := db.ReserveIdempotencyKey(ctx, u.ID, "k1", "h2", t0.Add(time.Hour)); !errors.Is(err, ErrKeyReused) {
		t.Fatalf("replay with another body: %v, want ErrKeyReused", err)
	}
	// After the TTL the key is gone and may start another run.
	if id, err := db.ReserveIdempotencyKey(ctx, u.ID, "k1", "h2", t0.Add(IdempotencyTTL+time.Second)); err != nil || id != "" {
		t.Fatalf("reserve after the TTL = %q, %v; want a new reservation", id, err)
	}
}

func TestIdempotencyKeyReleaseAndAbandon(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	u, err := db.CreateUser(ctx, "olga", "olga-password", RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ReserveIdempotencyKey(ctx, u.ID, "k", "h", t0); err != nil {
		t.Fatal(err)
	}
	if err := db.ReleaseIdempotencyKey(ctx, u.ID, "k"); err != nil {
		t.Fatalf("release: %v", err)
	}
	// Released: free for another body.
	if id, err := db.ReserveIdempotencyKey(ctx, u.ID, "k", "h2", t0); err != nil || id != "" {
		t.Fatalf("reserve after release = %q, %v", id, err)
	}
	// A reservation left without a run for a minute is taken over.
	if id, err := db.ReserveIdempotencyKey(ctx, u.ID, "k", "h2", t0.Add(2*time.Minute)); err != nil || id != "" {
		t.Fatalf("take over an abandoned reservation = %q, %v", id, err)
	}
	if _, err := db.ReserveIdempotencyKey(ctx, u.ID, "k", "h2", t0.Add(2*time.Minute+time.Second)); !errors.Is(err, ErrKeyInFlight) {
		t.Fatalf("after the take-over: %v, want ErrKeyInFlight", err)
	}
	n, err := db.PurgeIdempotencyKeys(ctx, t0.Add(time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("purge = %d, %v; want 1", n, err)
	}
}

// TestIdempotencyKeyConcurrent reserves one key from many goroutines:
// exactly one gets the reservation.
func TestIdempotencyKeyConcurrent(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	u, err := db.CreateUser(ctx, "olga", "olga-password", RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, inFlight := 0, 0
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := db.ReserveIdempotencyKey(ctx, u.ID, "k", "h", t0)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && id == "":
				won++
			case errors.Is(err, ErrKeyInFlight):
				inFlight++
			default:
				t.Errorf("reserve: %q, %v", id, err)
			}
		}()
	}
	wg.Wait()
	if won != 1 || inFlight != n-1 {
		t.Fatalf("%d reservations and %d in flight, want 1 and %d", won, inFlight, n-1)
	}
}
