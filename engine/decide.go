package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Decide applies a person's decision to a waiting run. It checks the rules
// that do not depend on roles (the state decodes, the digest names the
// pending turn, four-eyes), then claims the run atomically: of many
// concurrent decisions exactly one wins and the rest get *DecidedError. The
// winner's run resumes in the background. A refused decision changes nothing.
func (r *Runtime) Decide(ctx context.Context, runID string, d Decision) error {
	if utf8.RuneCountInString(d.Reason) > MaxReasonRunes || !utf8.ValidString(d.Reason) {
		return fmt.Errorf("decide: %w", &InputError{Field: "reason",
			Message: fmt.Sprintf("The reason must be at most %d characters of text.", MaxReasonRunes)})
	}
	if r.isClosed() {
		return ErrClosed
	}
	run, err := r.cfg.Store.Run(ctx, runID)
	if err != nil {
		return fmt.Errorf("decide: %w", err)
	}
	if run.Status != StatusWaiting {
		return r.notWaitingErr(ctx, run, d)
	}
	sus, err := r.cfg.Store.SuspendedState(ctx, runID)
	if errors.Is(err, ErrRunTerminal) || errors.Is(err, ErrNotWaiting) {
		// Decided and moved on since the run was read: say by whom.
		return r.movedOnErr(ctx, runID, d)
	}
	if err != nil {
		return fmt.Errorf("decide: %w", err)
	}
	if sus.Digest != run.PendingDigest {
		return r.movedOnErr(ctx, runID, d)
	}
	state, err := sus.Decode()
	if err != nil {
		r.log.Error("decide: refusing corrupt state", "run", runID, "err", err)
		return fmt.Errorf("decide run %s: %w", runID, err)
	}
	if d.Digest != sus.Digest {
		return r.staleErr(ctx, runID, d)
	}
	if _, ok := r.agents[run.Agent]; !ok {
		return fmt.Errorf("decide run %s: %w %q", runID, ErrUnknownAgent, run.Agent)
	}
	if d.Verdict.Approves() && !r.MayApprove(run, d.By) {
		return fmt.Errorf("decide run %s: %w", runID, ErrSelfApproval)
	}
	if _, err := r.cfg.Models(run.Model); err != nil {
		return fmt.Errorf("decide run %s: %w", runID, err)
	}

	owner := r.newOwner()
	now := r.cfg.Now()
	claimed, err := r.cfg.Store.ClaimRun(ctx, runID, Claim{
		Digest: d.Digest, Owner: owner, LeaseUntil: now.Add(r.cfg.Lease), Now: now,
		Event: Event{Kind: EventDecision, At: now, Decision: d.Verdict, By: d.By, Reason: d.Reason, Digest: d.Digest},
	})
	if err != nil {
		return fmt.Errorf("decide run %s: %w", runID, err)
	}
	// The resume must use exactly the state that was claimed. It is the one
	// decoded above unless it changed in between; only then decode again.
	if !bytes.Equal(claimed, sus.State) {
		if state, err = (Suspension{State: claimed, Digest: d.Digest}).Decode(); err != nil {
			r.release(runID, owner, "the stored state did not decode after the claim")
			return fmt.Errorf("decide run %s: %w", runID, err)
		}
	}
	if r.cfg.Fault != nil {
		r.cfg.Fault(FaultClaimed)
	}
	r.enqueue(job{runID: runID, owner: owner, state: state, decision: d})
	return nil
}

// notWaitingErr explains why a run that is not waiting cannot be decided:
// already decided (by whom and when), ended, or not waiting at all. A
// decision on the caller's turn is always named, so the loser of a race
// learns who won even when the winner's run has ended since.
func (r *Runtime) notWaitingErr(ctx context.Context, run Run, d Decision) error {
	if err := r.decidedErr(ctx, run.ID, d.Digest); err != nil {
		return err
	}
	ev, ok, err := r.cfg.Store.LastDecision(ctx, run.ID)
	if err != nil {
		return fmt.Errorf("decide run %s: %w", run.ID, err)
	}
	if ok && run.Status == StatusRunning {
		return fmt.Errorf("decide run %s: %w", run.ID, &DecidedError{By: ev.By, At: ev.At, Dec: ev.Decision})
	}
	if run.Status.Terminal() {
		return fmt.Errorf("decide run %s: %w", run.ID, ErrRunTerminal)
	}
	return fmt.Errorf("decide run %s: %w", run.ID, ErrNotWaiting)
}

// movedOnErr explains a run that changed between two reads of one decision:
// it is read again and explained as notWaitingErr does, or as stale when it
// waits on another turn that nobody decided for the caller.
func (r *Runtime) movedOnErr(ctx context.Context, runID string, d Decision) error {
	run, err := r.cfg.Store.Run(ctx, runID)
	if err != nil {
		return fmt.Errorf("decide: %w", err)
	}
	if run.Status == StatusWaiting {
		return r.staleErr(ctx, runID, d)
	}
	return r.notWaitingErr(ctx, run, d)
}

// staleErr refuses a decision on a turn the run no longer waits on, naming
// the decision that moved the run past it when there was one.
func (r *Runtime) staleErr(ctx context.Context, runID string, d Decision) error {
	if err := r.decidedErr(ctx, runID, d.Digest); err != nil {
		return err
	}
	return fmt.Errorf("decide run %s: %w", runID, ErrStaleTurn)
}

// decidedErr returns a *DecidedError naming the decision on the turn with
// digest, or nil when that turn was not decided.
func (r *Runtime) decidedErr(ctx context.Context, runID, digest string) error {
	ev, ok, err := r.cfg.Store.DecisionOn(ctx, runID, digest)
	if err != nil {
		return fmt.Errorf("decide run %s: %w", runID, err)
	}
	if !ok {
		return nil
	}
	return fmt.Errorf("decide run %s: %w", runID, &DecidedError{By: ev.By, At: ev.At, Dec: ev.Decision})
}

// release hands a claimed run back to waiting.
func (r *Runtime) release(runID, owner, why string) {
	now := r.cfg.Now()
	if err := r.cfg.Store.ReleaseRun(context.Background(), runID, owner,
		Event{Kind: EventReleased, At: now, Error: "decision not applied: " + why}, now); err != nil {
		r.log.Error("release", "run", runID, "err", err)
	}
}
