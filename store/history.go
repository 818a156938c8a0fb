package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"countersign/engine"
)

// RunFilter selects runs for the history list. Zero fields select
// everything.
type RunFilter struct {
	Status      engine.Status
	Agent       string
	InitiatedBy string
	// Query matches runs whose prompt contains it, ignoring ASCII case.
	Query string
	// From and To bound created_at: From <= created_at < To.
	From, To time.Time
	// Outcome keeps the runs of one outcome, one of Outcomes; any other
	// value fails with ErrBadFilter.
	Outcome string
	// DecidedBy keeps the runs that person decided a turn of (the name is
	// compared ignoring ASCII case, as user names are unique that way).
	DecidedBy string
	// Before is the Next cursor of the previous page; empty for the first.
	Before string
	// Limit is the page size: 50 by default, at most 200.
	Limit int
}

// Outcomes of the history filter. Each reads the run row only: its status,
// termination and tally columns.
const (
	// OutcomeClean: completed, with no call denied, no write failed and no
	// turn expired.
	OutcomeClean = "clean"
	// OutcomeDenied: at least one call denied (or refused as a repeat).
	OutcomeDenied = "denied"
	// OutcomeWriteFailed: at least one approved write ran and failed.
	OutcomeWriteFailed = "write_failed"
	// OutcomeExpired: at least one call expired waiting for a decision.
	OutcomeExpired = "expired"
	// OutcomeWaived: at least one call that needed approval ran without a
	// person, by a policy rule or a standing grant.
	OutcomeWaived = "waived"
	// OutcomeInterrupted: the run failed, interrupted during a write.
	OutcomeInterrupted = "interrupted"
)

// Outcomes lists the outcomes RunFilter.Outcome takes, in the order a form
// offers them.
var Outcomes = []string{OutcomeClean, OutcomeDenied, OutcomeWriteFailed, OutcomeExpired, OutcomeWaived, OutcomeInterrupted}

// outcomeConds are the WHERE fragments of the outcomes. The rare ones match
// the partial indexes of migration 00004 word for word, so that a filtered
// page reads only the runs it shows.
var outcomeConds = map[string]string{
	OutcomeClean:       `status = 'completed' AND denied_calls = 0 AND failed_writes = 0 AND expired_calls = 0`,
	OutcomeDenied:      `denied_calls > 0`,
	OutcomeWriteFailed: `failed_writes > 0`,
	OutcomeExpired:     `expired_calls > 0`,
	OutcomeWaived:      `waived_calls > 0`,
	OutcomeInterrupted: `termination_reason = 'interrupted_during_write'`,
}

// ErrBadFilter refuses a history filter with an unknown outcome.
var ErrBadFilter = errors.New("invalid run filter")

// RunList is one page of the history list, newest first.
type RunList struct {
	Runs []engine.Run
	// Next is the cursor of the following page, or empty on the last.
	Next string
}

// Page sizes of ListRuns.
const (
	DefaultRunLimit = 50
	MaxRunLimit     = 200
)

// ListRuns returns one page of the runs f selects, newest first. Pages are
// keyed on (created_at, id), so runs created while a person pages through
// neither shift nor repeat the pages that follow. A cursor not made by
// ListRuns fails with ErrBadCursor.
func (db *DB) ListRuns(ctx context.Context, f RunFilter) (RunList, error) {
	where, args, err := f.where(true)
	if err != nil {
		return RunList{}, fmt.Errorf("list runs: %w", err)
	}
	limit := clampLimit(f.Limit, DefaultRunLimit, MaxRunLimit)
	q := `SELECT ` + runColumns + ` FROM agent_run` + where +
		` ORDER BY created_at DESC, id DESC LIMIT ?`
	var rows []runRow
	if err := db.db.SelectContext(ctx, &rows, q, append(args, limit+1)...); err != nil {
		return RunList{}, fmt.Errorf("list runs: %w", err)
	}
	var page RunList
	if len(rows) > limit {
		rows = rows[:limit]
		last := rows[limit-1]
		page.Next = encodeCursor(last.CreatedAt, last.ID)
	}
	page.Runs = runsOf(rows)
	return page, nil
}

// CountRuns counts the runs f selects, ignoring its cursor and limit.
func (db *DB) CountRuns(ctx context.Context, f RunFilter) (int, error) {
	where, args, err := f.where(false)
	if err != nil {
		return 0, fmt.Errorf("count runs: %w", err)
	}
	var n int
	if err := db.db.GetContext(ctx, &n, `SELECT count(*) FROM agent_run`+where, args...); err != nil {
		return 0, fmt.Errorf("count runs: %w", err)
	}
	return n, nil
}

