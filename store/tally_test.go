package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"
	"golang.org/x/crypto/bcrypt"

	"countersign/engine"
	"countersign/migrations"
)

// step is one thing that happens to a run the tally tests record: an event
// appended while the run is held, or a turn suspended and then decided by
// decider with verdict.
type step struct {
	ev      engine.Event
	decider string
	verdict engine.Verdict
}

func appended(ev engine.Event) step { return step{ev: ev} }

func decided(by string, v engine.Verdict) step { return step{decider: by, verdict: v} }

var pageCall = &engine.ToolCall{ID: "c1", Name: "publish_page", Arguments: `{"slug":"faq"}`}

// Events as the runtime records them.
var (
	writeStarted = engine.Event{Kind: engine.EventToolStarted, Call: pageCall, Write: true}
	writeOK      = engine.Event{Kind: engine.EventToolFinished, Call: pageCall, Write: true, Result: "ok", Outcome: engine.OutcomeOK}
	writeFailed  = engine.Event{Kind: engine.EventToolFinished, Call: pageCall, Write: true, IsError: true, Result: "page already exists", Outcome: engine.OutcomeToolError}
	// A failed write recorded before outcomes were stored: no outcome.
	writeFailedOld = engine.Event{Kind: engine.EventToolFinished, Call: pageCall, Write: true, IsError: true, Result: "boom"}
	// A read that failed, and a write with bad arguments: no failed write.
	readFailed    = engine.Event{Kind: engine.EventToolFinished, Call: pageCall, IsError: true, Result: "no such page", Outcome: engine.OutcomeToolError}
	writeBadArgs  = engine.Event{Kind: engine.EventToolFinished, Call: pageCall, Write: true, IsError: true, Outcome: engine.OutcomeBadArguments}
	callDenied    = engine.Event{Kind: engine.EventToolFinished, Call: pageCall, Write: true, IsError: true, Outcome: engine.OutcomeDenied}
	callRepeated  = engine.Event{Kind: engine.EventToolFinished, Call: pageCall, Write: true, IsError: true, Outcome: engine.OutcomeRepeatDenied}
	callExpired   = engine.Event{Kind: engine.EventToolFinished, Call: pageCall, Write: true, IsError: true, Outcome: engine.OutcomeExpired}
	writeWaived   = engine.Event{Kind: engine.EventToolStarted, Call: pageCall, Write: true, WaivedBy: "rule drafts"}
	modelTurn     = engine.Event{Kind: engine.EventModelTurn, Text: "thinking", Usage: &engine.Usage{TotalTokens: 10}}
	finishedEvent = engine.Event{Kind: engine.EventFinished, Text: "done", Termination: engine.TermCompleted}
)

// recordRun stores a run created at at by "ann" and plays steps on it
// through the store's API, as the runtime would; finish ends it with that
// status and termination unless finish is empty (the run is then left
// running, or waiting when the last step suspended it... never: a decision
// always follows a suspension here).
func recordRun(t *testing.T, db *DB, at time.Time, finish engine.Termination, steps ...step) engine.Run {
	t.Helper()
	ctx := context.Background()
	r, err := db.CreateRun(ctx, engine.NewRun{Agent: "editor", Model: "demo", Prompt: "tally", InitiatedBy: "ann"},
		engine.Event{Kind: engine.EventPrompt, Text: "tally"}, at)
	if err != nil {
		t.Fatal(err)
	}
	now := at
	tick := func() time.Time { now = now.Add(time.Second); return now }
	if _, err := db.AcquireRun(ctx, r.ID, "w", tick(), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		if s.decider == "" && s.verdict == "" {
			ev := s.ev
			ev.At = tick()
			if _, _, err := db.AppendEvent(ctx, r.ID, "w", ev, now.Add(time.Hour)); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			continue
		}
		digest := fmt.Sprintf("turn-%d", i)
		if err := db.SuspendRun(ctx, r.ID, "w", engine.Suspend{Suspension: engine.Suspension{State: []byte("{}"), Digest: digest},
			Event: engine.Event{Kind: engine.EventSuspended, Digest: digest}, Now: tick()}); err != nil {
			t.Fatalf("step %d: suspend: %v", i, err)
		}
		at := tick()
		if _, err := db.ClaimRun(ctx, r.ID, engine.Claim{Digest: digest, Owner: "w", LeaseUntil: at.Add(time.Hour), Now: at,
			Event: engine.Event{Kind: engine.EventDecision, At: at, By: s.decider, Decision: s.verdict, Digest: digest}}); err != nil {
			t.Fatalf("step %d: decide: %v", i, err)
		}
	}
	if finish != "" {
		status, ev := engine.StatusCompleted, finishedEvent
		if finish != engine.TermCompleted {
			status, ev = engine.StatusFailed, engine.Event{Kind: engine.EventFailed, Termination: finish, Error: string(finish)}
		}
		if err := db.FinishRun(ctx, r.ID, "w", engine.Finish{Status: status, Termination: finish, Now: tick(), Event: ev}); err != nil {
			t.Fatal(err)
		}
	}
	return mustRun(t, db, r.ID)
}

