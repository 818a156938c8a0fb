package store

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"countersign/engine"
)

// synchronous reads the writer's synchronous level (1 NORMAL, 2 FULL).
func synchronous(t *testing.T, q sqlx.QueryerContext) int {
	t.Helper()
	var level int
	if err := sqlx.GetContext(context.Background(), q, &level, "PRAGMA synchronous"); err != nil {
		t.Fatal(err)
	}
	return level
}

// TestExternalFenceIsCommittedAtFull checks that the tool_started fence of a
// write outside the database commits at synchronous=FULL, which syncs the
// WAL before COMMIT returns, while every other event commits at NORMAL, and
// that the writer goes back to NORMAL after the fence.
func TestExternalFenceIsCommittedAtFull(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	r := runningRun(t, db, "w1")
	var levels []int
	durableProbe = func(tx *sqlx.Tx) { levels = append(levels, synchronous(t, tx)) }
	t.Cleanup(func() { durableProbe = nil })

	call := &engine.ToolCall{ID: "c1", Name: "write_file", Arguments: `{}`}
	at := t0.Add(time.Second)
	for _, ev := range []engine.Event{
		{Kind: engine.EventToolStarted, Call: call, Write: true}, // a write into the database
		{Kind: engine.EventToolStarted, Call: call, Write: true, External: true},
		{Kind: engine.EventToolFinished, Call: call, Write: true, External: true},
	} {
		if _, _, err := db.AppendEvent(ctx, r.ID, "w1", ev, at.Add(lease)); err != nil {
			t.Fatal(err)
		}
	}
	if len(levels) != 1 || levels[0] != 2 {
		t.Fatalf("durable commits at levels %v, want one, the external fence's, at 2 (FULL)", levels)
	}
	if got := synchronous(t, db.w); got != 1 {
		t.Fatalf("writer left at synchronous=%d, want 1 (NORMAL)", got)
	}
	evs, err := db.Events(ctx, r.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(evs); n != 4 || !evs[2].Event.External {
		t.Fatalf("events = %d, external fence stored = %v", n, n > 2 && evs[2].Event.External)
	}
}
