package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"countersign/engine"
)

// historyFixture stores 120 runs, three per second, and returns them.
// Every fourth is cancelled; agents alternate; initiators cycle through
// alice, bob and carol; run 7 and run 70 have prompts with LIKE wildcards.
func historyFixture(t *testing.T, db *DB) []engine.Run {
	t.Helper()
	ctx := context.Background()
	users := []string{"alice", "bob", "carol"}
	runs := make([]engine.Run, 0, 120)
	for i := range 120 {
		prompt := fmt.Sprintf("prompt number %d", i)
		switch i {
		case 7:
			prompt = "give 50% off"
		case 70:
			prompt = "rename snake_case page"
		}
		agent := "editor"
		if i%2 == 1 {
			agent = "reviewer"
		}
		now := t0.Add(time.Duration(i/3) * time.Second)
		r, err := db.CreateRun(ctx, engine.NewRun{Agent: agent, Model: "demo", Prompt: prompt, InitiatedBy: users[i%3]},
			engine.Event{Kind: engine.EventPrompt, Text: prompt}, now)
		if err != nil {
			t.Fatal(err)
		}
		if i%4 == 0 {
			if _, err := db.RequestCancel(ctx, r.ID, engine.Event{Kind: engine.EventFailed}, now); err != nil {
				t.Fatal(err)
			}
			r.Status = engine.StatusCancelled
		}
		runs = append(runs, r)
	}
	return runs
}

// newestFirst returns the ids of the runs keep selects, as ListRuns orders
// them.
func newestFirst(runs []engine.Run, keep func(engine.Run) bool) []string {
	var sel []engine.Run
	for _, r := range runs {
		if keep(r) {
			sel = append(sel, r)
		}
	}
	slices.SortFunc(sel, func(a, b engine.Run) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	ids := make([]string, len(sel))
	for i, r := range sel {
		ids[i] = r.ID
	}
	return ids
}

// walk follows every page of f and returns the ids in order and the page sizes.
func walk(t *testing.T, db *DB, f RunFilter) (ids []string, sizes []int) {
	t.Helper()
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("pagination does not end")
		}
		page, err := db.ListRuns(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(page.Runs))
		for _, r := range page.Runs {
			ids = append(ids, r.ID)
		}
		if page.Next == "" {
			return ids, sizes
		}
		f.Before = page.Next
	}
}