// replayed is the tally engine.Tally.Count makes of the run's stored events.
func replayed(t *testing.T, db *DB, id string) engine.Tally {
	t.Helper()
	var want engine.Tally
	for _, e := range allEvents(t, db, id) {
		want.Count(e.Event)
	}
	return want
}

func sameTally(a, b engine.Tally) bool {
	return a.Denied == b.Denied && a.FailedWrites == b.FailedWrites && a.Expired == b.Expired &&
		a.Waived == b.Waived && slices.Equal(a.DecidedBy, b.DecidedBy)
}

// tallyScripts are the runs the tally tests record, with the tally each
// must end with.
var tallyScripts = []struct {
	name   string
	finish engine.Termination
	steps  []step
	want   engine.Tally
}{
	{"clean", engine.TermCompleted, []step{appended(modelTurn), decided("alice", engine.VerdictApprove),
		appended(writeStarted), appended(writeOK)},
		engine.Tally{DecidedBy: []string{"alice"}}},
	{"two people and a repeat", engine.TermCompleted, []step{
		decided("bob", engine.VerdictApprove), appended(writeStarted), appended(writeFailed),
		decided("alice", engine.VerdictDeny), appended(callDenied),
		decided("bob", engine.VerdictApprove), appended(callRepeated),
		decided("alice", ""), appended(writeStarted), appended(writeOK)},
		engine.Tally{Denied: 2, FailedWrites: 1, DecidedBy: []string{"bob", "alice"}}},
	{"expired by the deadline", engine.TermCompleted, []step{
		decided(engine.ExpiredBy, engine.VerdictExpire), appended(callExpired), appended(callExpired)},
		engine.Tally{Expired: 2}},
	{"waived and odd errors", engine.TermCompleted, []step{
		appended(writeWaived), appended(writeOK), appended(writeWaived), appended(writeFailedOld),
		appended(readFailed), appended(writeBadArgs)},
		engine.Tally{Waived: 2, FailedWrites: 1}},
	{"interrupted", engine.TermInterrupted, []step{decided("carol", engine.VerdictApprove), appended(writeStarted)},
		engine.Tally{DecidedBy: []string{"carol"}}},
	{"nothing yet", "", nil, engine.Tally{}},
}

