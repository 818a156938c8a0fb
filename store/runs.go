package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"countersign/engine"
)

var _ engine.RunStore = (*DB)(nil)

// runColumns are the columns of a runRow; suspended_state is read only where
// it is needed.
const runColumns = `id, agent, model, prompt, status, initiated_by, iterations,
	prompt_tokens, completion_tokens, total_tokens, termination_reason, error,
	pending_digest, claimed_by, lease_expires_at, attempts, cancel_requested,
	last_seq, created_at, started_at, updated_at, finished_at, deadline_at,
	denied_calls, failed_writes, expired_calls, waived_calls, decided_by`

// runRow is a row of agent_run as scanned.
type runRow struct {
	ID                string `db:"id"`
	Agent             string `db:"agent"`
	Model             string `db:"model"`
	Prompt            string `db:"prompt"`
	Status            string `db:"status"`
	InitiatedBy       string `db:"initiated_by"`
	Iterations        int    `db:"iterations"`
	PromptTokens      int    `db:"prompt_tokens"`
	CompletionTokens  int    `db:"completion_tokens"`
	TotalTokens       int    `db:"total_tokens"`
	TerminationReason string `db:"termination_reason"`
	Error             string `db:"error"`
	PendingDigest     string `db:"pending_digest"`
	ClaimedBy         string `db:"claimed_by"`
	LeaseExpiresAt    *int64 `db:"lease_expires_at"`
	Attempts          int    `db:"attempts"`
	CancelRequested   bool   `db:"cancel_requested"`
	LastSeq           int64  `db:"last_seq"`
	CreatedAt         int64  `db:"created_at"`
	StartedAt         *int64 `db:"started_at"`
	UpdatedAt         int64  `db:"updated_at"`
	FinishedAt        *int64 `db:"finished_at"`
	DeadlineAt        *int64 `db:"deadline_at"`
	DeniedCalls       int    `db:"denied_calls"`
	FailedWrites      int    `db:"failed_writes"`
	ExpiredCalls      int    `db:"expired_calls"`
	WaivedCalls       int    `db:"waived_calls"`
	DecidedBy         string `db:"decided_by"`
}

func (r runRow) run() engine.Run {
	return engine.Run{
		ID:          r.ID,
		Agent:       r.Agent,
		Model:       r.Model,
		Prompt:      r.Prompt,
		Status:      engine.Status(r.Status),
		InitiatedBy: r.InitiatedBy,
		Iterations:  r.Iterations,
		Usage: engine.Usage{
			PromptTokens:     r.PromptTokens,
			CompletionTokens: r.CompletionTokens,
			TotalTokens:      r.TotalTokens,
		},
		Termination:     engine.Termination(r.TerminationReason),
		Error:           r.Error,
		PendingDigest:   r.PendingDigest,
		ClaimedBy:       r.ClaimedBy,
		LeaseExpiresAt:  nullMillis(r.LeaseExpiresAt),
		Attempts:        r.Attempts,
		CancelRequested: r.CancelRequested,
		LastSeq:         r.LastSeq,
		CreatedAt:       fromMillis(r.CreatedAt),
		StartedAt:       nullMillis(r.StartedAt),
		UpdatedAt:       fromMillis(r.UpdatedAt),
		FinishedAt:      nullMillis(r.FinishedAt),
		DeadlineAt:      nullMillis(r.DeadlineAt),
		Tally: engine.Tally{
			Denied:       r.DeniedCalls,
			FailedWrites: r.FailedWrites,
			Expired:      r.ExpiredCalls,
			Waived:       r.WaivedCalls,
			DecidedBy:    decodeNames(r.DecidedBy),
		},
	}
}

// decodeNames reads the decided_by column, a JSON array of names; anything
// else reads as nobody.
func decodeNames(s string) []string {
	var names []string
	if s == "" || s == "[]" || json.Unmarshal([]byte(s), &names) != nil {
		return nil
	}
	return names
}

func runsOf(rows []runRow) []engine.Run {
	runs := make([]engine.Run, len(rows))
	for i, r := range rows {
		runs[i] = r.run()
	}
	return runs
}

