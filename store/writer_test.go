package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"countersign/engine"
)

// Every write transaction commits at synchronous=FULL: the WAL is synced
// before the commit returns.
func TestWritesAreDurable(t *testing.T) {
	db := newTestDB(t)
	var level int
	err := db.inTx(context.Background(), func(ctx context.Context, tx writeTx) error {
		return tx.GetContext(ctx, &level, `PRAGMA synchronous`)
	})
	if err != nil || level != 2 {
		t.Fatalf("synchronous = %d, %v; want 2 (FULL)", level, err)
	}
}

// newCounter gives db a table to count writes in.
func newCounter(t *testing.T, db *DB) {
	t.Helper()
	if _, err := db.db.Exec(`CREATE TABLE gc_test (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
}

func countRows(t *testing.T, db *DB, where string) int {
	t.Helper()
	var n int
	if err := db.db.Get(&n, `SELECT count(*) FROM gc_test WHERE `+where); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestGroupCommit queues writes from many goroutines at once: they share
// commits, each writer is told its own outcome, a write that fails undoes
// only itself (its savepoint), and every write told done is there.
func TestGroupCommit(t *testing.T) {
	db := newTestDB(t)
	newCounter(t, db)
	before := db.Commits()
	const n = 400
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = db.inTx(context.Background(), func(ctx context.Context, tx writeTx) error {
				if _, err := tx.ExecContext(ctx, `INSERT INTO gc_test (n) VALUES (?)`, i); err != nil {
					return err
				}
				if i%10 == 0 {
					return fmt.Errorf("write %d fails after its insert", i)
				}
				return nil
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if (i%10 == 0) != (err != nil) {
			t.Fatalf("write %d: err %v", i, err)
		}
	}
	if got := countRows(t, db, `n % 10 != 0`); got != n-n/10 {
		t.Fatalf("%d writes told done are stored, want %d", got, n-n/10)
	}
	if got := countRows(t, db, `n % 10 = 0`); got != 0 {
		t.Fatalf("%d failed writes are stored, want none", got)
	}
	after := db.Commits()
	if commits := after - before; commits >= n {
		t.Fatalf("%d commits for %d concurrent writes: no write shared a commit", commits, n)
	}
}

// A lone write that fails is rolled back with its transaction, and the
// writer's connection goes back to the pool with no transaction open: a
// write made on it outside the group commit (as tokens make) commits on
// its own, and the next write of the writer begins afresh.
func TestFailedWriteLeavesNoTransactionOpen(t *testing.T) {
	db := newTestDB(t)
	newCounter(t, db)
	ctx := context.Background()
	boom := errors.New("boom")
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO gc_test (n) VALUES (1)`); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	var auto bool
	conn, err := db.w.Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Raw(func(dc any) error {
		auto = dc.(interface{ AutoCommit() bool }).AutoCommit()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if !auto {
		t.Fatal("the writer connection is still inside a transaction")
	}
	if _, err := db.w.ExecContext(ctx, `INSERT INTO gc_test (n) VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	err = db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO gc_test (n) VALUES (3)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := countRows(t, db, `n = 1`); got != 0 {
		t.Fatalf("the failed write's row is stored")
	}
	if got := countRows(t, db, `n IN (2, 3)`); got != 2 {
		t.Fatalf("%d of the 2 later writes are stored", got)
	}
}

// A write whose context ends before the writer takes it never runs.
func TestWriteCancelledBeforeItRuns(t *testing.T) {
	db := newTestDB(t)
	newCounter(t, db)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO gc_test (n) VALUES (1)`)
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if got := countRows(t, db, `1`); got != 0 {
		t.Fatalf("%d rows written by a cancelled write", got)
	}
}

// A write whose context is cancelled while it runs is finished and
// committed, not interrupted: an interrupted statement would roll back the
// whole batch it shares.
func TestWriteCancelledWhileItRuns(t *testing.T) {
	db := newTestDB(t)
	newCounter(t, db)
	ctx, cancel := context.WithCancel(context.Background())
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		cancel()
		_, err := tx.ExecContext(ctx, `INSERT INTO gc_test (n) VALUES (1)`)
		return err
	})
	if err != nil || countRows(t, db, `1`) != 1 {
		t.Fatalf("err = %v, rows %d; want the write committed", err, countRows(t, db, `1`))
	}
}

// After Close a write is refused, not lost or hung.
func TestWriteAfterClose(t *testing.T) {
	db := newTestDB(t)
	db.Close()
	err := db.inTx(context.Background(), func(ctx context.Context, tx writeTx) error { return nil })
	if !errors.Is(err, errClosed) {
		t.Fatalf("err = %v, want errClosed", err)
	}
}

// An event whose write is rolled back leaves no chain head behind: the
// event that takes its seq next links to the one before, and the chain
// stays intact. Without the rule, the next event would link to the hash of
// an event that was never committed.
func TestChainHeadOfARolledBackEvent(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	r := runningRun(t, db, "w1")
	turn := engine.Event{Kind: engine.EventModelTurn, Text: "first"}
	if _, _, err := db.AppendEvent(ctx, r.ID, "w1", turn, t0.Add(lease)); err != nil {
		t.Fatal(err)
	}
	lost := errors.New("the write fails after its event")
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		if _, _, err := db.appendEvents(ctx, tx, r.ID, "w1", []engine.Event{{Kind: engine.EventModelTurn, Text: "rolled back"}}, t0.Add(lease)); err != nil {
			return err
		}
		return lost
	})
	if !errors.Is(err, lost) {
		t.Fatalf("err = %v", err)
	}
	// Two commits: the third event's link comes from the head the second
	// left, which must not be the rolled-back event's.
	for _, text := range []string{"second", "third"} {
		if _, _, err := db.AppendEvent(ctx, r.ID, "w1", engine.Event{Kind: engine.EventModelTurn, Text: text}, t0.Add(lease)); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := db.VerifyRun(ctx, r.ID)
	if err != nil || !rep.Intact {
		t.Fatalf("chain after a rolled-back event: %+v, %v", rep, err)
	}
	evs, err := db.Events(ctx, r.ID, 0, 10)
	if err != nil || len(evs) != 4 || evs[2].Event.Text != "second" {
		t.Fatalf("events %d, %v", len(evs), err)
	}
}