// TestTallyKeptAsEventsAreRecorded: every way the store inserts an event
// keeps the run's tally equal to what engine.Tally.Count makes of its
// events, and every read of a run returns it.
func TestTallyKeptAsEventsAreRecorded(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	for i, sc := range tallyScripts {
		t.Run(sc.name, func(t *testing.T) {
			r := recordRun(t, db, t0.Add(time.Duration(i)*time.Minute), sc.finish, sc.steps...)
			if !sameTally(r.Tally, sc.want) {
				t.Errorf("tally = %+v, want %+v", r.Tally, sc.want)
			}
			if rep := replayed(t, db, r.ID); !sameTally(r.Tally, rep) {
				t.Errorf("tally = %+v, but the events count %+v", r.Tally, rep)
			}
			page, err := db.ListRuns(ctx, RunFilter{Query: "tally", Limit: 200})
			if err != nil {
				t.Fatal(err)
			}
			for _, listed := range page.Runs {
				if listed.ID == r.ID && !reflect.DeepEqual(listed, r) {
					t.Errorf("listed run = %+v, want %+v", listed, r)
				}
			}
		})
	}
	// A cancelled waiting run keeps what it had.
	r := recordRun(t, db, t0.Add(time.Hour), "", decided("dave", engine.VerdictDeny), appended(callDenied))
	if err := db.SuspendRun(ctx, r.ID, "w", engine.Suspend{Suspension: engine.Suspension{State: []byte("{}"), Digest: "last"},
		Event: engine.Event{Kind: engine.EventSuspended}, Now: t0.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	waiting, err := db.WaitingRuns(ctx, 10)
	if err != nil || len(waiting) != 1 || !sameTally(waiting[0].Tally, engine.Tally{Denied: 1, DecidedBy: []string{"dave"}}) {
		t.Fatalf("waiting runs = %+v, %v", waiting, err)
	}
	if _, err := db.RequestCancel(ctx, r.ID, engine.Event{Kind: engine.EventFailed, Termination: engine.TermCancelled}, t0.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := mustRun(t, db, r.ID).Tally; !sameTally(got, engine.Tally{Denied: 1, DecidedBy: []string{"dave"}}) {
		t.Errorf("cancelled run's tally = %+v", got)
	}
}

// TestTallyDecidedByKeepsAnyName: decided_by is JSON, so a name with the
// characters a list would split on comes back whole.
func TestTallyDecidedByKeepsAnyName(t *testing.T) {
	db := newTestDB(t)
	odd := []string{`o"neil, jr`, `back\slash`, "[x]", "émile"}
	var steps []step
	for _, n := range append(odd, odd[0]) {
		steps = append(steps, decided(n, engine.VerdictApprove))
	}
	r := recordRun(t, db, t0, engine.TermCompleted, steps...)
	if !slices.Equal(r.Tally.DecidedBy, odd) {
		t.Errorf("decided by %q, want %q", r.Tally.DecidedBy, odd)
	}
}

// openAtVersion opens a database file migrated only up to version, without
// the store, as an older release left it.
func openAtVersion(t *testing.T, path string, version int64) *sqlx.DB {
	t.Helper()
	raw, err := sqlx.Open("sqlite3", path+"?"+dsnParams)
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, raw.DB, migrations.FS, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(context.Background(), version); err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestTallyBackfill: migration 4 counts the events of the runs recorded
// before it exactly as engine.Tally.Count does.
func TestTallyBackfill(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	raw := openAtVersion(t, path, 3)
	ids := make([]string, len(tallyScripts))
	for i, sc := range tallyScripts {
		id := fmt.Sprintf("01OLDRUN%018d", i)
		ids[i] = id
		at := t0.Add(time.Duration(i) * time.Minute)
		evs := []engine.Event{{Kind: engine.EventPrompt, Text: "old"}}
		for j, s := range sc.steps {
			if s.decider == "" && s.verdict == "" {
				evs = append(evs, s.ev)
				continue
			}
			digest := fmt.Sprintf("turn-%d", j)
			evs = append(evs, engine.Event{Kind: engine.EventSuspended, Digest: digest},
				engine.Event{Kind: engine.EventDecision, By: s.decider, Decision: s.verdict, Digest: digest})
		}
		if sc.finish != "" {
			evs = append(evs, engine.Event{Kind: engine.EventFinished, Termination: sc.finish})
		}
		status := "completed"
		if sc.finish == "" {
			status = "running"
		}
		if _, err := raw.Exec(`INSERT INTO agent_run (id, agent, model, prompt, status, initiated_by, last_seq, created_at, updated_at)
			VALUES (?, 'editor', 'demo', 'old', ?, 'ann', ?, ?, ?)`, id, status, len(evs), millis(at), millis(at)); err != nil {
			t.Fatal(err)
		}
		for j, ev := range evs {
			ev.At = at.Add(time.Duration(j) * time.Second)
			payload, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := raw.Exec(`INSERT INTO agent_run_event (run_id, seq, kind, payload, created_at) VALUES (?, ?, ?, ?, ?)`,
				id, j+1, ev.Kind, payload, millis(ev.At)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A run with no event at all (never seen in practice) keeps zeros.
	if _, err := raw.Exec(`INSERT INTO agent_run (id, agent, model, prompt, status, created_at, updated_at)
		VALUES ('01OLDRUNEMPTY', 'editor', 'demo', 'old', 'queued', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := Open(ctx, path, WithBcryptCost(bcrypt.MinCost))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := db.SchemaVersion(ctx); err != nil || v < 4 {
		t.Fatalf("schema version %d, %v", v, err)
	}
	for i, sc := range tallyScripts {
		got := mustRun(t, db, ids[i]).Tally
		if !sameTally(got, sc.want) {
			t.Errorf("%s: backfilled tally = %+v, want %+v", sc.name, got, sc.want)
		}
		if rep := replayed(t, db, ids[i]); !sameTally(got, rep) {
			t.Errorf("%s: backfilled tally = %+v, the events count %+v", sc.name, got, rep)
		}
	}
	if got := mustRun(t, db, "01OLDRUNEMPTY").Tally; !got.IsZero() {
		t.Errorf("run without events: tally %+v", got)
	}
	// And the columns keep counting after the migration.
	r := recordRun(t, db, t0.Add(time.Hour), engine.TermCompleted, decided("zoe", engine.VerdictDeny), appended(callDenied))
	if !sameTally(r.Tally, engine.Tally{Denied: 1, DecidedBy: []string{"zoe"}}) {
		t.Errorf("tally after migration = %+v", r.Tally)
	}
}

// outcomeFixture records one run per tally script, twice over, plus a
// cancelled run and a waiting one, and returns them.
func outcomeFixture(t *testing.T, db *DB) []engine.Run {
	t.Helper()
	var runs []engine.Run
	for round := range 2 {
		for i, sc := range tallyScripts {
			at := t0.Add(time.Duration(round*len(tallyScripts)+i) * time.Minute)
			runs = append(runs, recordRun(t, db, at, sc.finish, sc.steps...))
		}
	}
	c := newRun(t, db, t0.Add(time.Hour))
	if _, err := db.RequestCancel(context.Background(), c.ID, engine.Event{Kind: engine.EventFailed}, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	runs = append(runs, mustRun(t, db, c.ID))
	return runs
}

// TestListRunsByOutcome: each outcome and the decider filter select the
// right runs, on every page and in the bounded count; an unknown outcome is
// ErrBadFilter.
func TestListRunsByOutcome(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	runs := outcomeFixture(t, db)
	cases := []struct {
		f    RunFilter
		keep func(engine.Run) bool
		n    int
	}{
		{RunFilter{Outcome: OutcomeClean}, func(r engine.Run) bool {
			return r.Status == engine.StatusCompleted && r.Tally.Denied+r.Tally.FailedWrites+r.Tally.Expired == 0
		}, 2}, // "clean" only; "waived and odd errors" has a failed write
		{RunFilter{Outcome: OutcomeDenied}, func(r engine.Run) bool { return r.Tally.Denied > 0 }, 2},
		{RunFilter{Outcome: OutcomeWriteFailed}, func(r engine.Run) bool { return r.Tally.FailedWrites > 0 }, 4},
		{RunFilter{Outcome: OutcomeExpired}, func(r engine.Run) bool { return r.Tally.Expired > 0 }, 2},
		{RunFilter{Outcome: OutcomeWaived}, func(r engine.Run) bool { return r.Tally.Waived > 0 }, 2},
		{RunFilter{Outcome: OutcomeInterrupted}, func(r engine.Run) bool { return r.Termination == engine.TermInterrupted }, 2},
		{RunFilter{DecidedBy: "alice"}, func(r engine.Run) bool { return slices.Contains(r.Tally.DecidedBy, "alice") }, 4},
		{RunFilter{DecidedBy: "BOB"}, func(r engine.Run) bool { return slices.Contains(r.Tally.DecidedBy, "bob") }, 2},
		{RunFilter{DecidedBy: engine.ExpiredBy}, func(engine.Run) bool { return false }, 0},
		{RunFilter{DecidedBy: "ali"}, func(engine.Run) bool { return false }, 0},
		{RunFilter{Outcome: OutcomeDenied, DecidedBy: "alice", Status: engine.StatusCompleted},
			func(r engine.Run) bool { return r.Tally.Denied > 0 && slices.Contains(r.Tally.DecidedBy, "alice") }, 2},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%s", tc.f.Outcome, tc.f.DecidedBy), func(t *testing.T) {
			want := newestFirst(runs, tc.keep)
			if len(want) != tc.n {
				t.Fatalf("fixture: %d runs match, want %d", len(want), tc.n)
			}
			f := tc.f
			f.Limit = 1
			ids, _ := walk(t, db, f)
			if !slices.Equal(ids, want) {
				t.Errorf("walked %v, want %v", ids, want)
			}
			if n, err := db.CountRunsUpTo(ctx, tc.f, 100); err != nil || n != len(want) {
				t.Errorf("bounded count = %d, %v; want %d", n, err, len(want))
			}
			if n, err := db.CountRuns(ctx, tc.f); err != nil || n != len(want) {
				t.Errorf("count = %d, %v; want %d", n, err, len(want))
			}
		})
	}
	for _, bad := range []string{"exploded", "CLEAN", " clean"} {
		if _, err := db.ListRuns(ctx, RunFilter{Outcome: bad}); !errors.Is(err, ErrBadFilter) {
			t.Errorf("outcome %q: err = %v, want ErrBadFilter", bad, err)
		}
		if _, err := db.CountRunsUpTo(ctx, RunFilter{Outcome: bad}, 10); !errors.Is(err, ErrBadFilter) {
			t.Errorf("count, outcome %q: err = %v, want ErrBadFilter", bad, err)
		}
	}
}

// TestOutcomeFiltersUseTheirIndexes: a rare outcome's page reads its partial
// index in the history's order, neither the whole table nor a sort.
func TestOutcomeFiltersUseTheirIndexes(t *testing.T) {
	db := newTestDB(t)
	indexes := map[string]string{
		OutcomeDenied:      "agent_run_denied_created",
		OutcomeWriteFailed: "agent_run_failed_writes_created",
		OutcomeExpired:     "agent_run_expired_created",
		OutcomeWaived:      "agent_run_waived_created",
		OutcomeInterrupted: "agent_run_interrupted_created",
	}
	for outcome, index := range indexes {
		where, args, err := RunFilter{Outcome: outcome}.where(true)
		if err != nil {
			t.Fatal(err)
		}
		var plan []struct {
			ID     int    `db:"id"`
			Parent int    `db:"parent"`
			NotUse int    `db:"notused"`
			Detail string `db:"detail"`
		}
		q := `EXPLAIN QUERY PLAN SELECT ` + runColumns + ` FROM agent_run` + where + ` ORDER BY created_at DESC, id DESC LIMIT 51`
		if err := db.db.Select(&plan, q, args...); err != nil {
			t.Fatal(err)
		}
		var details []string
		for _, p := range plan {
			details = append(details, p.Detail)
		}
		all := strings.Join(details, "; ")
		if !strings.Contains(all, "USING INDEX "+index) || strings.Contains(all, "TEMP B-TREE") {
			t.Errorf("%s: plan %q; want a walk of %s", outcome, all, index)
		}
	}
}