// CreateRun implements engine.RunStore. The id is a ULID stamped with now.
func (db *DB) CreateRun(ctx context.Context, r engine.NewRun, prompt engine.Event, now time.Time) (engine.Run, error) {
	id, err := db.newID(now)
	if err != nil {
		return engine.Run{}, fmt.Errorf("create run: %w", err)
	}
	const q = `INSERT INTO agent_run (id, agent, model, prompt, status, initiated_by,
		last_seq, created_at, updated_at)
		VALUES (?, ?, ?, ?, 'queued', ?, 1, ?, ?)
		RETURNING ` + runColumns
	var row runRow
	err = db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		ms := millis(now)
		if err := tx.GetContext(ctx, &row, q, id, r.Agent, r.Model, r.Prompt, r.InitiatedBy, ms, ms); err != nil {
			return err
		}
		return db.insertEvent(ctx, tx, id, 1, prompt, now)
	})
	if err != nil {
		return engine.Run{}, fmt.Errorf("create run: %w", err)
	}
	return row.run(), nil
}

// Run implements engine.RunStore.
func (db *DB) Run(ctx context.Context, id string) (engine.Run, error) {
	const q = `SELECT ` + runColumns + ` FROM agent_run WHERE id = ?`
	var row runRow
	if err := db.db.GetContext(ctx, &row, q, id); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			err = engine.ErrRunNotFound
		}
		return engine.Run{}, fmt.Errorf("get run %s: %w", id, err)
	}
	return row.run(), nil
}

// AcquireRun implements engine.RunStore.
func (db *DB) AcquireRun(ctx context.Context, id, owner string, now, leaseUntil time.Time) (engine.Run, error) {
	const q = `UPDATE agent_run
		SET status = 'running', claimed_by = ?, lease_expires_at = ?,
			attempts = attempts + 1, started_at = COALESCE(started_at, ?), updated_at = ?
		WHERE id = ? AND (status = 'queued' OR (status = 'running' AND lease_expires_at < ?))
		RETURNING ` + runColumns
	var row runRow
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		ms := millis(now)
		err := tx.GetContext(ctx, &row, q, owner, millis(leaseUntil), ms, ms, id, ms)
		if errors.Is(err, sql.ErrNoRows) {
			if _, err := lookupStatus(ctx, tx, id); err != nil {
				return err
			}
			return engine.ErrLeaseLost
		}
		return err
	})
	if err != nil {
		return engine.Run{}, fmt.Errorf("acquire run %s: %w", id, err)
	}
	return row.run(), nil
}

// AppendEvent appends one event: AppendEvents with one.
func (db *DB) AppendEvent(ctx context.Context, id, owner string, ev engine.Event, leaseUntil time.Time) (int64, bool, error) {
	return db.AppendEvents(ctx, id, owner, []engine.Event{ev}, leaseUntil)
}

// AppendEvents implements engine.RunStore: the events, in order, in one
// transaction. The seqs come from the run row (last_seq + n ... RETURNING),
// so seqs stay contiguous under concurrent writers.
func (db *DB) AppendEvents(ctx context.Context, id, owner string, evs []engine.Event, leaseUntil time.Time) (int64, bool, error) {
	var seq int64
	var cancel bool
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		var err error
		seq, cancel, err = db.appendEvents(ctx, tx, id, owner, evs, leaseUntil)
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("append events to run %s: %w", id, err)
	}
	return seq, cancel, nil
}

