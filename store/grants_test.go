package store

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"countersign/engine"
)

// addGrant stores g as a claim would, and returns it with its id.
func addGrant(t *testing.T, db *DB, g engine.Grant) engine.Grant {
	t.Helper()
	err := db.inTx(context.Background(), func(ctx context.Context, tx writeTx) error {
		var err error
		g, err = insertGrant(context.Background(), tx, g)
		return err
	})
	if err != nil {
		t.Fatalf("add grant: %v", err)
	}
	return g
}

// runGrant and agentGrant are grants of tool given at t0 by olga.
func runGrant(agent, runID, tool string, until time.Time) engine.Grant {
	return engine.Grant{Agent: agent, RunID: runID, Tool: tool, Scope: engine.GrantRun, By: "olga", CreatedAt: t0, ExpiresAt: until}
}

func agentGrant(agent, tool string, at, until time.Time) engine.Grant {
	return engine.Grant{Agent: agent, Tool: tool, Scope: engine.GrantAgent, By: "olga", CreatedAt: at, ExpiresAt: until}
}

func grantIDs(gs []engine.Grant) []int64 {
	ids := make([]int64, len(gs))
	for i, g := range gs {
		ids[i] = g.ID
	}
	return ids
}

func TestActiveGrantByScope(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	run, other := newRun(t, db, t0), newRun(t, db, t0)
	g := addGrant(t, db, runGrant("editor", run.ID, "publish_page", t0.Add(30*24*time.Hour)))
	now := t0.Add(time.Minute)

	got, ok, err := db.ActiveGrant(ctx, "editor", run.ID, "publish_page", now)
	if err != nil || !ok || got != g {
		t.Fatalf("active grant in its run = %+v, %v, %v; want %+v", got, ok, err, g)
	}
	if got.Scope != engine.GrantRun || got.By != "olga" || !got.CreatedAt.Equal(t0) || got.RunID != run.ID {
		t.Errorf("grant read back = %+v", got)
	}
	for name, q := range map[string][3]string{
		"another run":   {"editor", other.ID, "publish_page"},
		"no run":        {"editor", "", "publish_page"},
		"another tool":  {"editor", run.ID, "delete_page"},
		"another agent": {"editor-4eyes", run.ID, "publish_page"},
	} {
		if got, ok, err := db.ActiveGrant(ctx, q[0], q[1], q[2], now); err != nil || ok {
			t.Errorf("%s: active grant = %+v, %v, %v; want none", name, got, ok, err)
		}
	}

	a := addGrant(t, db, agentGrant("editor", "delete_page", t0, t0.Add(time.Hour)))
	for _, runID := range []string{run.ID, other.ID, "01ANYRUN"} {
		if got, ok, err := db.ActiveGrant(ctx, "editor", runID, "delete_page", now); err != nil || !ok || got.ID != a.ID {
			t.Errorf("agent grant in run %s = %+v, %v, %v; want grant %d", runID, got, ok, err, a.ID)
		}
	}
	if _, ok, err := db.ActiveGrant(ctx, "researcher", run.ID, "delete_page", now); err != nil || ok {
		t.Errorf("agent grant for another agent: ok = %v, %v", ok, err)
	}
	if _, ok, err := db.ActiveGrant(ctx, "editor", run.ID, "update_page", now); err != nil || ok {
		t.Errorf("agent grant for another tool: ok = %v, %v", ok, err)
	}

	// Of several, the most recent.
	newer := addGrant(t, db, agentGrant("editor", "publish_page", t0.Add(time.Second), t0.Add(time.Hour)))
	if got, ok, err := db.ActiveGrant(ctx, "editor", run.ID, "publish_page", now); err != nil || !ok || got.ID != newer.ID {
		t.Errorf("with two grants = %+v, %v, %v; want the newer %d", got, ok, err, newer.ID)
	}
}

func TestActiveGrantExpires(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	end := t0.Add(time.Hour)
	g := addGrant(t, db, agentGrant("editor", "publish_page", t0, end))
	for _, tc := range []struct {
		now  time.Time
		want bool
	}{
		{t0, true},
		{end.Add(-time.Millisecond), true},
		{end, false},
		{end.Add(time.Minute), false},
	} {
		got, ok, err := db.ActiveGrant(ctx, "editor", "", "publish_page", tc.now)
		if err != nil || ok != tc.want || (ok && got.ID != g.ID) {
			t.Errorf("at %v: %+v, %v, %v; want active %v", tc.now.Sub(t0), got, ok, err, tc.want)
		}
	}
}

func TestRevokeGrant(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	run := newRun(t, db, t0)
	g := addGrant(t, db, runGrant("editor", run.ID, "publish_page", t0.Add(24*time.Hour)))
	at := t0.Add(10 * time.Minute)

	got, err := db.RevokeGrant(ctx, g.ID, "admin", at)
	if err != nil || got.ID != g.ID || got.RevokedBy != "admin" || !got.RevokedAt.Equal(at) || got.Active(at) {
		t.Fatalf("revoke = %+v, %v", got, err)
	}
	if _, ok, err := db.ActiveGrant(ctx, "editor", run.ID, "publish_page", at); err != nil || ok {
		t.Errorf("revoked grant still active: %v, %v", ok, err)
	}
	_, err = db.RevokeGrant(ctx, g.ID, "olga", at.Add(time.Minute))
	if !errors.Is(err, ErrGrantRevoked) {
		t.Errorf("second revoke: err = %v, want ErrGrantRevoked", err)
	}
	if _, err := db.RevokeGrant(ctx, g.ID+100, "admin", at); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown grant: err = %v, want ErrNotFound", err)
	}
	// The first revocation stands.
	all, err := db.Grants(ctx, GrantFilter{})
	if err != nil || len(all) != 1 || all[0].RevokedBy != "admin" || !all[0].RevokedAt.Equal(at) {
		t.Errorf("grants after revoking twice = %+v, %v", all, err)
	}
}

