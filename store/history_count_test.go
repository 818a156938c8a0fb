package store

import (
	"context"
	"testing"
	"time"

	"countersign/engine"
)

func TestBoundedCounts(t *testing.T) {
	db := newTestDB(t)
	ctx := context.Background()
	now := time.Now()
	for i := 0; i < 7; i++ {
		run, err := db.CreateRun(ctx, engine.NewRun{Agent: "a", Model: "m", Prompt: "p", InitiatedBy: "ann"}, engine.Event{Kind: engine.EventPrompt}, now)
		if err != nil {
			t.Fatal(err)
		}
		if i < 4 {
			if _, err := db.AcquireRun(ctx, run.ID, "w", now, now.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			if err := db.SuspendRun(ctx, run.ID, "w", engine.Suspend{Suspension: engine.Suspension{State: []byte("{}"), Digest: "d"}, Event: engine.Event{Kind: engine.EventSuspended}, Now: now}); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name string
		got  func() (int, error)
		want int
	}{
		{"runs under the bound", func() (int, error) { return db.CountRunsUpTo(ctx, RunFilter{}, 100) }, 7},
		{"runs at the bound", func() (int, error) { return db.CountRunsUpTo(ctx, RunFilter{}, 5) }, 5},
		{"filtered runs", func() (int, error) {
			return db.CountRunsUpTo(ctx, RunFilter{Status: engine.StatusWaiting}, 100)
		}, 4},
		{"waiting under the bound", func() (int, error) { return db.CountWaitingUpTo(ctx, 100) }, 4},
		{"waiting at the bound", func() (int, error) { return db.CountWaitingUpTo(ctx, 3) }, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, err := tc.got()
			if err != nil || n != tc.want {
				t.Fatalf("count = %d, %v; want %d", n, err, tc.want)
			}
		})
	}
	if n, _ := db.CountRuns(ctx, RunFilter{}); n != 7 {
		t.Fatalf("exact count %d", n)
	}
}
