package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Status is where a durable run stands.
type Status string

// Run statuses. Completed, failed and cancelled are terminal.
const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusWaiting   Status = "waiting_for_approval"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Terminal reports whether s is a final status.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// NewRun is what starting a run needs.
type NewRun struct {
	Agent       string
	Model       string
	Prompt      string
	InitiatedBy string
}

// Run is a durable run as stored.
type Run struct {
	ID              string
	Agent           string
	Model           string
	Prompt          string
	Status          Status
	InitiatedBy     string
	Iterations      int
	Usage           Usage
	Termination     Termination
	Error           string
	PendingDigest   string
	ClaimedBy       string
	LeaseExpiresAt  time.Time // zero when no lease is held
	Attempts        int       // how many times a worker acquired the run
	CancelRequested bool
	LastSeq         int64 // seq of the run's last event
	CreatedAt       time.Time
	StartedAt       time.Time // zero until first started
	DeadlineAt      time.Time // when the waiting turn expires; zero when none
	UpdatedAt       time.Time
	FinishedAt      time.Time // zero until terminal
	// Tally counts what happened to the run's calls so far. The store keeps
	// it as events are recorded (Tally.Count); it is what the run's outcome
	// says besides its status.
	Tally Tally
}

// RecordedEvent is an event as stored, with its place in the run's stream.
type RecordedEvent struct {
	RunID string
	Seq   int64
	Event Event
}

// Finish is how a run ends.
type Finish struct {
	Status      Status // completed, failed or cancelled
	Termination Termination
	Error       string
	// Totals are the run's final counters. Nil keeps the counters already
	// stored (every model turn adds to them), for an end that has no loop
	// result, such as a write that failed or a cancel of a claimed run.
	Totals *Totals
	// Event is the finished or failed event, appended in the same
	// transaction; when its Totals are nil the store fills them with the
	// run's final counters, so the event never records zeros by mistake.
	Event Event
	// Before are events of the run not yet written (the model turn with
	// the answer, say), appended first in the same transaction; only for a
	// run owner holds.
	Before []Event
	Now    time.Time
}

// Suspension is what a waiting run stores: its encoded state and the digest
// of the turn it waits on.
type Suspension struct {
	State  []byte
	Digest string
}

// Decode decodes the stored state and checks that it is the turn the run
// waits on. A state that does not decode, or that decodes to another turn
// than the stored digest (edited or damaged), is ErrCorruptState: deciding
// it again could never succeed, so callers offer cancel instead.
func (s Suspension) Decode() (*SuspendedState, error) {
	st, err := DecodeState(s.State)
	if err != nil {
		return nil, err
	}
	if st.Digest() != s.Digest {
		return nil, fmt.Errorf("%w: the stored calls do not match the turn the run waits on", ErrCorruptState)
	}
	return st, nil
}

// Suspend is a run's move to waiting for approval.
type Suspend struct {
	Suspension       // the encoded state and the digest of the pending turn
	Event      Event // the suspended event, appended in the same transaction
	// Before are events of the run not yet written (the model turn that
	// asks for approval, say), appended first in the same transaction.
	Before []Event
	Now    time.Time
	// DeadlineAt is when the turn expires without a decision; zero never.
	DeadlineAt time.Time
}

// Claim is a decision's atomic take-over of a waiting run.
type Claim struct {
	Digest     string // must equal the run's pending digest
	Owner      string // worker that will resume the run
	LeaseUntil time.Time
	Event      Event // the decision event, appended in the same transaction
	Now        time.Time
	// Grants are written in the same transaction (their ids are set by the
	// store).
	Grants []Grant
}

