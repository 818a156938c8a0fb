package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Errors of idempotency keys.
var (
	// ErrKeyReused refuses an idempotency key already used with a request
	// of another body.
	ErrKeyReused = errors.New("idempotency key already used with another request")
	// ErrKeyInFlight says a request with the same key and body is still
	// starting its run.
	ErrKeyInFlight = errors.New("idempotency key in use by a request in progress")
)

// Lifetimes of idempotency keys.
const (
	// IdempotencyTTL is how long a key is kept from its first use; after it
	// the key is purged and may be used again.
	IdempotencyTTL = 24 * time.Hour
	// idempotencyAbandoned is how long a reservation may stay without its
	// run before another request with the same key and body takes it over:
	// the request that made it died before it could say which run it
	// started, or whether it started one.
	idempotencyAbandoned = time.Minute
	// purgeBatch bounds the expired keys one reservation deletes.
	purgeBatch = 100
)

// ReserveIdempotencyKey reserves a user's key for a request whose body has
// the hash given. It returns "" when the caller now holds the reservation:
// it must start the run and call CompleteIdempotencyKey, or
// ReleaseIdempotencyKey when it started none. It returns the run's id when
// the key already names the run of a request with the same body;
// ErrKeyReused when the key was used with another body; ErrKeyInFlight
// while the request holding the reservation is still starting its run.
// Reservations are one write transaction each, so of concurrent requests
// with one key exactly one holds it. Keys older than IdempotencyTTL are
// purged on the way, a batch at a time.
func (db *DB) ReserveIdempotencyKey(ctx context.Context, userID int64, key, hash string, now time.Time) (string, error) {
	var runID string
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		if _, err := purgeKeys(ctx, tx, now.Add(-IdempotencyTTL), purgeBatch); err != nil {
			return err
		}
		var row struct {
			Hash      string         `db:"request_hash"`
			RunID     sql.NullString `db:"run_id"`
			CreatedAt int64          `db:"created_at"`
		}
		err := tx.GetContext(ctx, &row, `SELECT request_hash, run_id, created_at FROM api_idempotency
			WHERE user_id = ? AND key = ?`, userID, key)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.ExecContext(ctx, `INSERT INTO api_idempotency (user_id, key, request_hash, created_at)
				VALUES (?, ?, ?, ?)`, userID, key, hash, millis(now))
			return err
		case err != nil:
			return err
		case row.Hash != hash:
			return ErrKeyReused
		case row.RunID.Valid:
			runID = row.RunID.String
			return nil
		case row.CreatedAt > millis(now.Add(-idempotencyAbandoned)):
			return ErrKeyInFlight
		}
		// Abandoned: take the reservation over.
		_, err = tx.ExecContext(ctx, `UPDATE api_idempotency SET created_at = ? WHERE user_id = ? AND key = ?`,
			millis(now), userID, key)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("reserve idempotency key: %w", err)
	}
	return runID, nil
}

// CompleteIdempotencyKey records the run started under a key the caller
// reserved.
func (db *DB) CompleteIdempotencyKey(ctx context.Context, userID int64, key, runID string) error {
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		res, err := tx.ExecContext(ctx, `UPDATE api_idempotency SET run_id = ?
			WHERE user_id = ? AND key = ? AND run_id IS NULL`, runID, userID, key)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return errors.Join(err, ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("complete idempotency key: %w", err)
	}
	return nil
}

// ReleaseIdempotencyKey drops a reservation that started no run, so that the
// key can be used again: a refused request does not use its key up.
func (db *DB) ReleaseIdempotencyKey(ctx context.Context, userID int64, key string) error {
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM api_idempotency WHERE user_id = ? AND key = ? AND run_id IS NULL`,
			userID, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// PurgeIdempotencyKeys deletes the keys first used before cutoff and
// returns how many it deleted.
func (db *DB) PurgeIdempotencyKeys(ctx context.Context, cutoff time.Time) (int, error) {
	total := 0
	for {
		var n int
		err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
			var err error
			n, err = purgeKeys(ctx, tx, cutoff, 1000)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("purge idempotency keys: %w", err)
		}
		total += n
		if n < 1000 {
			return total, nil
		}
	}
}

// purgeKeys deletes up to limit keys first used before cutoff.
func purgeKeys(ctx context.Context, tx writeTx, cutoff time.Time, limit int) (int, error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM api_idempotency WHERE rowid IN (
		SELECT rowid FROM api_idempotency WHERE created_at < ? LIMIT ?)`, millis(cutoff), limit)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