// appendEvents appends evs in tx while owner holds the run, renews the
// lease and adds the model turns among them to the run's counters (so a
// running or waiting run shows its totals so far; FinishRun writes the
// final ones). It returns the seq of the last event and whether a cancel
// was requested.
func (db *DB) appendEvents(ctx context.Context, tx writeTx, id, owner string, evs []engine.Event, leaseUntil time.Time) (int64, bool, error) {
	if len(evs) == 0 {
		return 0, false, errors.New("no events to append")
	}
	const q = `UPDATE agent_run
		SET last_seq = last_seq + ?, lease_expires_at = ?, updated_at = ?,
			iterations = iterations + ?, prompt_tokens = prompt_tokens + ?,
			completion_tokens = completion_tokens + ?, total_tokens = total_tokens + ?
		WHERE id = ? AND status = 'running' AND claimed_by = ?
		RETURNING last_seq, cancel_requested`
	ats := make([]time.Time, len(evs))
	var turns int
	var u engine.Usage
	for i, ev := range evs {
		if ats[i] = ev.At; ats[i].IsZero() {
			ats[i] = db.now()
		}
		if ev.Kind == engine.EventModelTurn {
			turns++
			if ev.Usage != nil {
				u = u.Add(*ev.Usage)
			}
		}
	}
	var res struct {
		Seq             int64 `db:"last_seq"`
		CancelRequested bool  `db:"cancel_requested"`
	}
	err := tx.GetContext(ctx, &res, q, len(evs), millis(leaseUntil), millis(ats[len(ats)-1]), turns,
		u.PromptTokens, u.CompletionTokens, u.TotalTokens, id, owner)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, heldError(ctx, tx, id)
	}
	if err != nil {
		return 0, false, err
	}
	first := res.Seq - int64(len(evs)) + 1
	prev, known := "", false
	for i, ev := range evs {
		if prev, err = db.insertEventAfter(ctx, tx, id, first+int64(i), ev, ats[i], prev, known); err != nil {
			return 0, false, err
		}
		known = true
	}
	return res.Seq, res.CancelRequested, nil
}

// RenewLease implements engine.RunStore.
func (db *DB) RenewLease(ctx context.Context, id, owner string, until time.Time) (bool, error) {
	const q = `UPDATE agent_run SET lease_expires_at = ?
		WHERE id = ? AND status = 'running' AND claimed_by = ?
		RETURNING cancel_requested`
	var cancel bool
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		err := tx.GetContext(ctx, &cancel, q, millis(until), id, owner)
		if errors.Is(err, sql.ErrNoRows) {
			return heldError(ctx, tx, id)
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("renew lease of run %s: %w", id, err)
	}
	return cancel, nil
}

// SuspendRun implements engine.RunStore.
func (db *DB) SuspendRun(ctx context.Context, id, owner string, s engine.Suspend) error {
	const q = `UPDATE agent_run
		SET status = 'waiting_for_approval', suspended_state = ?, pending_digest = ?,
			claimed_by = '', lease_expires_at = NULL, deadline_at = ?,
			last_seq = last_seq + 1, updated_at = ?
		WHERE id = ? AND status = 'running' AND claimed_by = ?
		RETURNING last_seq`
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		if len(s.Before) > 0 {
			if _, _, err := db.appendEvents(ctx, tx, id, owner, s.Before, s.Now); err != nil {
				return err
			}
		}
		var seq int64
		var deadline any // NULL: the turn waits for ever
		if !s.DeadlineAt.IsZero() {
			deadline = millis(s.DeadlineAt)
		}
		err := tx.GetContext(ctx, &seq, q, s.State, s.Digest, deadline, millis(s.Now), id, owner)
		if errors.Is(err, sql.ErrNoRows) {
			return heldError(ctx, tx, id)
		}
		if err != nil {
			return err
		}
		return db.insertEvent(ctx, tx, id, seq, s.Event, s.Now)
	})
	if err != nil {
		return fmt.Errorf("suspend run %s: %w", id, err)
	}
	return nil
}

// SuspendedState implements engine.RunStore. State and digest come from one
// SELECT.
func (db *DB) SuspendedState(ctx context.Context, id string) (engine.Suspension, error) {
	const q = `SELECT status, suspended_state, pending_digest FROM agent_run WHERE id = ?`
	var row struct {
		Status string `db:"status"`
		State  []byte `db:"suspended_state"`
		Digest string `db:"pending_digest"`
	}
	err := db.db.GetContext(ctx, &row, q, id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		err = engine.ErrRunNotFound
	case err != nil:
	case engine.Status(row.Status).Terminal():
		err = engine.ErrRunTerminal
	case row.State == nil:
		err = engine.ErrNotWaiting
	}
	if err != nil {
		return engine.Suspension{}, fmt.Errorf("suspended state of run %s: %w", id, err)
	}
	return engine.Suspension{State: row.State, Digest: row.Digest}, nil
}

