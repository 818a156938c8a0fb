package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// clockDB opens a test database whose clock the test moves.
func clockDB(t *testing.T) (*DB, func(time.Duration)) {
	t.Helper()
	var mu sync.Mutex
	now := t0
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "tokens.db"), WithBcryptCost(bcrypt.MinCost),
		WithNow(func() time.Time { mu.Lock(); defer mu.Unlock(); return now }))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db, func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
}

func TestTokenActsAsItsUserUntilRevoked(t *testing.T) {
	ctx := context.Background()
	db, advance := clockDB(t)
	ann, err := db.CreateUser(ctx, "ann", "password-1", RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	tok, secret, err := db.CreateToken(ctx, ann.ID, "  ci pipeline ")
	if err != nil {
		t.Fatalf("create token: %v", err)
	}
	if !strings.HasPrefix(secret, TokenPrefix) || len(secret) != len(TokenPrefix)+43 {
		t.Fatalf("secret %q: want %s and 43 base64url characters", secret, TokenPrefix)
	}
	if tok.Name != "ci pipeline" || tok.UserName != "ann" || !strings.HasPrefix(secret, tok.Hint) || len(tok.Hint) >= len(secret)/2 {
		t.Fatalf("token = %+v", tok)
	}

	// Only the hash is stored: the secret appears nowhere in the table.
	var stored int
	if err := db.db.Get(&stored, `SELECT count(*) FROM api_token WHERE secret_hash = ? OR hint = ? OR name = ?`, secret, secret, secret); err != nil || stored != 0 {
		t.Fatalf("rows holding the secret = %d, %v; want 0", stored, err)
	}

	u, err := db.UserByToken(ctx, secret)
	if err != nil || u.ID != ann.ID || u.Role != RoleOperator {
		t.Fatalf("UserByToken = %+v, %v; want ann the operator", u, err)
	}
	list, _ := db.Tokens(ctx, ann.ID)
	if len(list) != 1 || !list[0].LastUsedAt.Equal(t0) {
		t.Fatalf("tokens = %+v; want one, last used at t0", list)
	}

	// The last-used time is written at most once a minute.
	advance(30 * time.Second)
	if _, err := db.UserByToken(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if list, _ = db.Tokens(ctx, ann.ID); !list[0].LastUsedAt.Equal(t0) {
		t.Fatalf("last used = %v after 30 s; want t0 still", list[0].LastUsedAt)
	}
	advance(31 * time.Second)
	if _, err := db.UserByToken(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if list, _ = db.Tokens(ctx, ann.ID); !list[0].LastUsedAt.Equal(t0.Add(61 * time.Second)) {
		t.Fatalf("last used = %v; want t0+61s", list[0].LastUsedAt)
	}

	// A role change is seen at once; a disabled user's token stops working.
	if err := db.SetRole(ctx, ann.ID, RoleViewer); err != nil {
		t.Fatal(err)
	}
	if u, err := db.UserByToken(ctx, secret); err != nil || u.Role != RoleViewer {
		t.Fatalf("after the role change: %+v, %v; want viewer", u, err)
	}
	if err := db.DisableUser(ctx, ann.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UserByToken(ctx, secret); !errors.Is(err, ErrBadToken) {
		t.Fatalf("token of a disabled user: %v; want ErrBadToken", err)
	}
	if err := db.EnableUser(ctx, ann.ID); err != nil {
		t.Fatal(err)
	}

	if err := db.RevokeToken(ctx, tok.ID, ann.ID); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	if _, err := db.UserByToken(ctx, secret); !errors.Is(err, ErrBadToken) {
		t.Fatalf("revoked token: %v; want ErrBadToken", err)
	}
	if err := db.RevokeToken(ctx, tok.ID, ann.ID); !errors.Is(err, ErrTokenRevoked) {
		t.Fatalf("second revoke: %v; want ErrTokenRevoked", err)
	}
	if list, _ = db.Tokens(ctx, 0); len(list) != 1 || !list[0].Revoked() {
		t.Fatalf("all tokens = %+v; want the one, revoked", list)
	}
}

func TestTokenRefusals(t *testing.T) {
	ctx := context.Background()
	db, _ := clockDB(t)
	ann, _ := db.CreateUser(ctx, "ann", "password-1", RoleOperator)
	bob, _ := db.CreateUser(ctx, "bob", "password-1", RoleViewer)

	for _, name := range []string{"", "   ", strings.Repeat("x", MaxTokenName+1)} {
		if _, _, err := db.CreateToken(ctx, ann.ID, name); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("name %q: %v; want ErrInvalidToken", name, err)
		}
	}
	if _, _, err := db.CreateToken(ctx, 999, "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown user: %v; want ErrNotFound", err)
	}
	_ = db.DisableUser(ctx, bob.ID)
	if _, _, err := db.CreateToken(ctx, bob.ID, "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("disabled user: %v; want ErrNotFound", err)
	}

	tok, secret, err := db.CreateToken(ctx, ann.ID, "mine")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"", "cs_", secret + "x", secret[:len(secret)-1], strings.TrimPrefix(secret, TokenPrefix), strings.Repeat("cs_a", 100)} {
		if _, err := db.UserByToken(ctx, s); !errors.Is(err, ErrBadToken) {
			t.Errorf("UserByToken(%q) = %v; want ErrBadToken", s, err)
		}
	}
	// Another user may not revoke it; an admin (user 0) may.
	if err := db.RevokeToken(ctx, tok.ID, bob.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoke by another user: %v; want ErrNotFound", err)
	}
	if _, err := db.UserByToken(ctx, secret); err != nil {
		t.Fatalf("token after a refused revoke: %v", err)
	}
	if err := db.RevokeToken(ctx, 12345, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoke unknown: %v; want ErrNotFound", err)
	}
	if err := db.RevokeToken(ctx, tok.ID, 0); err != nil {
		t.Fatalf("revoke by admin: %v", err)
	}
}