// RunStore persists durable runs and their events. This interface is the
// contract; an implementation documents only how it keeps it. Every status
// transition is one conditional update that changes exactly one row or
// fails with a typed error, and writes the transition's event in the same
// transaction (see EventKind.Transition). An unknown run is ErrRunNotFound
// everywhere. "Held by owner" means status running and claimed by owner; a
// method that needs it fails with ErrLeaseLost otherwise, which also
// matches ErrRunTerminal when the run has ended.
type RunStore interface {
	// CreateRun stores a queued run and its prompt event (seq 1).
	CreateRun(ctx context.Context, r NewRun, prompt Event, now time.Time) (Run, error)
	// Run returns one run.
	Run(ctx context.Context, id string) (Run, error)
	// AcquireRun makes owner the worker of a queued run, or of a running run
	// whose lease expired before now: status running, a fresh lease, attempts
	// incremented. It fails with ErrLeaseLost when the run is in neither
	// state (held by a live lease, waiting or ended).
	AcquireRun(ctx context.Context, id, owner string, now, leaseUntil time.Time) (Run, error)
	// AppendEvents appends evs, in order and in one transaction, while
	// owner holds the run, and renews the lease; a model turn also adds to
	// the run's counters, so a running or waiting run shows its totals so
	// far. It returns the seq of the last event (seqs are contiguous from 1
	// per run) and whether a cancel was requested.
	AppendEvents(ctx context.Context, id, owner string, evs []Event, leaseUntil time.Time) (lastSeq int64, cancelRequested bool, err error)
	// RenewLease sets the lease of a run owner holds to until and reports
	// whether a cancel was requested. A lease renewed to now expires at once
	// (used at shutdown so the next start carries the run on).
	RenewLease(ctx context.Context, id, owner string, until time.Time) (cancelRequested bool, err error)
	// SuspendRun moves a run owner holds to waiting_for_approval, stores the
	// encoded state and its digest, drops the lease and appends s.Event.
	SuspendRun(ctx context.Context, id, owner string, s Suspend) error
	// SuspendedState returns the stored state of a waiting run with the
	// digest of the turn it waits on, read together. The state stays stored
	// while a claimed run resumes, until it suspends again or ends, so a
	// running run may return one too. It fails with ErrRunTerminal, or
	// ErrNotWaiting when no state is stored.
	SuspendedState(ctx context.Context, id string) (Suspension, error)
	// ClaimRun moves waiting_for_approval -> running for c.Owner when the
	// run waits on c.Digest, sets the lease, appends c.Event (the decision)
	// and returns the stored state, which stays stored. Losers get a
	// *DecidedError naming the decision on c.Digest whenever there is one
	// (whatever happened to the run since); else ErrRunTerminal, ErrStaleTurn
	// (it waits on another turn), *DecidedError naming the latest decision
	// (running after a decision) or ErrNotWaiting.
	ClaimRun(ctx context.Context, id string, c Claim) ([]byte, error)
	// ReleaseRun hands a claimed run back: running -> waiting_for_approval
	// for owner, with its state and digest untouched, appending ev (the
	// released event, saying why). A held run with no state to wait on is
	// ErrNotWaiting.
	ReleaseRun(ctx context.Context, id, owner string, ev Event, now time.Time) error
	// FinishRun moves a non-terminal run to the terminal f.Status, writes
	// f.Totals (nil keeps the stored counters), clears state, digest and
	// lease and appends f.Event, whose nil Totals are filled with the final
	// counters. With an owner the run must be held by owner; with "" it
	// must be queued or waiting (else ErrLeaseLost). A terminal run is never
	// finished again: ErrRunTerminal.
	FinishRun(ctx context.Context, id, owner string, f Finish) error
	// RequestCancel cancels a queued or waiting run at once, appending ev
	// (its nil Totals filled like FinishRun's), and returns cancelled=true;
	// for a running run it sets the cancel flag that the worker sees at its
	// next step and returns false. A terminal run is ErrRunTerminal.
	RequestCancel(ctx context.Context, id string, ev Event, now time.Time) (cancelled bool, err error)
	// LastDecision returns the latest decision event of a run and true, or
	// false when it has none.
	LastDecision(ctx context.Context, id string) (Event, bool, error)
	// DecisionOn returns the latest decision event of a run on the turn
	// with that digest and true, or false when that turn was not decided.
	DecisionOn(ctx context.Context, id, digest string) (Event, bool, error)
	// NextLeaseExpiry returns the earliest lease expiry of the running runs
	// and true, or false when no run holds a lease.
	NextLeaseExpiry(ctx context.Context) (time.Time, bool, error)
	// NextDeadline returns the earliest approval deadline of the waiting
	// runs and true, or false when none has one.
	NextDeadline(ctx context.Context) (time.Time, bool, error)
	// OverdueRuns lists up to limit waiting runs whose approval deadline
	// passed before now, the most overdue first.
	OverdueRuns(ctx context.Context, now time.Time, limit int) ([]Run, error)
	// ExpiredRuns lists up to limit running runs whose lease expired before
	// now, the longest expired first.
	ExpiredRuns(ctx context.Context, now time.Time, limit int) ([]Run, error)
	// QueuedRuns lists up to limit queued runs, oldest first.
	QueuedRuns(ctx context.Context, limit int) ([]Run, error)
	// Events returns up to limit events with seq > after, in order; a limit
	// of zero or less means all.
	Events(ctx context.Context, id string, after int64, limit int) ([]RecordedEvent, error)
}

// Errors of durable runs.
var (
	ErrRunNotFound = errors.New("run not found")
	ErrRunTerminal = errors.New("run has already ended")
	ErrLeaseLost   = errors.New("run is no longer held by this worker")
	ErrNotWaiting  = errors.New("run is not waiting for approval")
)

// ErrGrantsNotAccepted refuses a standing grant for an agent that needs a
// second approver: each of its writes needs two people.
var ErrGrantsNotAccepted = errors.New("this agent needs a second approver and takes no standing grants")

// DeadlineError refuses a decision that came after the turn's approval
// deadline; the turn was answered as expired.
type DeadlineError struct {
	At time.Time
}

func (e *DeadlineError) Error() string {
	return "the approval deadline passed at " + e.At.UTC().Format(time.RFC3339)
}

// DecidedError says a waiting turn was already decided, by whom and when.
type DecidedError struct {
	By  string
	At  time.Time
	Dec Verdict
}

func (e *DecidedError) Error() string {
	if e.By == "" {
		return "turn already decided"
	}
	return fmt.Sprintf("turn already decided: %s by %s at %s", e.Dec, e.By, e.At.UTC().Format(time.RFC3339))
}
