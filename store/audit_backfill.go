package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// auditBackfillKey is the setting migration 00005 leaves behind: the events
// recorded before it still have to be chained.
const auditBackfillKey = "audit_backfill"

// Batches of the backfill: runs read per page, and events hashed per
// transaction (a transaction ends after the run that reaches the bound), so
// a large history never holds the write lock for long.
const (
	backfillRunPage   = 200
	backfillTxEvents  = 5000
	backfillTxMaxRuns = 100
)

// backfillAudit chains the events recorded before the audit chain existed,
// once: Open calls it after migrating, and it does nothing unless migration
// 00005's marker is there. It walks every run by id, hashing the events
// that have no hash in seq order, and deletes the marker when it is done, so
// an interrupted backfill starts again (skipping what it already chained)
// at the next Open. Events written outside the store afterwards are not
// chained; VerifyRun reports them.
func (db *DB) backfillAudit(ctx context.Context) error {
	var marker string
	err := db.w.GetContext(ctx, &marker, `SELECT value FROM setting WHERE key = ?`, auditBackfillKey)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit backfill: %w", err)
	}
	for after := ""; ; {
		var ids []string
		const page = `SELECT id FROM agent_run WHERE id > ? ORDER BY id LIMIT ?`
		if err := db.w.SelectContext(ctx, &ids, page, after, backfillRunPage); err != nil {
			return fmt.Errorf("audit backfill: %w", err)
		}
		for done := 0; done < len(ids); {
			err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
				for runs, hashed := 0, 0; done < len(ids) && runs < backfillTxMaxRuns && hashed < backfillTxEvents; runs++ {
					n, err := chainRun(ctx, tx, ids[done])
					if err != nil {
						return err
					}
					hashed += n
					done++
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("audit backfill: %w", err)
			}
		}
		if len(ids) < backfillRunPage {
			break
		}
		after = ids[len(ids)-1]
	}
	if _, err := db.w.ExecContext(ctx, `DELETE FROM setting WHERE key = ?`, auditBackfillKey); err != nil {
		return fmt.Errorf("audit backfill: %w", err)
	}
	return nil
}

// chainRun hashes the events of run id that have no hash, in seq order,
// each chained to the event before it as it is stored, and returns how many
// it hashed. A run whose events all have a hash costs one read.
func chainRun(ctx context.Context, tx writeTx, id string) (int, error) {
	const unchained = `SELECT EXISTS (SELECT 1 FROM agent_run_event WHERE run_id = ? AND hash IS NULL)`
	const q = `SELECT seq, kind, created_at, payload, hash FROM agent_run_event WHERE run_id = ? ORDER BY seq`
	const update = `UPDATE agent_run_event SET prev_hash = ?, hash = ? WHERE run_id = ? AND seq = ?`
	var some bool
	if err := tx.GetContext(ctx, &some, unchained, id); err != nil || !some {
		return 0, err
	}
	var rows []struct {
		Seq       int64          `db:"seq"`
		Kind      string         `db:"kind"`
		CreatedAt int64          `db:"created_at"`
		Payload   []byte         `db:"payload"`
		Hash      sql.NullString `db:"hash"`
	}
	if err := tx.SelectContext(ctx, &rows, q, id); err != nil {
		return 0, fmt.Errorf("chain run %s: %w", id, err)
	}
	prev, n := AuditGenesis, 0
	for _, r := range rows {
		if r.Hash.Valid {
			prev = r.Hash.String
			continue
		}
		h := eventHash(prev, id, r.Seq, r.Kind, r.CreatedAt, r.Payload)
		if _, err := tx.ExecContext(ctx, update, prev, h, id, r.Seq); err != nil {
			return n, fmt.Errorf("chain run %s event %d: %w", id, r.Seq, err)
		}
		prev = h
		n++
	}
	return n, nil
}