// ClaimRun implements engine.RunStore.
func (db *DB) ClaimRun(ctx context.Context, id string, c engine.Claim) ([]byte, error) {
	const q = `UPDATE agent_run
		SET status = 'running', claimed_by = ?, lease_expires_at = ?,
			started_at = COALESCE(started_at, ?),
			last_seq = last_seq + 1, updated_at = ?
		WHERE id = ? AND status = 'waiting_for_approval' AND pending_digest = ?
		RETURNING last_seq, suspended_state`
	var res struct {
		Seq   int64  `db:"last_seq"`
		State []byte `db:"suspended_state"`
	}
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		ms := millis(c.Now)
		err := tx.GetContext(ctx, &res, q, c.Owner, millis(c.LeaseUntil), ms, ms, id, c.Digest)
		if errors.Is(err, sql.ErrNoRows) {
			return claimError(ctx, tx, id, c.Digest)
		}
		if err != nil {
			return err
		}
		ev := c.Event
		for _, g := range c.Grants {
			g, err := insertGrant(ctx, tx, g)
			if err != nil {
				return err
			}
			ev.Grants = append(ev.Grants, g)
		}
		return db.insertEvent(ctx, tx, id, res.Seq, ev, c.Now)
	})
	if err != nil {
		return nil, fmt.Errorf("claim run %s: %w", id, err)
	}
	return res.State, nil
}

// claimError says why a claim on digest changed no row. A decision already
// made on that very turn is always named, whatever happened to the run since
// (resumed, waiting on a later turn, or ended), so a losing decision learns
// who won.
func claimError(ctx context.Context, tx writeTx, id, digest string) error {
	st, err := lookupStatus(ctx, tx, id)
	if err != nil {
		return err
	}
	if ev, ok, err := decisionOn(ctx, tx, id, digest); err != nil {
		return err
	} else if ok {
		return &engine.DecidedError{By: ev.By, At: ev.At, Dec: ev.Decision}
	}
	switch {
	case st.Terminal():
		return engine.ErrRunTerminal
	case st == engine.StatusWaiting:
		return engine.ErrStaleTurn
	}
	ev, decided, err := lastDecision(ctx, tx, id)
	if err != nil {
		return err
	}
	if decided {
		// Running after a decision: whichever turn the caller saw, it is
		// no longer waiting, and this is who moved it on.
		return &engine.DecidedError{By: ev.By, At: ev.At, Dec: ev.Decision}
	}
	return engine.ErrNotWaiting
}

// ReleaseRun implements engine.RunStore.
func (db *DB) ReleaseRun(ctx context.Context, id, owner string, ev engine.Event, now time.Time) error {
	const q = `UPDATE agent_run
		SET status = 'waiting_for_approval', claimed_by = '', lease_expires_at = NULL,
			last_seq = last_seq + 1, updated_at = ?
		WHERE id = ? AND status = 'running' AND claimed_by = ?
			AND suspended_state IS NOT NULL AND pending_digest <> ''
		RETURNING last_seq`
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		var seq int64
		err := tx.GetContext(ctx, &seq, q, millis(now), id, owner)
		if errors.Is(err, sql.ErrNoRows) {
			return releaseError(ctx, tx, id, owner)
		}
		if err != nil {
			return err
		}
		return db.insertEvent(ctx, tx, id, seq, ev, now)
	})
	if err != nil {
		return fmt.Errorf("release run %s: %w", id, err)
	}
	return nil
}

// releaseError says why a release changed no row: the run is gone, ended, not
// held by owner, or held by owner but with no state to wait on.
func releaseError(ctx context.Context, tx writeTx, id, owner string) error {
	const q = `SELECT status, claimed_by FROM agent_run WHERE id = ?`
	var row struct {
		Status    string `db:"status"`
		ClaimedBy string `db:"claimed_by"`
	}
	err := tx.GetContext(ctx, &row, q, id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return engine.ErrRunNotFound
	case err != nil:
		return err
	case engine.Status(row.Status).Terminal():
		return fmt.Errorf("%w: %w", engine.ErrLeaseLost, engine.ErrRunTerminal)
	case row.Status == string(engine.StatusRunning) && row.ClaimedBy == owner:
		return engine.ErrNotWaiting
	}
	return engine.ErrLeaseLost
}

