package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"
)

// Roles of a user. A viewer reads; an operator also starts, approves, denies
// and cancels runs; an admin also manages users and purges.
const (
	RoleAdmin    = "admin"
	RoleOperator = "operator"
	RoleViewer   = "viewer"
)

// Roles lists the roles from the least to the most allowed.
func Roles() []string { return []string{RoleViewer, RoleOperator, RoleAdmin} }

// ValidRole reports whether role is one of the three roles.
func ValidRole(role string) bool {
	return role == RoleAdmin || role == RoleOperator || role == RoleViewer
}

// Limits of user names and passwords. bcrypt reads at most 72 bytes.
const (
	MaxUserName       = 64
	MinPasswordLength = 8
	MaxPasswordBytes  = 72
)

// User is a person who signs in.
type User struct {
	ID         int64
	Name       string
	Role       string
	CreatedAt  time.Time
	DisabledAt time.Time // zero while the user may sign in
	// SessionEpoch moves on when every session of the user must end; a
	// session issued under an older epoch is no longer valid.
	SessionEpoch int64
}

// Disabled reports whether the user may no longer sign in.
func (u User) Disabled() bool { return !u.DisabledAt.IsZero() }

// userRow is a row of app_user as scanned.
type userRow struct {
	ID           int64  `db:"id"`
	Name         string `db:"name"`
	PasswordHash []byte `db:"password_hash"`
	Role         string `db:"role"`
	CreatedAt    int64  `db:"created_at"`
	DisabledAt   *int64 `db:"disabled_at"`
	SessionEpoch int64  `db:"session_epoch"`
}

func (r userRow) user() User {
	return User{ID: r.ID, Name: r.Name, Role: r.Role, CreatedAt: fromMillis(r.CreatedAt), DisabledAt: nullMillis(r.DisabledAt),
		SessionEpoch: r.SessionEpoch}
}

const userColumns = `id, name, password_hash, role, created_at, disabled_at, session_epoch`

// ValidUserName reports whether name is 1 to 64 characters of A-Z, a-z,
// 0-9, '.', '_' and '-'.
func ValidUserName(name string) bool {
	if len(name) == 0 || len(name) > MaxUserName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func validatePassword(password string) error {
	if utf8.RuneCountInString(password) < MinPasswordLength {
		return fmt.Errorf("%w: password must have at least %d characters", ErrInvalidUser, MinPasswordLength)
	}
	if len(password) > MaxPasswordBytes {
		return fmt.Errorf("%w: password must have at most %d bytes", ErrInvalidUser, MaxPasswordBytes)
	}
	return nil
}

// CreateUser stores a user with a bcrypt hash of password. Names are unique
// regardless of case: a taken name is ErrUserExists; a bad name, password or
// role is ErrInvalidUser.
func (db *DB) CreateUser(ctx context.Context, name, password, role string) (User, error) {
	switch {
	case !ValidUserName(name):
		return User{}, fmt.Errorf("create user: %w: name must be 1 to %d characters of A-Z, a-z, 0-9, '.', '_' and '-'", ErrInvalidUser, MaxUserName)
	case !ValidRole(role):
		return User{}, fmt.Errorf("create user %s: %w: unknown role %q", name, ErrInvalidUser, role)
	}
	if err := validatePassword(password); err != nil {
		return User{}, fmt.Errorf("create user %s: %w", name, err)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), db.bcryptCost)
	if err != nil {
		return User{}, fmt.Errorf("create user %s: %w", name, err)
	}
	const q = `INSERT INTO app_user (name, password_hash, role, created_at)
		VALUES (?, ?, ?, ?)
		ON CONFLICT (name) DO NOTHING
		RETURNING ` + userColumns
	var row userRow
	err = db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		err := tx.GetContext(ctx, &row, q, name, string(hash), role, millis(db.now()))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrUserExists
		}
		return err
	})
	if err != nil {
		return User{}, fmt.Errorf("create user %s: %w", name, err)
	}
	return row.user(), nil
}

// Authenticate returns the user whose name and password these are. An
// unknown name, a wrong password and a disabled user all fail with
// ErrBadCredentials, and take about as long, so a caller learns nothing of
// which names exist.
func (db *DB) Authenticate(ctx context.Context, name, password string) (User, error) {
	const q = `SELECT ` + userColumns + ` FROM app_user WHERE name = ?`
	var row userRow
	err := db.db.GetContext(ctx, &row, q, name)
	if errors.Is(err, sql.ErrNoRows) {
		_ = bcrypt.CompareHashAndPassword(db.dummy(), []byte(password))
		return User{}, fmt.Errorf("authenticate %s: %w", name, ErrBadCredentials)
	}
	if err != nil {
		return User{}, fmt.Errorf("authenticate %s: %w", name, err)
	}
	if err := bcrypt.CompareHashAndPassword(row.PasswordHash, []byte(password)); err != nil || row.DisabledAt != nil {
		return User{}, fmt.Errorf("authenticate %s: %w", name, ErrBadCredentials)
	}
	return row.user(), nil
}