func TestGrantsFilters(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	run, other := newRun(t, db, t0), newRun(t, db, t0)
	now := t0.Add(2 * time.Hour)

	inRun := addGrant(t, db, runGrant("editor", run.ID, "publish_page", t0.Add(30*24*time.Hour)))
	inOther := addGrant(t, db, runGrant("editor", other.ID, "publish_page", t0.Add(30*24*time.Hour)))
	expired := addGrant(t, db, agentGrant("editor", "update_page", t0.Add(time.Minute), t0.Add(time.Hour)))
	revoked := addGrant(t, db, agentGrant("editor", "delete_page", t0.Add(2*time.Minute), t0.Add(3*time.Hour)))
	if _, err := db.RevokeGrant(ctx, revoked.ID, "admin", t0.Add(90*time.Minute)); err != nil {
		t.Fatal(err)
	}
	active := addGrant(t, db, agentGrant("editor", "create_page", t0.Add(3*time.Minute), t0.Add(3*time.Hour)))
	elsewhere := addGrant(t, db, agentGrant("researcher", "search_pages", t0.Add(4*time.Minute), t0.Add(3*time.Hour)))
	// Ended before the run began: not the run's.
	before := addGrant(t, db, agentGrant("editor", "publish_page", t0.Add(-2*time.Hour), t0.Add(-time.Hour)))

	for _, tc := range []struct {
		name string
		f    GrantFilter
		want []int64
	}{
		{"all, newest first", GrantFilter{}, []int64{elsewhere.ID, active.ID, revoked.ID, expired.ID, inOther.ID, inRun.ID, before.ID}},
		{"active", GrantFilter{ActiveAt: now}, []int64{elsewhere.ID, active.ID, inOther.ID, inRun.ID}},
		{"of an agent", GrantFilter{Agent: "researcher"}, []int64{elsewhere.ID}},
		{"of a run", GrantFilter{RunID: run.ID}, []int64{active.ID, revoked.ID, expired.ID, inRun.ID}},
		{"active in a run", GrantFilter{RunID: run.ID, ActiveAt: now}, []int64{active.ID, inRun.ID}},
		{"limited", GrantFilter{Limit: 2}, []int64{elsewhere.ID, active.ID}},
	} {
		got, err := db.Grants(ctx, tc.f)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if ids := grantIDs(got); !slices.Equal(ids, tc.want) {
			t.Errorf("%s: grants %v, want %v", tc.name, ids, tc.want)
		}
	}
}

func TestGrantsOfAnEndedRun(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	run := newRun(t, db, t0)
	if err := db.FinishRun(ctx, run.ID, "", engine.Finish{Status: engine.StatusCancelled,
		Event: engine.Event{Kind: engine.EventFailed}, Now: t0.Add(time.Minute)}); err != nil {
		t.Fatalf("finish: %v", err)
	}
	during := addGrant(t, db, agentGrant("editor", "publish_page", t0.Add(30*time.Second), t0.Add(time.Hour)))
	addGrant(t, db, agentGrant("editor", "publish_page", t0.Add(2*time.Minute), t0.Add(time.Hour)))
	got, err := db.Grants(ctx, GrantFilter{RunID: run.ID})
	if err != nil || !slices.Equal(grantIDs(got), []int64{during.ID}) {
		t.Errorf("grants of the ended run = %v, %v; want only %d, given while it ran", grantIDs(got), err, during.ID)
	}
}

func TestClaimRunStoresItsGrants(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	r := waitingRun(t, db, "d1", []byte(`{"version":1}`))
	at := t0.Add(time.Minute)
	c := decision("olga", engine.VerdictApprove, at, "d1")
	c.Grants = []engine.Grant{{Agent: r.Agent, RunID: r.ID, Tool: "publish_page", Scope: engine.GrantRun, By: "olga",
		CreatedAt: at, ExpiresAt: at.Add(30 * 24 * time.Hour)}}
	if _, err := db.ClaimRun(ctx, r.ID, c); err != nil {
		t.Fatalf("claim: %v", err)
	}
	g, ok, err := db.ActiveGrant(ctx, r.Agent, r.ID, "publish_page", at)
	if err != nil || !ok || g.By != "olga" || g.Scope != engine.GrantRun || !g.ExpiresAt.Equal(at.Add(30*24*time.Hour)) {
		t.Fatalf("grant of the claim = %+v, %v, %v", g, ok, err)
	}
	evs := allEvents(t, db, r.ID)
	if last := evs[len(evs)-1].Event; len(last.Grants) != 1 || last.Grants[0].ID != g.ID {
		t.Errorf("decision event grants = %+v, want grant %d", last.Grants, g.ID)
	}
}
