package store

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"countersign/engine"
	"countersign/migrations"
)

// t0 is the start of every test's clock.
var t0 = time.Date(2026, time.March, 1, 9, 0, 0, 0, time.UTC)

// newTestDB opens a migrated database file in t.TempDir, closed when the test
// ends. Its clock for users and pages is fixed at t0.
func newTestDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "data", "test.db"),
		WithNow(func() time.Time { return t0 }), WithBcryptCost(bcrypt.MinCost))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return db
}

func TestOpenMigratesAndReopens(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nested", "dir", "countersign.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	files, _ := fs.Glob(migrations.FS, "*.sql")
	v, err := db.SchemaVersion(ctx)
	if err != nil || v != int64(len(files)) || v < 2 {
		t.Fatalf("schema version = %d, %v; want %d, the last migration", v, err, len(files))
	}
	run, err := db.CreateRun(ctx, engine.NewRun{Agent: "a", Model: "m", Prompt: "p"}, engine.Event{Kind: engine.EventPrompt}, t0)
	if err != nil {
		t.Fatalf("create run: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	db, err = Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("migrate again: %v", err)
	}
	if v2, err := db.SchemaVersion(ctx); err != nil || v2 != v {
		t.Fatalf("schema version after reopen = %d, %v; want %d", v2, err, v)
	}
	if _, err := db.Run(ctx, run.ID); err != nil {
		t.Fatalf("run after reopen: %v", err)
	}
}

func TestConnectionSettings(t *testing.T) {
	db := newTestDB(t)
	ctx := context.Background()
	// Every pooled connection must carry the settings, so ask several at once.
	conns := make([]interface{ Close() error }, 0, 3)
	for i := 0; i < 3; i++ {
		c, err := db.db.Connx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		var mode string
		var fk, busy int
		if err := c.GetContext(ctx, &mode, `PRAGMA journal_mode`); err != nil {
			t.Fatal(err)
		}
		if err := c.GetContext(ctx, &fk, `PRAGMA foreign_keys`); err != nil {
			t.Fatal(err)
		}
		if err := c.GetContext(ctx, &busy, `PRAGMA busy_timeout`); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" || fk != 1 || busy != 10000 {
			t.Errorf("conn %d: journal_mode=%s foreign_keys=%d busy_timeout=%d", i, mode, fk, busy)
		}
	}
	for _, c := range conns {
		c.Close()
	}
}

func TestSettings(t *testing.T) {
	db := newTestDB(t)
	ctx := context.Background()

	if _, err := db.Setting(ctx, "missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing setting: err = %v, want ErrNotFound", err)
	}
	if err := db.SetSetting(ctx, "k", "one"); err != nil {
		t.Fatal(err)
	}
	if err := db.SetSetting(ctx, "k", "two"); err != nil {
		t.Fatal(err)
	}
	if v, err := db.Setting(ctx, "k"); err != nil || v != "two" {
		t.Fatalf("setting = %q, %v; want two", v, err)
	}

	gens := 0
	gen := func() (string, error) {
		gens++
		return "generated-" + string(rune('0'+gens)), nil
	}
	first, err := db.EnsureSetting(ctx, "session_key", gen)
	if err != nil || first != "generated-1" {
		t.Fatalf("ensure = %q, %v; want generated-1", first, err)
	}
	again, err := db.EnsureSetting(ctx, "session_key", gen)
	if err != nil || again != first {
		t.Fatalf("ensure again = %q, %v; want the first value %q", again, err, first)
	}
	if gens != 1 {
		t.Errorf("gen ran %d times, want 1", gens)
	}
	boom := errors.New("boom")
	if _, err := db.EnsureSetting(ctx, "other", func() (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Errorf("ensure with failing gen: err = %v, want boom", err)
	}
}
