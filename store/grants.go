package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"countersign/engine"
)

// ErrGrantRevoked refuses to revoke a grant that is already revoked.
var ErrGrantRevoked = errors.New("grant already revoked")

const grantColumns = `id, agent, run_id, tool, scope, granted_by, created_at, expires_at, revoked_at, revoked_by`

// grantRow is a row of approval_grant as scanned.
type grantRow struct {
	ID        int64  `db:"id"`
	Agent     string `db:"agent"`
	RunID     string `db:"run_id"`
	Tool      string `db:"tool"`
	Scope     string `db:"scope"`
	GrantedBy string `db:"granted_by"`
	CreatedAt int64  `db:"created_at"`
	ExpiresAt int64  `db:"expires_at"`
	RevokedAt *int64 `db:"revoked_at"`
	RevokedBy string `db:"revoked_by"`
}

func (r grantRow) grant() engine.Grant {
	return engine.Grant{
		ID: r.ID, Agent: r.Agent, RunID: r.RunID, Tool: r.Tool, Scope: engine.GrantScope(r.Scope),
		By: r.GrantedBy, CreatedAt: fromMillis(r.CreatedAt), ExpiresAt: fromMillis(r.ExpiresAt),
		RevokedAt: nullMillis(r.RevokedAt), RevokedBy: r.RevokedBy,
	}
}

// ActiveGrant returns the grant that lets agent call tool in run runID
// without a person at now: unrevoked, unexpired, and either agent-wide or
// given in that run. Of several, it returns the most recent; false when
// there is none.
func (db *DB) ActiveGrant(ctx context.Context, agent, runID, tool string, now time.Time) (engine.Grant, bool, error) {
	// revoked_at IS NULL lets SQLite use the partial lookup index.
	const q = `SELECT ` + grantColumns + ` FROM approval_grant
		WHERE agent = ? AND tool = ? AND revoked_at IS NULL AND expires_at > ?
			AND (scope = 'agent' OR (scope = 'run' AND run_id = ?))
		ORDER BY created_at DESC, id DESC LIMIT 1`
	var row grantRow
	err := db.db.GetContext(ctx, &row, q, agent, tool, millis(now), runID)
	if errors.Is(err, sql.ErrNoRows) {
		return engine.Grant{}, false, nil
	}
	if err != nil {
		return engine.Grant{}, false, fmt.Errorf("active grant of %s for %s: %w", tool, agent, err)
	}
	return row.grant(), true, nil
}

// GrantFilter selects grants. Empty fields select everything.
type GrantFilter struct {
	// Agent keeps the grants of one agent.
	Agent string
	// RunID keeps the grants that apply to one run: those given in it, and
	// the agent-wide grants of its agent that were in force at some time
	// while it ran (from its creation to its end, or to now).
	RunID string
	// ActiveAt keeps the grants active at that time (engine.Grant.Active);
	// zero keeps active, expired and revoked ones.
	ActiveAt time.Time
	// Limit bounds the list (default 100, at most 1000).
	Limit int
}

// Grants lists the grants f selects, newest first.
func (db *DB) Grants(ctx context.Context, f GrantFilter) ([]engine.Grant, error) {
	var where []string
	var args []any
	if f.Agent != "" {
		where = append(where, `agent = ?`)
		args = append(args, f.Agent)
	}
	if f.RunID != "" {
		where = append(where, `(run_id = ? OR (scope = 'agent' AND EXISTS (
			SELECT 1 FROM agent_run r WHERE r.id = ? AND r.agent = approval_grant.agent
				AND approval_grant.created_at <= COALESCE(r.finished_at, approval_grant.created_at)
				AND approval_grant.expires_at > r.created_at
				AND (approval_grant.revoked_at IS NULL OR approval_grant.revoked_at > r.created_at))))`)
		args = append(args, f.RunID, f.RunID)
	}
	if !f.ActiveAt.IsZero() {
		where = append(where, `revoked_at IS NULL AND expires_at > ?`)
		args = append(args, millis(f.ActiveAt))
	}
	q := `SELECT ` + grantColumns + ` FROM approval_grant`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, clampLimit(f.Limit, 100, 1000))
	var rows []grantRow
	if err := db.db.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("list grants: %w", err)
	}
	grants := make([]engine.Grant, len(rows))
	for i, r := range rows {
		grants[i] = r.grant()
	}
	return grants, nil
}

// RevokeGrant ends a grant at now, by the person named: calls after it ask a
// person again. ErrNotFound for an unknown grant, ErrGrantRevoked for one
// already revoked (grants are revoked once and kept as records).
func (db *DB) RevokeGrant(ctx context.Context, id int64, by string, now time.Time) (engine.Grant, error) {
	const q = `UPDATE approval_grant SET revoked_at = ?, revoked_by = ?
		WHERE id = ? AND revoked_at IS NULL
		RETURNING ` + grantColumns
	var row grantRow
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		err := tx.GetContext(ctx, &row, q, millis(now), by, id)
		if errors.Is(err, sql.ErrNoRows) {
			return revokedError(ctx, tx, id)
		}
		return err
	})
	if err != nil {
		return engine.Grant{}, fmt.Errorf("revoke grant %d: %w", id, err)
	}
	return row.grant(), nil
}

// revokedError says why revoking grant id changed no row: it does not
// exist, or it was revoked already (by whom and when).
func revokedError(ctx context.Context, tx writeTx, id int64) error {
	var row grantRow
	err := tx.GetContext(ctx, &row, `SELECT `+grantColumns+` FROM approval_grant WHERE id = ?`, id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ErrNotFound
	case err != nil:
		return err
	}
	return fmt.Errorf("%w by %s at %s", ErrGrantRevoked, row.RevokedBy, nullMillis(row.RevokedAt).Format(time.RFC3339))
}
