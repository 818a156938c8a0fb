package store

import (
	"context"
	"testing"
)

func TestSessionEpochMovesOnSignOutEverywhereAndDisable(t *testing.T) {
	db := newTestDB(t)
	ctx := context.Background()
	u, err := db.CreateUser(ctx, "erin", "correct horse", RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	if u.SessionEpoch != 0 {
		t.Fatalf("new user epoch %d", u.SessionEpoch)
	}
	if err := db.EndSessions(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	got, _ := db.UserByID(ctx, u.ID)
	if got.SessionEpoch != 1 {
		t.Fatalf("epoch after EndSessions %d", got.SessionEpoch)
	}
	if err := db.DisableUser(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	got, _ = db.UserByID(ctx, u.ID)
	if got.SessionEpoch != 2 || !got.Disabled() {
		t.Fatalf("after disable: %+v", got)
	}
	if err := db.EndSessions(ctx, 9999); err == nil {
		t.Fatal("unknown user accepted")
	}
}