// FinishRun implements engine.RunStore.
func (db *DB) FinishRun(ctx context.Context, id, owner string, f engine.Finish) error {
	if !f.Status.Terminal() {
		return fmt.Errorf("finish run %s: status %q is not terminal", id, f.Status)
	}
	const q = `UPDATE agent_run
		SET status = ?, termination_reason = ?, error = ?,
			iterations = COALESCE(?, iterations), prompt_tokens = COALESCE(?, prompt_tokens),
			completion_tokens = COALESCE(?, completion_tokens), total_tokens = COALESCE(?, total_tokens),
			suspended_state = NULL, pending_digest = '', claimed_by = '', lease_expires_at = NULL, deadline_at = NULL,
			last_seq = last_seq + 1, finished_at = ?, updated_at = ?
		WHERE id = ? AND (CASE WHEN ? = '' THEN status IN ('queued', 'waiting_for_approval')
			ELSE status = 'running' AND claimed_by = ? END)
		RETURNING last_seq, iterations, prompt_tokens, completion_tokens, total_tokens`
	totals := nullTotals(f.Totals)
	ms := millis(f.Now)
	var res struct {
		Seq int64 `db:"last_seq"`
		counterRow
	}
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		if len(f.Before) > 0 {
			if owner == "" {
				return errors.New("events to append before the end of a run that no worker holds")
			}
			if _, _, err := db.appendEvents(ctx, tx, id, owner, f.Before, f.Now); err != nil {
				return err
			}
		}
		err := tx.GetContext(ctx, &res, q, f.Status, f.Termination, f.Error,
			totals[0], totals[1], totals[2], totals[3], ms, ms, id, owner, owner)
		if errors.Is(err, sql.ErrNoRows) {
			st, err := lookupStatus(ctx, tx, id)
			switch {
			case err != nil:
				return err
			case st.Terminal():
				return engine.ErrRunTerminal
			}
			return engine.ErrLeaseLost
		}
		if err != nil {
			return err
		}
		ev := f.Event
		if ev.Totals == nil {
			ev.Totals = res.totals()
		}
		return db.insertEvent(ctx, tx, id, res.Seq, ev, f.Now)
	})
	if err != nil {
		return fmt.Errorf("finish run %s: %w", id, err)
	}
	return nil
}

// counterRow is a run's counters as returned by an UPDATE.
type counterRow struct {
	Iterations       int `db:"iterations"`
	PromptTokens     int `db:"prompt_tokens"`
	CompletionTokens int `db:"completion_tokens"`
	TotalTokens      int `db:"total_tokens"`
}

// nullTotals returns the counters of t as SQL arguments, or four NULLs that
// keep the stored counters when t is nil.
func nullTotals(t *engine.Totals) [4]any {
	if t == nil {
		return [4]any{}
	}
	return [4]any{t.Iterations, t.Usage.PromptTokens, t.Usage.CompletionTokens, t.Usage.TotalTokens}
}

func (c counterRow) totals() *engine.Totals {
	return &engine.Totals{Iterations: c.Iterations, Usage: engine.Usage{
		PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens, TotalTokens: c.TotalTokens}}
}