// CountRunsUpTo counts the runs f selects, ignoring its cursor and limit,
// but stops at max: a count of the whole history would cost as much as the
// history is long, and a page only needs to say "more than".
func (db *DB) CountRunsUpTo(ctx context.Context, f RunFilter, max int) (int, error) {
	where, args, err := f.where(false)
	if err != nil {
		return 0, fmt.Errorf("count runs: %w", err)
	}
	var n int
	q := `SELECT count(*) FROM (SELECT 1 FROM agent_run` + where + ` LIMIT ?)`
	if err := db.db.GetContext(ctx, &n, q, append(args, max)...); err != nil {
		return 0, fmt.Errorf("count runs: %w", err)
	}
	return n, nil
}

// where returns the WHERE clause of f and its arguments. Each condition is a
// fixed fragment; only the values vary.
func (f RunFilter) where(withCursor bool) (string, []any, error) {
	var conds []string
	var args []any
	if f.Status != "" {
		conds, args = append(conds, `status = ?`), append(args, f.Status)
	}
	if f.Agent != "" {
		conds, args = append(conds, `agent = ?`), append(args, f.Agent)
	}
	if f.InitiatedBy != "" {
		conds, args = append(conds, `initiated_by = ?`), append(args, f.InitiatedBy)
	}
	if f.Query != "" {
		conds, args = append(conds, `prompt LIKE ? ESCAPE '\'`), append(args, "%"+escapeLike(f.Query)+"%")
	}
	if f.Outcome != "" {
		cond, ok := outcomeConds[f.Outcome]
		if !ok {
			return "", nil, fmt.Errorf("%w: unknown outcome %q", ErrBadFilter, f.Outcome)
		}
		conds = append(conds, cond)
	}
	if f.DecidedBy != "" {
		// decided_by is a short JSON array on the row itself; runs nobody
		// decided skip the json_each.
		conds = append(conds, `decided_by <> '[]' AND EXISTS (SELECT 1 FROM json_each(decided_by) WHERE value = ? COLLATE NOCASE)`)
		args = append(args, f.DecidedBy)
	}
	if !f.From.IsZero() {
		conds, args = append(conds, `created_at >= ?`), append(args, millis(f.From))
	}
	if !f.To.IsZero() {
		conds, args = append(conds, `created_at < ?`), append(args, millis(f.To))
	}
	if withCursor && f.Before != "" {
		ms, id, err := decodeCursor(f.Before)
		if err != nil {
			return "", nil, err
		}
		conds, args = append(conds, `(created_at, id) < (?, ?)`), append(args, ms, id)
	}
	if len(conds) == 0 {
		return "", nil, nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args, nil
}

// escapeLike escapes the wildcards of LIKE with a backslash.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// encodeCursor makes the opaque cursor of the run after which a page starts:
// base64url of "<created_at ms>.<id>".
func encodeCursor(createdAt int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(createdAt, 10) + "." + id))
}

func decodeCursor(c string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", ErrBadCursor
	}
	msText, id, ok := strings.Cut(string(b), ".")
	if !ok || id == "" {
		return 0, "", ErrBadCursor
	}
	ms, err := strconv.ParseInt(msText, 10, 64)
	if err != nil {
		return 0, "", ErrBadCursor
	}
	return ms, id, nil
}

// CountByStatus counts runs by status; every status is present, zero or not.
func (db *DB) CountByStatus(ctx context.Context) (map[engine.Status]int, error) {
	const q = `SELECT status, count(*) AS n FROM agent_run GROUP BY status`
	var rows []struct {
		Status string `db:"status"`
		N      int    `db:"n"`
	}
	if err := db.db.SelectContext(ctx, &rows, q); err != nil {
		return nil, fmt.Errorf("count runs by status: %w", err)
	}
	counts := map[engine.Status]int{
		engine.StatusQueued: 0, engine.StatusRunning: 0, engine.StatusWaiting: 0,
		engine.StatusCompleted: 0, engine.StatusFailed: 0, engine.StatusCancelled: 0,
	}
	for _, r := range rows {
		counts[engine.Status(r.Status)] = r.N
	}
	return counts, nil
}

// WaitingRuns lists the runs waiting for approval, oldest first: the inbox.
// A limit of zero or less means 50; at most 500 are returned.
func (db *DB) WaitingRuns(ctx context.Context, limit int) ([]engine.Run, error) {
	const q = `SELECT ` + runColumns + ` FROM agent_run
		WHERE status = 'waiting_for_approval' ORDER BY created_at, id LIMIT ?`
	var rows []runRow
	if err := db.db.SelectContext(ctx, &rows, q, clampLimit(limit, 50, 500)); err != nil {
		return nil, fmt.Errorf("waiting runs: %w", err)
	}
	return runsOf(rows), nil
}

