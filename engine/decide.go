package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
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
	if d.Verdict == VerdictExpire {
		return fmt.Errorf("decide: %w", &InputError{Field: "decision", Message: "Only the deadline expires a turn."})
	}
	return r.decide(ctx, runID, d, false)
}

// decide checks and claims a decision; expiring is the runtime's own
// decision when a turn's deadline passed.
func (r *Runtime) decide(ctx context.Context, runID string, d Decision, expiring bool) error {
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
	if !expiring && !run.DeadlineAt.IsZero() && !r.cfg.Now().Before(run.DeadlineAt) {
		// Too late: expire the turn now rather than wait for the reaper.
		if err := r.expire(ctx, run); err != nil && !errors.As(err, new(*DecidedError)) {
			r.log.Warn("expire on a late decision", "run", runID, "err", err)
		}
		return fmt.Errorf("decide run %s: %w", runID, &DeadlineError{At: run.DeadlineAt})
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
	agent, ok := r.agents[run.Agent]
	if !ok {
		return fmt.Errorf("decide run %s: %w %q", runID, ErrUnknownAgent, run.Agent)
	}
	verdicts, err := r.checkVerdicts(agent, run, state.Pending, d)
	if err != nil {
		return fmt.Errorf("decide run %s: %w", runID, err)
	}
	now := r.cfg.Now()
	grants, err := grantsOf(agent.AcceptsGrants() && !r.NeedsSecondApprover(run.Agent), run, verdicts, d, now)
	if err != nil {
		return fmt.Errorf("decide run %s: %w", runID, err)
	}
	if !expiring {
		// The resume gets exactly the verdicts checked here. An expiry
		// stays one verdict on every call: no person gave per-call ones.
		d.Calls, d.Verdict = verdicts, ""
	}
	if _, err := r.cfg.Models(run.Model); err != nil {
		return fmt.Errorf("decide run %s: %w", runID, err)
	}

	owner := r.newOwner()
	claimed, err := r.cfg.Store.ClaimRun(ctx, runID, Claim{
		Digest: d.Digest, Owner: owner, LeaseUntil: now.Add(r.cfg.Lease), Now: now, Grants: grants,
		Event: Event{Kind: EventDecision, At: now, Decision: Summary(verdicts), Verdicts: verdicts,
			By: d.By, Reason: d.Reason, Digest: d.Digest},
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

// expire answers the waiting turn of run as expired: its deadline passed.
// It is claimed like any decision, so of an expiry and a late decision
// exactly one wins.
func (r *Runtime) expire(ctx context.Context, run Run) error {
	return r.decide(ctx, run.ID, Decision{Verdict: VerdictExpire, Digest: run.PendingDigest, By: ExpiredBy,
		Reason: "the approval deadline passed at " + run.DeadlineAt.UTC().Format(time.RFC3339)}, true)
}

// ExpiredBy is who the decision event names when a turn's deadline passed.
const ExpiredBy = "deadline"

// grantsOf turns the standing grants a decision asks for into grants: each
// names a tool the decision approves (or edits), and the agent must accept
// grants: not one that needs a second approver, by itself or because the
// runtime requires one of every agent.
func grantsOf(accepts bool, run Run, verdicts []CallVerdict, d Decision, now time.Time) ([]Grant, error) {
	if len(d.Grants) == 0 {
		return nil, nil
	}
	if !accepts {
		return nil, ErrGrantsNotAccepted
	}
	var out []Grant
	for _, gr := range d.Grants {
		approved := false
		for _, cv := range verdicts {
			approved = approved || (cv.Tool == gr.Tool && cv.Verdict.Approves())
		}
		if !approved {
			return nil, &InputError{Field: "grants", Message: fmt.Sprintf("A grant for %s needs an approval of a %s call in this decision.", gr.Tool, gr.Tool)}
		}
		g := Grant{Agent: run.Agent, Tool: gr.Tool, Scope: gr.Scope, By: d.By, CreatedAt: now}
		switch gr.Scope {
		case GrantRun:
			g.RunID, g.ExpiresAt = run.ID, now.Add(MaxRunGrant)
		case GrantAgent:
			period := gr.For
			if period <= 0 {
				period = DefaultGrantPeriod
			}
			if period > MaxAgentGrant {
				return nil, &InputError{Field: "grants", Message: fmt.Sprintf("A grant to the agent lasts at most %s.", MaxAgentGrant)}
			}
			g.ExpiresAt = now.Add(period)
		default:
			return nil, &InputError{Field: "grants", Message: "A grant is for this run or for this agent."}
		}
		out = append(out, g)
	}
	return out, nil
}

// checkVerdicts resolves a decision into one verdict per pending call and
// checks what depends on the person and the agent: four-eyes (the initiator
// may deny or answer, not approve or edit) and edited arguments against
// the tool's schema. Every refusal changes nothing.
func (r *Runtime) checkVerdicts(agent Agent, run Run, pending []ToolCall, d Decision) ([]CallVerdict, error) {
	kind := func(c ToolCall) CallKind { return KindOf(agentTool(agent, c.Name)) }
	verdicts, err := d.Resolve(pending, kind)
	if err != nil {
		return nil, err
	}
	for _, cv := range verdicts {
		if cv.Verdict.Approves() && !r.MayApprove(run, d.By) {
			return nil, ErrSelfApproval
		}
		if cv.Verdict == VerdictEdit {
			if err := r.checkArgs(agentTool(agent, cv.Tool), cv); err != nil {
				return nil, err
			}
		}
	}
	return verdicts, nil
}

// checkArgs checks edited arguments against the tool's schema.
func (r *Runtime) checkArgs(t Tool, cv CallVerdict) error {
	if r.cfg.CheckArgs == nil || t == nil {
		return nil
	}
	if err := r.cfg.CheckArgs(t.Schema(), json.RawMessage(cv.Arguments)); err != nil {
		return &InputError{Field: "calls." + cv.CallID + ".arguments",
			Message: fmt.Sprintf("The edited arguments of %s do not fit the tool: %v", cv.CallID, err)}
	}
	return nil
}

// PreviewEdit says what a pending call of a waiting run would do with the
// edited arguments args, as its tool's preview, so the operator sees the
// change before confirming it. It refuses what Decide would refuse for that
// edit (not waiting, stale, unknown call, arguments that are not a JSON
// object or do not fit the schema) and changes nothing. A tool without a
// preview gives no lines; one whose preview fails gives a Warning.
func (r *Runtime) PreviewEdit(ctx context.Context, runID, digest, callID, args string) (Preview, error) {
	run, err := r.cfg.Store.Run(ctx, runID)
	if err != nil {
		return Preview{}, fmt.Errorf("preview edit: %w", err)
	}
	if run.Status != StatusWaiting {
		return Preview{}, r.notWaitingErr(ctx, run, Decision{Digest: digest})
	}
	sus, err := r.cfg.Store.SuspendedState(ctx, runID)
	if err != nil {
		return Preview{}, fmt.Errorf("preview edit: %w", err)
	}
	state, err := sus.Decode()
	if err != nil {
		return Preview{}, fmt.Errorf("preview edit of run %s: %w", runID, err)
	}
	if digest != sus.Digest {
		return Preview{}, r.staleErr(ctx, runID, Decision{Digest: digest})
	}
	agent, ok := r.agents[run.Agent]
	if !ok {
		return Preview{}, fmt.Errorf("preview edit of run %s: %w %q", runID, ErrUnknownAgent, run.Agent)
	}
	var call *ToolCall
	for i := range state.Pending {
		if state.Pending[i].ID == callID {
			call = &state.Pending[i]
		}
	}
	if call == nil {
		return Preview{}, &InputError{Field: "calls", Message: fmt.Sprintf("There is no pending call %q in this turn.", callID)}
	}
	one := Decision{Calls: []CallVerdict{{CallID: callID, Verdict: VerdictEdit, Arguments: args}}}
	kind := func(c ToolCall) CallKind { return KindOf(agentTool(agent, c.Name)) }
	verdicts, err := one.Resolve([]ToolCall{*call}, kind)
	if err != nil {
		return Preview{}, err
	}
	t := agentTool(agent, call.Name)
	if err := r.checkArgs(t, verdicts[0]); err != nil {
		return Preview{}, err
	}
	p, ok := t.(Previewer)
	if !ok {
		return Preview{CallID: callID, Tool: call.Name}, nil
	}
	pv := safePreview(ctx, p, verdicts[0].Arguments)
	pv.CallID, pv.Tool = callID, call.Name
	return pv, nil
}

// CallKind says what a call of the agent's turn is for a person: a read, a
// write, a question, or a tool the agent does not offer.
func (r *Runtime) CallKind(agent string, call ToolCall) CallKind {
	a, ok := r.agents[agent]
	if !ok {
		return CallUnknown
	}
	return KindOf(agentTool(a, call.Name))
}

// OfferedTool returns the agent's tool of that name as it is offered now,
// or nil when the agent or the tool is not: KindOf and HintsOf say what
// its calls are for the person deciding them.
func (r *Runtime) OfferedTool(agent, name string) Tool {
	a, ok := r.agents[agent]
	if !ok {
		return nil
	}
	return agentTool(a, name)
}

// agentTool returns the agent's tool with that name, or nil.
func agentTool(a Agent, name string) Tool {
	for _, t := range a.OfferedTools() {
		if t.Name() == name {
			return t
		}
	}
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