// RequestCancel implements engine.RunStore.
func (db *DB) RequestCancel(ctx context.Context, id string, ev engine.Event, now time.Time) (bool, error) {
	const cancel = `UPDATE agent_run
		SET status = 'cancelled', termination_reason = 'cancelled', error = ?,
			iterations = COALESCE(?, iterations), prompt_tokens = COALESCE(?, prompt_tokens),
			completion_tokens = COALESCE(?, completion_tokens), total_tokens = COALESCE(?, total_tokens),
			suspended_state = NULL, pending_digest = '', claimed_by = '', lease_expires_at = NULL, deadline_at = NULL,
			last_seq = last_seq + 1, finished_at = ?, updated_at = ?
		WHERE id = ? AND status IN ('queued', 'waiting_for_approval')
		RETURNING last_seq, iterations, prompt_tokens, completion_tokens, total_tokens`
	const flag = `UPDATE agent_run SET cancel_requested = 1, updated_at = ?
		WHERE id = ? AND status = 'running'`
	totals := nullTotals(ev.Totals)
	ms := millis(now)
	var cancelled bool
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		var res struct {
			Seq int64 `db:"last_seq"`
			counterRow
		}
		err := tx.GetContext(ctx, &res, cancel, ev.Error, totals[0], totals[1], totals[2], totals[3], ms, ms, id)
		if err == nil {
			cancelled = true
			if ev.Totals == nil {
				ev.Totals = res.totals()
			}
			return db.insertEvent(ctx, tx, id, res.Seq, ev, now)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		flagged, err := tx.ExecContext(ctx, flag, ms, id)
		if err != nil {
			return err
		}
		if n, err := flagged.RowsAffected(); err != nil || n == 1 {
			return err
		}
		st, err := lookupStatus(ctx, tx, id)
		if err != nil {
			return err
		}
		if st.Terminal() {
			return engine.ErrRunTerminal
		}
		return fmt.Errorf("unexpected status %s", st)
	})
	if err != nil {
		return false, fmt.Errorf("cancel run %s: %w", id, err)
	}
	return cancelled, nil
}

// ExpiredRuns implements engine.RunStore. INDEXED BY pins the partial lease
// index, which the planner, without statistics, passes over for the status
// index.
func (db *DB) ExpiredRuns(ctx context.Context, now time.Time, limit int) ([]engine.Run, error) {
	const q = `SELECT ` + runColumns + ` FROM agent_run INDEXED BY agent_run_lease
		WHERE status = 'running' AND lease_expires_at < ?
		ORDER BY lease_expires_at LIMIT ?`
	var rows []runRow
	if err := db.db.SelectContext(ctx, &rows, q, millis(now), clampLimit(limit, 100, 1000)); err != nil {
		return nil, fmt.Errorf("expired runs: %w", err)
	}
	return runsOf(rows), nil
}

// QueuedRuns implements engine.RunStore.
func (db *DB) QueuedRuns(ctx context.Context, limit int) ([]engine.Run, error) {
	const q = `SELECT ` + runColumns + ` FROM agent_run
		WHERE status = 'queued' ORDER BY created_at, id LIMIT ?`
	var rows []runRow
	if err := db.db.SelectContext(ctx, &rows, q, clampLimit(limit, 100, 1000)); err != nil {
		return nil, fmt.Errorf("queued runs: %w", err)
	}
	return runsOf(rows), nil
}