// CountWaiting counts the runs waiting for approval.
func (db *DB) CountWaiting(ctx context.Context) (int, error) {
	const q = `SELECT count(*) FROM agent_run WHERE status = 'waiting_for_approval'`
	var n int
	if err := db.db.GetContext(ctx, &n, q); err != nil {
		return 0, fmt.Errorf("count waiting runs: %w", err)
	}
	return n, nil
}

// CountWaitingUpTo counts the runs waiting for approval, stopping at max;
// the navigation badge asks it on every page and poll.
func (db *DB) CountWaitingUpTo(ctx context.Context, max int) (int, error) {
	const q = `SELECT count(*) FROM (SELECT 1 FROM agent_run WHERE status = 'waiting_for_approval' LIMIT ?)`
	var n int
	if err := db.db.GetContext(ctx, &n, q, max); err != nil {
		return 0, fmt.Errorf("count waiting runs: %w", err)
	}
	return n, nil
}

// LastDecision implements engine.RunStore.
func (db *DB) LastDecision(ctx context.Context, runID string) (engine.Event, bool, error) {
	ev, ok, err := lastDecision(ctx, db.db, runID)
	if err != nil {
		return engine.Event{}, false, fmt.Errorf("last decision of run %s: %w", runID, err)
	}
	if !ok {
		if _, err := db.Run(ctx, runID); err != nil {
			return engine.Event{}, false, fmt.Errorf("last decision: %w", err)
		}
	}
	return ev, ok, nil
}

// DecisionOn implements engine.RunStore.
func (db *DB) DecisionOn(ctx context.Context, runID, digest string) (engine.Event, bool, error) {
	ev, ok, err := decisionOn(ctx, db.db, runID, digest)
	if err != nil {
		return engine.Event{}, false, fmt.Errorf("decision on a turn of run %s: %w", runID, err)
	}
	return ev, ok, nil
}

// NextLeaseExpiry implements engine.RunStore. It reads the partial lease
// index.
func (db *DB) NextLeaseExpiry(ctx context.Context) (time.Time, bool, error) {
	const q = `SELECT MIN(lease_expires_at) FROM agent_run INDEXED BY agent_run_lease
		WHERE status = 'running' AND lease_expires_at IS NOT NULL`
	t, ok, err := db.earliest(ctx, q)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next lease expiry: %w", err)
	}
	return t, ok, nil
}

// purgeStatementTarget is how long one delete of the purge should take. A
// delete runs on the one write connection and on a core for its whole length:
// writers queue behind it and a poll that needs that core waits, so the purge
// keeps each delete about this short, whatever the size of the runs it
// deletes (issue 7's goal: the poll p99 during a purge under twice idle).
const purgeStatementTarget = time.Millisecond

// PurgeFinishedBefore deletes terminal runs that finished before cutoff, with
// their events, and returns how many runs it deleted. Each transaction is one
// delete of at most maxBatch runs (zero or less means 500); the batch starts
// small and follows the time the last delete took per run, so that a delete
// takes about purgeStatementTarget. The next delete starts no sooner than
// twice the last one's time after that one started (its commit's sync counts
// as rest), so the deletes take at most half of a core while people poll and
// decide; readers are never blocked (WAL). The select is pinned to the
// retention index so that a batch never scans the whole history.
func (db *DB) PurgeFinishedBefore(ctx context.Context, cutoff time.Time, maxBatch int) (int, error) {
	const q = `DELETE FROM agent_run WHERE id IN (
		SELECT id FROM agent_run INDEXED BY agent_run_finished
		WHERE finished_at IS NOT NULL AND finished_at < ?
			AND status IN ('completed', 'failed', 'cancelled')
		LIMIT ?)`
	if maxBatch <= 0 {
		maxBatch = 500
	}
	batch := min(maxBatch, 16)
	total := 0
	for {
		var n int64
		var took time.Duration
		var ended time.Time
		err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
			start := time.Now()
			res, err := tx.ExecContext(ctx, q, millis(cutoff), batch)
			ended = time.Now()
			took = ended.Sub(start)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return total, fmt.Errorf("purge runs finished before %s: %w", cutoff.UTC().Format(time.RFC3339), err)
		}
		total += int(n)
		if n < int64(batch) {
			return total, nil
		}
		batch = nextPurgeBatch(batch, maxBatch, took)
		select {
		case <-ctx.Done():
			return total, fmt.Errorf("purge runs: %w", ctx.Err())
		case <-time.After(time.Until(ended.Add(took))):
		}
	}
}

// nextPurgeBatch is the batch whose delete should take purgeStatementTarget,
// given that a delete of batch runs took took: in proportion, at most twice
// the last batch (one fast delete proves little), and between 1 and
// maxBatch.
func nextPurgeBatch(batch, maxBatch int, took time.Duration) int {
	next := 2 * batch
	if took > 0 {
		next = min(next, int(int64(batch)*int64(purgeStatementTarget)/int64(took)))
	}
	return max(1, min(next, maxBatch))
}