func TestListRunsWalksEveryPageOnce(t *testing.T) {
	db := newTestDB(t)
	runs := historyFixture(t, db)
	ids, sizes := walk(t, db, RunFilter{Limit: 50})
	if !slices.Equal(sizes, []int{50, 50, 20}) {
		t.Errorf("page sizes = %v, want [50 50 20]", sizes)
	}
	want := newestFirst(runs, func(engine.Run) bool { return true })
	if !slices.Equal(ids, want) {
		t.Fatalf("walked ids differ from all runs newest first:\n got %v\nwant %v", ids, want)
	}
	// Runs created after the walk began do not shift the pages that follow.
	first, err := db.ListRuns(context.Background(), RunFilter{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	newRun(t, db, t0.Add(time.Hour))
	second, err := db.ListRuns(context.Background(), RunFilter{Limit: 50, Before: first.Next})
	if err != nil {
		t.Fatal(err)
	}
	if second.Runs[0].ID != want[50] {
		t.Errorf("second page starts at %s, want %s", second.Runs[0].ID, want[50])
	}
}

func TestListRunsFilters(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	runs := historyFixture(t, db)
	from, to := t0.Add(10*time.Second), t0.Add(20*time.Second)
	tests := []struct {
		name string
		f    RunFilter
		keep func(engine.Run) bool
	}{
		{"all", RunFilter{}, func(engine.Run) bool { return true }},
		{"status", RunFilter{Status: engine.StatusCancelled}, func(r engine.Run) bool { return r.Status == engine.StatusCancelled }},
		{"agent", RunFilter{Agent: "reviewer"}, func(r engine.Run) bool { return r.Agent == "reviewer" }},
		{"initiated by", RunFilter{InitiatedBy: "bob"}, func(r engine.Run) bool { return r.InitiatedBy == "bob" }},
		{"text ignores case", RunFilter{Query: "NUMBER 1"}, func(r engine.Run) bool { return strings.Contains(r.Prompt, "number 1") }},
		{"percent is literal", RunFilter{Query: "50%"}, func(r engine.Run) bool { return strings.Contains(r.Prompt, "50%") }},
		{"underscore is literal", RunFilter{Query: "_"}, func(r engine.Run) bool { return strings.Contains(r.Prompt, "_") }},
		{"backslash is literal", RunFilter{Query: `\`}, func(engine.Run) bool { return false }},
		{"created range", RunFilter{From: from, To: to}, func(r engine.Run) bool {
			return !r.CreatedAt.Before(from) && r.CreatedAt.Before(to)
		}},
		{"combined", RunFilter{Status: engine.StatusQueued, Agent: "editor", InitiatedBy: "carol"}, func(r engine.Run) bool {
			return r.Status == engine.StatusQueued && r.Agent == "editor" && r.InitiatedBy == "carol"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.f
			f.Limit = 7
			ids, _ := walk(t, db, f)
			want := newestFirst(runs, tt.keep)
			if !slices.Equal(ids, want) {
				t.Errorf("ids = %v\nwant %v", ids, want)
			}
			n, err := db.CountRuns(ctx, tt.f)
			if err != nil || n != len(want) {
				t.Errorf("count = %d, %v; want %d", n, err, len(want))
			}
		})
	}
}

func TestListRunsLimitsAndCursor(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	historyFixture(t, db)
	for _, tt := range []struct{ limit, want int }{{0, DefaultRunLimit}, {-3, DefaultRunLimit}, {1000, 120}, {5, 5}} {
		page, err := db.ListRuns(ctx, RunFilter{Limit: tt.limit})
		if err != nil || len(page.Runs) != tt.want {
			t.Errorf("limit %d: %d runs, %v; want %d", tt.limit, len(page.Runs), err, tt.want)
		}
	}
	for _, bad := range []string{"%%%", "bm90LWEtY3Vyc29y", encodeCursor(1, "")} {
		if _, err := db.ListRuns(ctx, RunFilter{Before: bad}); !errors.Is(err, ErrBadCursor) {
			t.Errorf("cursor %q: err = %v, want ErrBadCursor", bad, err)
		}
	}
}

func TestCountsAndInbox(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	var waiting []string
	for i := range 3 {
		r := newRun(t, db, t0.Add(time.Duration(3-i)*time.Minute)) // created newest first
		if _, err := db.AcquireRun(ctx, r.ID, "w1", t0, t0.Add(lease)); err != nil {
			t.Fatal(err)
		}
		if err := db.SuspendRun(ctx, r.ID, "w1", engine.Suspend{Suspension: engine.Suspension{State: []byte("{}"), Digest: "d"}, Event: engine.Event{Kind: engine.EventSuspended}, Now: t0}); err != nil {
			t.Fatal(err)
		}
		waiting = append([]string{r.ID}, waiting...)
	}
	runningRun(t, db, "w1")
	newRun(t, db, t0)
	done := runningRun(t, db, "w1")
	if err := db.FinishRun(ctx, done.ID, "w1", engine.Finish{Status: engine.StatusCompleted, Now: t0}); err != nil {
		t.Fatal(err)
	}

	counts, err := db.CountByStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[engine.Status]int{
		engine.StatusQueued: 1, engine.StatusRunning: 1, engine.StatusWaiting: 3,
		engine.StatusCompleted: 1, engine.StatusFailed: 0, engine.StatusCancelled: 0,
	}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("counts = %v, want %v", counts, want)
	}
	if n, err := db.CountWaiting(ctx); err != nil || n != 3 {
		t.Errorf("count waiting = %d, %v", n, err)
	}
	inbox, err := db.WaitingRuns(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range inbox {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, waiting) {
		t.Errorf("inbox = %v, want oldest first %v", ids, waiting)
	}
	if _, ok, err := db.LastDecision(ctx, waiting[0]); ok || err != nil {
		t.Errorf("last decision of an undecided run = %v, %v", ok, err)
	}
	if _, _, err := db.LastDecision(ctx, "nope"); !errors.Is(err, engine.ErrRunNotFound) {
		t.Errorf("last decision of unknown run: err = %v", err)
	}
}

func TestPurgeFinishedBefore(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	finish := func(at time.Time) string {
		r := newRun(t, db, t0)
		if err := db.FinishRun(ctx, r.ID, "", engine.Finish{Status: engine.StatusCancelled, Event: engine.Event{Kind: engine.EventFailed}, Now: at}); err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	var old []string
	for range 5 {
		old = append(old, finish(t0))
	}
	recent := []string{finish(t0.Add(48 * time.Hour)), finish(t0.Add(48 * time.Hour))}
	queued := newRun(t, db, t0).ID
	waiting := waitingRun(t, db, "d", []byte("{}")).ID

	n, err := db.PurgeFinishedBefore(ctx, t0.Add(24*time.Hour), 2)
	if err != nil || n != 5 {
		t.Fatalf("purged %d, %v; want 5", n, err)
	}
	for _, id := range old {
		if _, err := db.Run(ctx, id); !errors.Is(err, engine.ErrRunNotFound) {
			t.Errorf("old run %s: err = %v, want gone", id, err)
		}
		var events int
		if err := db.db.Get(&events, `SELECT count(*) FROM agent_run_event WHERE run_id = ?`, id); err != nil || events != 0 {
			t.Errorf("old run %s keeps %d events, %v", id, events, err)
		}
	}
	for _, id := range append(recent, queued, waiting) {
		if _, err := db.Run(ctx, id); err != nil {
			t.Errorf("kept run %s: %v", id, err)
		}
		if len(allEvents(t, db, id)) == 0 {
			t.Errorf("kept run %s lost its events", id)
		}
	}
	if n, err := db.PurgeFinishedBefore(ctx, t0.Add(24*time.Hour), 0); err != nil || n != 0 {
		t.Errorf("second purge = %d, %v; want 0", n, err)
	}

	// More runs than the first delete takes (16): the batch changes from
	// one delete to the next, and the purge still ends only once none is
	// left.
	for range 50 {
		old = append(old, finish(t0))
	}
	if n, err := db.PurgeFinishedBefore(ctx, t0.Add(24*time.Hour), 0); err != nil || n != 50 {
		t.Fatalf("purge of 50 = %d, %v; want 50", n, err)
	}
	var left int
	if err := db.db.Get(&left, `SELECT count(*) FROM agent_run WHERE finished_at < ?`, millis(t0.Add(24*time.Hour))); err != nil || left != 0 {
		t.Errorf("%d old runs left, %v", left, err)
	}
}

func TestNextPurgeBatchAimsAtTheTarget(t *testing.T) {
	target := purgeStatementTarget
	for _, c := range []struct {
		name            string
		batch, maxBatch int
		took            time.Duration
		want            int
	}{
		{"fast deletes double the batch", 16, 500, target / 10, 32},
		{"no faster than doubling", 100, 500, time.Nanosecond, 200},
		{"never above the maximum", 400, 500, target / 10, 500},
		{"on target it stays", 100, 500, target, 100},
		{"a slow delete shrinks it in proportion", 100, 500, 4 * target, 25},
		{"never below one run", 10, 500, time.Second, 1},
		{"an unmeasured delete doubles", 8, 500, 0, 16},
	} {
		if got := nextPurgeBatch(c.batch, c.maxBatch, c.took); got != c.want {
			t.Errorf("%s: nextPurgeBatch(%d, %d, %s) = %d, want %d", c.name, c.batch, c.maxBatch, c.took, got, c.want)
		}
	}
}