// Events implements engine.RunStore. It reads the primary key from after
// onwards, so its cost does not depend on how many events come before.
func (db *DB) Events(ctx context.Context, id string, after int64, limit int) ([]engine.RecordedEvent, error) {
	const q = `SELECT seq, payload FROM agent_run_event
		WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	var rows []eventRow
	if err := db.db.SelectContext(ctx, &rows, q, id, after, limit); err != nil {
		return nil, fmt.Errorf("events of run %s: %w", id, err)
	}
	if len(rows) == 0 {
		// Tell an unknown run from one with nothing new.
		if _, err := db.Run(ctx, id); err != nil {
			return nil, fmt.Errorf("events: %w", err)
		}
	}
	evs := make([]engine.RecordedEvent, len(rows))
	for i, r := range rows {
		ev, err := r.event()
		if err != nil {
			return nil, fmt.Errorf("events of run %s: %w", id, err)
		}
		evs[i] = engine.RecordedEvent{RunID: id, Seq: r.Seq, Event: ev}
	}
	return evs, nil
}

// eventRow is a row of agent_run_event as scanned.
type eventRow struct {
	Seq     int64  `db:"seq"`
	Payload string `db:"payload"`
}

func (r eventRow) event() (engine.Event, error) {
	var ev engine.Event
	if err := json.Unmarshal([]byte(r.Payload), &ev); err != nil {
		return engine.Event{}, fmt.Errorf("decode event %d: %w", r.Seq, err)
	}
	return ev, nil
}

// insertEvent stores ev as event seq of run id, chained into the run's audit
// record (eventHash): its previous hash comes from the run's chain head, or
// else costs one primary-key read (prevHash). An event without a time is
// stamped with now.
func (db *DB) insertEvent(ctx context.Context, tx writeTx, id string, seq int64, ev engine.Event, now time.Time) error {
	_, err := db.insertEventAfter(ctx, tx, id, seq, ev, now, "", false)
	return err
}

// insertEventAfter is insertEvent with the hash of event seq-1 given when
// known (the event inserted just before in the same transaction). It
// returns the new event's hash.
func (db *DB) insertEventAfter(ctx context.Context, tx writeTx, id string, seq int64, ev engine.Event, now time.Time, prev string, known bool) (string, error) {
	const q = `INSERT INTO agent_run_event (run_id, seq, kind, payload, created_at, prev_hash, hash)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
	if ev.At.IsZero() {
		ev.At = now
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return "", fmt.Errorf("encode %s event: %w", ev.Kind, err)
	}
	if !known {
		if prev, err = db.prevHash(ctx, tx, id, seq); err != nil {
			return "", fmt.Errorf("chain %s event: %w", ev.Kind, err)
		}
	}
	at := millis(ev.At)
	h := eventHash(prev, id, seq, string(ev.Kind), at, payload)
	if _, err := tx.ExecContext(ctx, q, id, seq, ev.Kind, payload, at, prev, h); err != nil {
		return "", fmt.Errorf("insert %s event: %w", ev.Kind, err)
	}
	if err := enqueueDeliveries(ctx, tx, id, seq, ev); err != nil {
		return "", err
	}
	if err := addTally(ctx, tx, id, ev); err != nil {
		return "", err
	}
	afterCommit(ctx, func() { db.heads.set(id, seq, h) })
	return h, nil
}

// addTally adds ev's share of the run's tally (engine.Tally.Count) to the
// run's tally columns, in the transaction that inserts ev; most events have
// none and cost nothing. decided_by gets a name only the first time.
func addTally(ctx context.Context, tx writeTx, id string, ev engine.Event) error {
	const q = `UPDATE agent_run SET
		denied_calls = denied_calls + ?1, failed_writes = failed_writes + ?2,
		expired_calls = expired_calls + ?3, waived_calls = waived_calls + ?4,
		decided_by = CASE
			WHEN ?5 = '' OR EXISTS (SELECT 1 FROM json_each(decided_by) WHERE value = ?5) THEN decided_by
			ELSE json_insert(decided_by, '$[#]', ?5) END
		WHERE id = ?6`
	var d engine.Tally
	d.Count(ev)
	if d.IsZero() {
		return nil
	}
	var by string
	if len(d.DecidedBy) > 0 {
		by = d.DecidedBy[0]
	}
	if _, err := tx.ExecContext(ctx, q, d.Denied, d.FailedWrites, d.Expired, d.Waived, by, id); err != nil {
		return fmt.Errorf("count %s event: %w", ev.Kind, err)
	}
	return nil
}

// lookupStatus returns the status of run id, or engine.ErrRunNotFound.
func lookupStatus(ctx context.Context, tx writeTx, id string) (engine.Status, error) {
	const q = `SELECT status FROM agent_run WHERE id = ?`
	var st string
	if err := tx.GetContext(ctx, &st, q, id); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return "", engine.ErrRunNotFound
		}
		return "", err
	}
	return engine.Status(st), nil
}

// heldError says why an update of a run that must be held by a worker
// changed no row: the run is gone (ErrRunNotFound), ended (ErrLeaseLost and
// ErrRunTerminal both match) or not held by that worker (ErrLeaseLost).
func heldError(ctx context.Context, tx writeTx, id string) error {
	st, err := lookupStatus(ctx, tx, id)
	if err != nil {
		return err
	}
	if st.Terminal() {
		return fmt.Errorf("%w: %w", engine.ErrLeaseLost, engine.ErrRunTerminal)
	}
	return engine.ErrLeaseLost
}

