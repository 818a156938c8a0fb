package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Errors of API tokens.
var (
	// ErrBadToken refuses an API call whose token is unknown or revoked, or
	// whose user is disabled, deliberately not told apart.
	ErrBadToken = errors.New("invalid API token")
	// ErrTokenRevoked refuses to revoke a token twice.
	ErrTokenRevoked = errors.New("token already revoked")
	// ErrInvalidToken refuses a token name that is empty or too long.
	ErrInvalidToken = errors.New("invalid token name")
)

// Token limits and format. A secret is TokenPrefix followed by 43 base64url
// characters (256 random bits).
const (
	TokenPrefix     = "cs_"
	MaxTokenName    = 64
	tokenHintLength = len(TokenPrefix) + 6
	// tokenUseGranularity is how stale a token's last-used time may get: it
	// is written at most once per this period, so reading through the API
	// does not cost a write per request.
	tokenUseGranularity = time.Minute
)

// Token is an API token as listed: never its secret.
type Token struct {
	ID       int64
	UserID   int64
	UserName string
	Name     string
	// Hint is the start of the secret, enough to recognise it.
	Hint       string
	CreatedAt  time.Time
	LastUsedAt time.Time // zero if never used
	RevokedAt  time.Time // zero while it works
}

// Revoked reports whether the token no longer works.
func (t Token) Revoked() bool { return !t.RevokedAt.IsZero() }

// tokenRow is a row of api_token joined with its user's name.
type tokenRow struct {
	ID         int64  `db:"id"`
	UserID     int64  `db:"user_id"`
	UserName   string `db:"user_name"`
	Name       string `db:"name"`
	Hint       string `db:"hint"`
	CreatedAt  int64  `db:"created_at"`
	LastUsedAt *int64 `db:"last_used_at"`
	RevokedAt  *int64 `db:"revoked_at"`
}

func (r tokenRow) token() Token {
	return Token{ID: r.ID, UserID: r.UserID, UserName: r.UserName, Name: r.Name, Hint: r.Hint,
		CreatedAt: fromMillis(r.CreatedAt), LastUsedAt: nullMillis(r.LastUsedAt), RevokedAt: nullMillis(r.RevokedAt)}
}

const tokenColumns = `t.id, t.user_id, u.name AS user_name, t.name, t.hint, t.created_at, t.last_used_at, t.revoked_at`

// hashToken is what is stored of a secret.
func hashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// CreateToken makes an API token for user userID and returns it with its
// secret, which is never stored and cannot be shown again. A disabled or
// unknown user gets ErrNotFound; a bad name ErrInvalidToken.
func (db *DB) CreateToken(ctx context.Context, userID int64, name string) (Token, string, error) {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > MaxTokenName || !utf8.ValidString(name) {
		return Token{}, "", fmt.Errorf("%w: a name of 1 to %d characters is needed", ErrInvalidToken, MaxTokenName)
	}
	u, err := db.UserByID(ctx, userID)
	if err != nil {
		return Token{}, "", err
	}
	if u.Disabled() {
		return Token{}, "", fmt.Errorf("create token for %s: user is disabled: %w", u.Name, ErrNotFound)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return Token{}, "", fmt.Errorf("create token: %w", err)
	}
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	now := db.now().UTC()
	t := Token{UserID: u.ID, UserName: u.Name, Name: name, Hint: secret[:tokenHintLength], CreatedAt: now.Truncate(time.Millisecond)}
	const q = `INSERT INTO api_token (user_id, name, secret_hash, hint, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id`
	if err := db.w.GetContext(ctx, &t.ID, q, u.ID, name, hashToken(secret), t.Hint, millis(now)); err != nil {
		return Token{}, "", fmt.Errorf("create token for %s: %w", u.Name, err)
	}
	return t, secret, nil
}

// UserByToken returns the user an API token acts as, with the user's current
// role. An unknown or revoked token, or one of a disabled user, is
// ErrBadToken. It records when the token was last used, at most once a
// minute.
func (db *DB) UserByToken(ctx context.Context, secret string) (User, error) {
	if !strings.HasPrefix(secret, TokenPrefix) || len(secret) > 128 {
		return User{}, ErrBadToken
	}
	q := `SELECT t.id, t.last_used_at, ` + prefixed("u.", userColumns) + `
		FROM api_token t JOIN app_user u ON u.id = t.user_id
		WHERE t.secret_hash = ? AND t.revoked_at IS NULL AND u.disabled_at IS NULL`
	var (
		tokenID  int64
		lastUsed *int64
		row      userRow
	)
	err := db.db.QueryRowxContext(ctx, q, hashToken(secret)).Scan(&tokenID, &lastUsed,
		&row.ID, &row.Name, &row.PasswordHash, &row.Role, &row.CreatedAt, &row.DisabledAt, &row.SessionEpoch)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, ErrBadToken
	}
	if err != nil {
		return User{}, fmt.Errorf("look up token: %w", err)
	}
	now := db.now()
	if lastUsed == nil || now.Sub(fromMillis(*lastUsed)) >= tokenUseGranularity {
		const u = `UPDATE api_token SET last_used_at = ? WHERE id = ?`
		if _, err := db.w.ExecContext(ctx, u, millis(now), tokenID); err != nil {
			return User{}, fmt.Errorf("record use of token %d: %w", tokenID, err)
		}
	}
	return row.user(), nil
}

// prefixed qualifies each of a comma-separated column list with p.
func prefixed(p, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// Tokens lists the tokens of user userID, or of every user when userID is 0,
// newest first, revoked ones included.
func (db *DB) Tokens(ctx context.Context, userID int64) ([]Token, error) {
	q := `SELECT ` + tokenColumns + ` FROM api_token t JOIN app_user u ON u.id = t.user_id`
	var args []any
	if userID != 0 {
		q += ` WHERE t.user_id = ?`
		args = append(args, userID)
	}
	q += ` ORDER BY t.created_at DESC, t.id DESC`
	var rows []tokenRow
	if err := db.db.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	tokens := make([]Token, len(rows))
	for i, r := range rows {
		tokens[i] = r.token()
	}
	return tokens, nil
}

// RevokeToken ends token id. With a userID other than 0 only that user's
// token may be revoked: another's is ErrNotFound, as an unknown one is. A
// token revoked before is ErrTokenRevoked.
func (db *DB) RevokeToken(ctx context.Context, id, userID int64) error {
	const q = `UPDATE api_token SET revoked_at = ?1
		WHERE id = ?2 AND (?3 = 0 OR user_id = ?3) AND revoked_at IS NULL`
	res, err := db.w.ExecContext(ctx, q, millis(db.now()), id, userID)
	if err != nil {
		return fmt.Errorf("revoke token %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("revoke token %d: %w", id, err)
	} else if n == 1 {
		return nil
	}
	const exists = `SELECT revoked_at IS NOT NULL FROM api_token WHERE id = ?1 AND (?2 = 0 OR user_id = ?2)`
	var revoked bool
	if err := db.db.GetContext(ctx, &revoked, exists, id, userID); err != nil {
		return fmt.Errorf("revoke token %d: %w", id, notFound(err))
	}
	if revoked {
		return fmt.Errorf("revoke token %d: %w", id, ErrTokenRevoked)
	}
	return fmt.Errorf("revoke token %d: %w", id, ErrNotFound)
}