// dummy returns a hash to compare against when the user is unknown, made
// once at the cost real hashes have.
func (db *DB) dummy() []byte {
	db.dummyOnce.Do(func() {
		h, err := bcrypt.GenerateFromPassword([]byte("countersign-no-such-user"), db.bcryptCost)
		if err == nil {
			db.dummyHash = h
		}
	})
	return db.dummyHash
}

// UserByID returns one user or ErrNotFound.
func (db *DB) UserByID(ctx context.Context, id int64) (User, error) {
	const q = `SELECT ` + userColumns + ` FROM app_user WHERE id = ?`
	var row userRow
	if err := db.db.GetContext(ctx, &row, q, id); err != nil {
		return User{}, fmt.Errorf("get user %d: %w", id, notFound(err))
	}
	return row.user(), nil
}

// UserByName returns one user, matching the name regardless of case, or
// ErrNotFound.
func (db *DB) UserByName(ctx context.Context, name string) (User, error) {
	const q = `SELECT ` + userColumns + ` FROM app_user WHERE name = ?`
	var row userRow
	if err := db.db.GetContext(ctx, &row, q, name); err != nil {
		return User{}, fmt.Errorf("get user %s: %w", name, notFound(err))
	}
	return row.user(), nil
}

// Users returns every user ordered by name.
func (db *DB) Users(ctx context.Context) ([]User, error) {
	const q = `SELECT ` + userColumns + ` FROM app_user ORDER BY name`
	var rows []userRow
	if err := db.db.SelectContext(ctx, &rows, q); err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	users := make([]User, len(rows))
	for i, r := range rows {
		users[i] = r.user()
	}
	return users, nil
}

// CountUsers counts the users, disabled ones included.
func (db *DB) CountUsers(ctx context.Context) (int, error) {
	var n int
	if err := db.db.GetContext(ctx, &n, `SELECT count(*) FROM app_user`); err != nil {
		return 0, fmt.Errorf("count users: %w", err)
	}
	return n, nil
}

// SetRole changes a user's role: ErrInvalidUser for an unknown role,
// ErrNotFound for an unknown user.
func (db *DB) SetRole(ctx context.Context, id int64, role string) error {
	if !ValidRole(role) {
		return fmt.Errorf("set role of user %d: %w: unknown role %q", id, ErrInvalidUser, role)
	}
	const q = `UPDATE app_user SET role = ? WHERE id = ?`
	if err := db.updateUser(ctx, q, role, id); err != nil {
		return fmt.Errorf("set role of user %d: %w", id, err)
	}
	return nil
}

// SetPassword replaces a user's password: ErrInvalidUser for a bad password,
// ErrNotFound for an unknown user.
func (db *DB) SetPassword(ctx context.Context, id int64, password string) error {
	if err := validatePassword(password); err != nil {
		return fmt.Errorf("set password of user %d: %w", id, err)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), db.bcryptCost)
	if err != nil {
		return fmt.Errorf("set password of user %d: %w", id, err)
	}
	const q = `UPDATE app_user SET password_hash = ? WHERE id = ?`
	if err := db.updateUser(ctx, q, string(hash), id); err != nil {
		return fmt.Errorf("set password of user %d: %w", id, err)
	}
	return nil
}

// DisableUser stops a user from signing in; disabling a disabled user keeps
// the first time. ErrNotFound for an unknown user.
func (db *DB) DisableUser(ctx context.Context, id int64) error {
	const q = `UPDATE app_user SET disabled_at = COALESCE(disabled_at, ?), session_epoch = session_epoch + 1 WHERE id = ?`
	if err := db.updateUser(ctx, q, millis(db.now()), id); err != nil {
		return fmt.Errorf("disable user %d: %w", id, err)
	}
	return nil
}

// EndSessions ends every session of a user by moving their session epoch
// on. ErrNotFound for an unknown user.
func (db *DB) EndSessions(ctx context.Context, id int64) error {
	const q = `UPDATE app_user SET session_epoch = session_epoch + 1 WHERE id = ?`
	if err := db.updateUser(ctx, q, id); err != nil {
		return fmt.Errorf("end sessions of user %d: %w", id, err)
	}
	return nil
}

// EnableUser lets a disabled user sign in again. ErrNotFound for an unknown
// user.
func (db *DB) EnableUser(ctx context.Context, id int64) error {
	const q = `UPDATE app_user SET disabled_at = NULL WHERE id = ?`
	if err := db.updateUser(ctx, q, id); err != nil {
		return fmt.Errorf("enable user %d: %w", id, err)
	}
	return nil
}

// updateUser runs q, an UPDATE of one user by id, and fails with ErrNotFound
// when it changes no row.
func (db *DB) updateUser(ctx context.Context, q string, args ...any) error {
	return db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return ErrNotFound
		}
		return nil
	})
}

// notFound maps sql.ErrNoRows to ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}
