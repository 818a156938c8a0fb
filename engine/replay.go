package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Checkpoint is the last durable point of a run, rebuilt from its event
// stream: the transcript so far, the counters, the calls of the last turn
// that were not answered yet and the decision on that turn, if any.
type Checkpoint struct {
	Transcript []Message
	Iterations int
	Usage      Usage
	// Turn is the calls of the last assistant turn; Open those of them that
	// have no tool_finished event yet.
	Turn     []ToolCall
	Open     []ToolCall
	Decision *Decision
	// Offered lists the tools offered when the last turn was suspended (nil
	// when it was not, or for events recorded before it was kept), so an
	// approved call whose tool was withdrawn since is answered as not
	// permitted rather than as an unknown tool.
	Offered []string
}

// ErrWriteInDoubt says an approved side-effecting call was started and never
// reported finished: it may or may not have happened, so the run must not be
// continued (at most once for side effects). A tool that requires approval
// returns an error wrapping it when it cannot tell whether its call took
// effect (its server went away during the call): the loop records the call
// as failed and ends the run as interrupted during a write.
var ErrWriteInDoubt = errors.New("a write was interrupted: started but not finished")

// Replay rebuilds the checkpoint of a run from its opening transcript (see
// Loop.Assemble) and its events in order. It fails with ErrWriteInDoubt when a
// write was started and not finished, and with ErrCorruptState when the
// events do not form a valid run.
func Replay(opening []Message, events []Event) (Checkpoint, error) {
	cp := Checkpoint{Transcript: cloneMessages(opening)}
	open := map[string]bool{}
	started := map[string]Event{}
	for i, ev := range events {
		switch ev.Kind {
		case EventModelTurn:
			if len(open) > 0 {
				return Checkpoint{}, fmt.Errorf("%w: event %d: model turn while calls are unanswered", ErrCorruptState, i)
			}
			cp.Transcript = append(cp.Transcript, Message{Role: RoleAssistant, Content: ev.Text, ToolCalls: cloneCalls(ev.ToolCalls)})
			cp.Iterations++
			if ev.Usage != nil {
				cp.Usage = cp.Usage.Add(*ev.Usage)
			}
			cp.Turn = cloneCalls(ev.ToolCalls)
			cp.Decision = nil
			cp.Offered = nil
			for _, c := range ev.ToolCalls {
				open[c.ID] = true
			}
		case EventToolStarted:
			if ev.Call == nil || !open[ev.Call.ID] {
				return Checkpoint{}, fmt.Errorf("%w: event %d: start of a call that is not open", ErrCorruptState, i)
			}
			started[ev.Call.ID] = ev
		case EventToolFinished:
			if ev.Call == nil || !open[ev.Call.ID] {
				return Checkpoint{}, fmt.Errorf("%w: event %d: result of a call that is not open", ErrCorruptState, i)
			}
			delete(open, ev.Call.ID)
			delete(started, ev.Call.ID)
			cp.Transcript = append(cp.Transcript, Message{Role: RoleTool, ToolCallID: ev.Call.ID, ToolName: ev.Call.Name,
				Content: ev.Result, IsError: ev.IsError})
		case EventSuspended:
			cp.Offered = slices.Clone(ev.Offered)
		case EventDecision:
			cp.Decision = &Decision{Verdict: ev.Decision, Calls: ev.Verdicts, Digest: ev.Digest, By: ev.By, Reason: ev.Reason}
		case EventReleased:
			// The decision was handed back unapplied: the turn waits again.
			cp.Decision = nil
		}
	}
	for _, ev := range started {
		if ev.Write {
			return cp, fmt.Errorf("%w: %s (call %s)", ErrWriteInDoubt, ev.Call.Name, ev.Call.ID)
		}
	}
	for _, c := range cp.Turn {
		if open[c.ID] {
			cp.Open = append(cp.Open, c)
		}
	}
	return cp, nil
}

// Continue carries a run on from a checkpoint: it answers the open calls of
// the last turn (running them if the turn needs no approval or was approved,
// denying them if it was denied, or suspending again if the turn still waits
// for a decision), then re-enters the loop.
func (l *Loop) Continue(ctx context.Context, cp Checkpoint) (*Result, error) {
	transcript := cloneMessages(cp.Transcript)
	if len(transcript) == 0 {
		return nil, fmt.Errorf("continue: %w: empty transcript", ErrCorruptState)
	}
	var trace []Invocation
	if len(cp.Open) > 0 {
		g, err := l.gate(ctx, cp.Turn)
		if err != nil {
			return nil, err
		}
		if cp.Decision == nil && g.wait {
			if len(cp.Open) != len(cp.Turn) {
				return nil, fmt.Errorf("continue: %w: calls of a turn awaiting approval were answered", ErrCorruptState)
			}
			state := &SuspendedState{
				Version: StateVersion, Transcript: transcript, Pending: cloneCalls(cp.Turn),
				Iterations: cp.Iterations, Usage: cp.Usage, OfferedTools: l.toolNames(), Previews: l.previews(ctx, cp.Turn),
			}
			if err := l.record(ctx, Event{Kind: EventSuspended, Pending: state.Pending, Previews: state.Previews,
				Digest: TurnDigest(state.Pending), Offered: state.OfferedTools,
				Totals: &Totals{Iterations: cp.Iterations, Usage: cp.Usage}}); err != nil {
				return nil, err
			}
			return &Result{Transcript: transcript, Iterations: cp.Iterations, Usage: cp.Usage}, &ApprovalRequiredError{State: state}
		}
		for _, call := range cp.Open {
			if err := ctx.Err(); err != nil {
				return nil, l.fail(ctx, TermCancelled, err, cp.Iterations, cp.Usage)
			}
			var inv Invocation
			var err error
			if cp.Decision != nil {
				inv, err = l.answerDecided(ctx, call, *cp.Decision, cp.Offered)
			} else {
				inv, err = l.run(ctx, call, nil, g.waived[call.ID])
			}
			if err != nil {
				return nil, err
			}
			trace = append(trace, inv)
			transcript = append(transcript, toolMessage(inv))
		}
	}
	return l.runLoop(ctx, transcript, cp.Iterations, cp.Usage, trace)
}
