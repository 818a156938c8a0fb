package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCreateUser(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	u, err := db.CreateUser(ctx, "alice", "correct horse", RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	if u.ID == 0 || u.Name != "alice" || u.Role != RoleOperator || !u.CreatedAt.Equal(t0) || u.Disabled() {
		t.Fatalf("created = %+v", u)
	}
	tests := []struct {
		name, user, password, role string
		want                       error
	}{
		{"taken", "alice", "password1", RoleViewer, ErrUserExists},
		{"taken, other case", "ALICE", "password1", RoleViewer, ErrUserExists},
		{"empty name", "", "password1", RoleViewer, ErrInvalidUser},
		{"long name", strings.Repeat("a", 65), "password1", RoleViewer, ErrInvalidUser},
		{"space in name", "al ice", "password1", RoleViewer, ErrInvalidUser},
		{"short password", "bob", "1234567", RoleViewer, ErrInvalidUser},
		{"password too long for bcrypt", "bob", strings.Repeat("x", 73), RoleViewer, ErrInvalidUser},
		{"unknown role", "bob", "password1", "root", ErrInvalidUser},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := db.CreateUser(ctx, tt.user, tt.password, tt.role); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := db.CreateUser(ctx, "B.o_b-64", "password1", RoleViewer); err != nil {
		t.Errorf("name with . _ -: %v", err)
	}
	if n, err := db.CountUsers(ctx); err != nil || n != 2 {
		t.Errorf("count = %d, %v; want 2", n, err)
	}
}

func TestAuthenticate(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	alice, err := db.CreateUser(ctx, "alice", "correct horse", RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	carol, err := db.CreateUser(ctx, "carol", "battery staple", RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DisableUser(ctx, carol.ID); err != nil {
		t.Fatal(err)
	}

	if u, err := db.Authenticate(ctx, "alice", "correct horse"); err != nil || u != alice {
		t.Fatalf("good credentials = %+v, %v", u, err)
	}
	if u, err := db.Authenticate(ctx, "Alice", "correct horse"); err != nil || u.ID != alice.ID {
		t.Errorf("name in another case = %+v, %v", u, err)
	}
	for _, tt := range []struct{ name, user, password string }{
		{"wrong password", "alice", "correct horsE"},
		{"unknown user", "mallory", "correct horse"},
		{"disabled user", "carol", "battery staple"},
		{"empty", "", ""},
	} {
		if _, err := db.Authenticate(ctx, tt.user, tt.password); !errors.Is(err, ErrBadCredentials) {
			t.Errorf("%s: err = %v, want ErrBadCredentials", tt.name, err)
		}
	}
}

func TestManageUsers(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	bob, err := db.CreateUser(ctx, "bob", "password1", RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateUser(ctx, "alice", "password1", RoleAdmin); err != nil {
		t.Fatal(err)
	}

	if err := db.SetRole(ctx, bob.ID, RoleOperator); err != nil {
		t.Fatal(err)
	}
	if err := db.SetRole(ctx, bob.ID, "root"); !errors.Is(err, ErrInvalidUser) {
		t.Errorf("unknown role: err = %v", err)
	}
	if err := db.SetPassword(ctx, bob.ID, "new password"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Authenticate(ctx, "bob", "password1"); !errors.Is(err, ErrBadCredentials) {
		t.Errorf("old password still works: %v", err)
	}
	if _, err := db.Authenticate(ctx, "bob", "new password"); err != nil {
		t.Errorf("new password: %v", err)
	}

	later := t0.Add(time.Hour)
	db.now = func() time.Time { return later }
	if err := db.DisableUser(ctx, bob.ID); err != nil {
		t.Fatal(err)
	}
	db.now = func() time.Time { return later.Add(time.Hour) }
	if err := db.DisableUser(ctx, bob.ID); err != nil {
		t.Fatal(err)
	}
	got, err := db.UserByID(ctx, bob.ID)
	if err != nil || got.Role != RoleOperator || !got.DisabledAt.Equal(later) {
		t.Fatalf("bob = %+v, %v; want operator disabled at %v", got, err, later)
	}
	if err := db.EnableUser(ctx, bob.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := db.UserByName(ctx, "BOB"); err != nil || got.Disabled() {
		t.Errorf("bob after enable = %+v, %v", got, err)
	}

	users, err := db.Users(ctx)
	if err != nil || len(users) != 2 || users[0].Name != "alice" || users[1].Name != "bob" {
		t.Errorf("users = %+v, %v; want alice, bob", users, err)
	}

	for name, err := range map[string]error{
		"by id":    func() error { _, err := db.UserByID(ctx, 999); return err }(),
		"by name":  func() error { _, err := db.UserByName(ctx, "nobody"); return err }(),
		"set role": db.SetRole(ctx, 999, RoleViewer),
		"password": db.SetPassword(ctx, 999, "password1"),
		"disable":  db.DisableUser(ctx, 999),
		"enable":   db.EnableUser(ctx, 999),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s unknown user: err = %v, want ErrNotFound", name, err)
		}
	}
}
