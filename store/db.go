// Package store keeps countersign's state in SQLite through sqlx: durable
// runs and their events, users, the demo workspace of pages and settings. It
// implements engine.RunStore and the tools.Workspace of the built-in tools.
//
// Public methods own their transaction; lower-case helpers take the writeTx.
// Times are stored as INTEGER unix milliseconds in UTC and come back in UTC.
package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver
	"github.com/oklog/ulid/v2"
	"github.com/pressly/goose/v3"
	"golang.org/x/crypto/bcrypt"

	"countersign/migrations"
)

// Errors of the store. Methods wrap them with context; test with errors.Is.
var (
	// ErrNotFound is returned for a user or setting that does not exist.
	ErrNotFound = errors.New("not found")
	// ErrUserExists refuses to create a user whose name is taken.
	ErrUserExists = errors.New("user already exists")
	// ErrInvalidUser refuses a bad user name, password or role.
	ErrInvalidUser = errors.New("invalid user")
	// ErrBadCredentials refuses a sign-in: unknown user, wrong password or
	// disabled user, deliberately not told apart.
	ErrBadCredentials = errors.New("invalid name or password")
	// ErrBadCursor refuses a pagination cursor this store did not make.
	ErrBadCursor = errors.New("invalid page cursor")
)

// dsnParams are set on every pooled connection: WAL so readers never block
// the writer, a busy timeout so writers queue instead of failing, foreign
// keys for the event cascade, BEGIN IMMEDIATE so a transaction takes the
// write lock up front instead of failing to upgrade a read snapshot, and
// synchronous=FULL so that a commit is on disk (the WAL synced) before it
// returns: a decision, a claim or the fence before a side effect survives a
// power loss, not only a crash of the process. Group commit (writer.go)
// shares one sync among the writes queued meanwhile.
const dsnParams = "_journal_mode=WAL&_busy_timeout=10000&_foreign_keys=on&_synchronous=FULL&_txlock=immediate&_stmt_cache_size=128"

// DB is the countersign database. It is safe for concurrent use.
type DB struct {
	// db is the pool readers use; w is the one connection every write
	// transaction goes through. SQLite has one writer at a time anyway:
	// queueing writers in Go, in order, instead of in SQLite's busy handler
	// (which polls and is unfair) means a burst of writers never sees
	// "database is locked". The busy timeout still covers other processes.
	db         *sqlx.DB
	w          *sqlx.DB
	wr         *writer // group commit over w
	heads      chainHeads
	path       string
	now        func() time.Time
	bcryptCost int

	idMu    sync.Mutex
	entropy *ulid.MonotonicEntropy

	dummyOnce sync.Once
	dummyHash []byte // compared against for unknown users, to even out timing
}

// Path returns the database file's path as Open was given it.
func (db *DB) Path() string { return db.path }

// Option configures Open.
type Option func(*DB)

// WithNow sets the clock of the methods that take no time from their caller
// (users, pages). The default is time.Now.
func WithNow(now func() time.Time) Option {
	return func(db *DB) {
		if now != nil {
			db.now = now
		}
	}
}

// WithBcryptCost sets the bcrypt cost of new password hashes. The default is
// bcrypt.DefaultCost; tests lower it to bcrypt.MinCost to stay fast.
func WithBcryptCost(cost int) Option {
	return func(db *DB) { db.bcryptCost = cost }
}

// Open opens the SQLite database file at path, creating the file and its
// parent directory if needed, and applies any pending migration, then
// chains the events recorded before the audit chain existed (once; see
// backfillAudit). Every pooled connection gets the settings of dsnParams.
func Open(ctx context.Context, path string, opts ...Option) (*DB, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("open database: %w", err)
		}
	}
	sqldb, err := sqlx.Open("sqlite3", path+"?"+dsnParams)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	writer, err := sqlx.Open("sqlite3", path+"?"+dsnParams)
	if err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxIdleTime(0)
	writer.SetConnMaxLifetime(0)
	db := &DB{
		path:       path,
		db:         sqldb,
		w:          writer,
		now:        time.Now,
		bcryptCost: bcrypt.DefaultCost,
		entropy:    ulid.Monotonic(rand.Reader, 0),
	}
	for _, opt := range opts {
		opt(db)
	}
	if err := writer.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	db.wr = newWriter(writer)
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.backfillAudit(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Migrate applies every pending migration of package migrations, each in a
// transaction of its own. Open calls it; it is exported for the migrate
// subcommand and is a no-op on an up-to-date database.
func (db *DB) Migrate(ctx context.Context) error {
	p, err := db.migrator()
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// SchemaVersion returns the version of the last applied migration.
func (db *DB) SchemaVersion(ctx context.Context) (int64, error) {
	p, err := db.migrator()
	if err != nil {
		return 0, err
	}
	v, err := p.GetDBVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("schema version: %w", err)
	}
	return v, nil
}

// migrator returns a goose provider over the embedded migrations. The
// provider API keeps goose's package-level state out of the picture.
func (db *DB) migrator() (*goose.Provider, error) {
	p, err := goose.NewProvider(goose.DialectSQLite3, db.w.DB, migrations.FS,
		goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return p, nil
}

// Close closes the database.
func (db *DB) Close() error {
	if db.wr != nil {
		db.wr.close()
	}
	return errors.Join(db.w.Close(), db.db.Close())
}

// newID returns a new ULID stamped with t. Monotonic entropy keeps ids made
// in the same millisecond in order; it is not safe for concurrent use, hence
// the mutex.
func (db *DB) newID(t time.Time) (string, error) {
	db.idMu.Lock()
	defer db.idMu.Unlock()
	id, err := ulid.New(ulid.Timestamp(t), db.entropy)
	if err != nil {
		return "", fmt.Errorf("new id: %w", err)
	}
	return id.String(), nil
}

// inTx runs fn in a transaction (BEGIN IMMEDIATE, see dsnParams) of the
// group commit (writer.go): fn's writes commit when it returns nil and are
// undone when it returns an error, and inTx returns once they are on disk.
// fn must use the ctx it is given, which keeps ctx's values but not its
// cancellation, once it has started.
func (db *DB) inTx(ctx context.Context, fn func(ctx context.Context, tx writeTx) error) error {
	return db.wr.do(ctx, fn)
}

// Commits returns how many write transactions the store has committed, for
// the benchmarks and tests: with writes in flight, one commit holds
// several (group commit).
func (db *DB) Commits() int64 { return db.wr.commits() }

// millis converts t to the stored form.
func millis(t time.Time) int64 { return t.UnixMilli() }

// fromMillis converts a stored time back to UTC.
func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// nullMillis converts a stored time that may be NULL; NULL is the zero time.
func nullMillis(v *int64) time.Time {
	if v == nil {
		return time.Time{}
	}
	return fromMillis(*v)
}