// decisionOn returns the latest decision event of run id on the turn with
// that digest, if any. A run has few decision events, so reading them all
// beats an index on the payload.
func decisionOn(ctx context.Context, q sqlx.QueryerContext, id, digest string) (engine.Event, bool, error) {
	const query = `SELECT seq, payload FROM agent_run_event
		WHERE run_id = ? AND kind = 'decision' AND json_extract(payload, '$.digest') = ?
		ORDER BY seq DESC LIMIT 1`
	if digest == "" {
		return engine.Event{}, false, nil
	}
	return oneEvent(ctx, q, query, id, digest)
}

// lastDecision returns the latest decision event of run id, if any.
func lastDecision(ctx context.Context, q sqlx.QueryerContext, id string) (engine.Event, bool, error) {
	const query = `SELECT seq, payload FROM agent_run_event
		WHERE run_id = ? AND kind = 'decision' ORDER BY seq DESC LIMIT 1`
	return oneEvent(ctx, q, query, id)
}

// oneEvent returns the event that query selects (seq, payload), if any.
func oneEvent(ctx context.Context, q sqlx.QueryerContext, query string, args ...any) (engine.Event, bool, error) {
	var row eventRow
	if err := sqlx.GetContext(ctx, q, &row, query, args...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return engine.Event{}, false, nil
		}
		return engine.Event{}, false, err
	}
	ev, err := row.event()
	if err != nil {
		return engine.Event{}, false, err
	}
	return ev, true, nil
}

// clampLimit returns def for n <= 0 and at most max.
func clampLimit(n, def, max int) int {
	switch {
	case n <= 0:
		return def
	case n > max:
		return max
	}
	return n
}

// insertGrant stores a standing grant and returns it with its id.
func insertGrant(ctx context.Context, tx writeTx, g engine.Grant) (engine.Grant, error) {
	const q = `INSERT INTO approval_grant (agent, run_id, tool, scope, granted_by, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`
	if err := tx.GetContext(ctx, &g.ID, q, g.Agent, g.RunID, g.Tool, g.Scope, g.By,
		millis(g.CreatedAt), millis(g.ExpiresAt)); err != nil {
		return engine.Grant{}, fmt.Errorf("insert grant: %w", err)
	}
	return g, nil
}

// NextDeadline implements engine.RunStore. It reads the partial deadline
// index.
func (db *DB) NextDeadline(ctx context.Context) (time.Time, bool, error) {
	const q = `SELECT MIN(deadline_at) FROM agent_run INDEXED BY agent_run_deadline
		WHERE status = 'waiting_for_approval' AND deadline_at IS NOT NULL`
	t, ok, err := db.earliest(ctx, q)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next deadline: %w", err)
	}
	return t, ok, nil
}

// earliest runs a query for a MIN of unix milliseconds; false when NULL.
func (db *DB) earliest(ctx context.Context, q string) (time.Time, bool, error) {
	var ms sql.NullInt64
	if err := db.db.GetContext(ctx, &ms, q); err != nil {
		return time.Time{}, false, err
	}
	if !ms.Valid {
		return time.Time{}, false, nil
	}
	return fromMillis(ms.Int64), true, nil
}

// OverdueRuns implements engine.RunStore.
func (db *DB) OverdueRuns(ctx context.Context, now time.Time, limit int) ([]engine.Run, error) {
	const q = `SELECT ` + runColumns + ` FROM agent_run INDEXED BY agent_run_deadline
		WHERE status = 'waiting_for_approval' AND deadline_at IS NOT NULL AND deadline_at < ?
		ORDER BY deadline_at LIMIT ?`
	var rows []runRow
	if err := db.db.SelectContext(ctx, &rows, q, millis(now), clampLimit(limit, 100, 1000)); err != nil {
		return nil, fmt.Errorf("overdue runs: %w", err)
	}
	return runsOf(rows), nil
}
