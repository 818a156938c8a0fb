package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
)

// execute runs one call: an unknown tool or bad arguments are answered with
// an error result; otherwise tool_started is recorded before the tool runs
// (the fence for side effects) and tool_finished after it.
func (l *Loop) execute(ctx context.Context, call ToolCall) (Invocation, error) {
	return l.run(ctx, call, nil, "")
}

// edit is how an operator changed a call before it ran.
type edit struct {
	original, by string
}

// executeEdited runs call with the arguments of the operator's edit. Its
// events record what ran and what the model proposed; its result opens with
// a note saying so.
func (l *Loop) executeEdited(ctx context.Context, call ToolCall, cv CallVerdict, by string) (Invocation, error) {
	ran := call
	ran.Arguments = cv.Arguments
	return l.run(ctx, ran, &edit{original: call.Arguments, by: by}, "")
}

// run runs a call behind its fence. waived names the rule or grant that let
// a call needing approval run without a person; it is recorded on the
// call's tool_started event.
func (l *Loop) run(ctx context.Context, call ToolCall, ed *edit, waived string) (Invocation, error) {
	t := l.tool(call.Name)
	if t == nil {
		return l.answerWithout(ctx, call, OutcomeUnknownTool, l.unknownToolText(call.Name))
	}
	args, err := parseArgs(call.Arguments)
	if err != nil {
		return l.answerWithout(ctx, call, OutcomeBadArguments, "error: arguments are not a valid JSON object: "+err.Error())
	}
	write := NeedsApproval(t)
	c := call
	started := Event{Kind: EventToolStarted, Call: &c, Write: write, External: write && HintsOf(t).External, WaivedBy: waived}
	if ed != nil {
		started.Original, started.EditedBy = ed.original, ed.by
	}
	if err := l.record(ctx, started); err != nil {
		return Invocation{}, err
	}
	if write {
		l.fault(FaultWriteStarted)
	}
	start := l.now()
	out, callErr, panicked := callTool(ctx, t, args)
	if write {
		l.fault(FaultWriteDone)
	}
	if callErr != nil {
		out = "error: " + callErr.Error()
	}
	if ed != nil {
		out = editNote(ed.by, ed.original, call.Arguments) + out
	}
	inv := Invocation{Call: call, Duration: l.now().Sub(start), Outcome: OutcomeOK, Result: truncate(out)}
	if callErr != nil {
		inv.IsError, inv.Outcome = true, OutcomeToolError
	}
	finished := Event{Kind: EventToolFinished, Call: &c, Write: write, Result: inv.Result,
		IsError: inv.IsError, Outcome: inv.Outcome, DurationMS: inv.Duration.Milliseconds(),
		Original: started.Original, EditedBy: started.EditedBy}
	if err := l.record(ctx, finished); err != nil {
		return Invocation{}, err
	}
	l.fault(FaultToolFinished)
	if write && errors.Is(callErr, ErrWriteInDoubt) {
		// The tool cannot say whether the write happened (its server went
		// away during the call): the run ends as a crash there would end it,
		// and the call is never made again.
		return Invocation{}, &RunError{Termination: TermInterrupted, Err: fmt.Errorf("tool %s (call %s): %w; it is never run again", call.Name, call.ID, callErr)}
	}
	if panicked {
		return Invocation{}, &RunError{Termination: TermToolError, Err: fmt.Errorf("tool %s: %w", call.Name, callErr)}
	}
	return inv, nil
}

// answerFor answers a call with the operator's text in place of running it.
func (l *Loop) answerFor(ctx context.Context, call ToolCall, text string) (Invocation, error) {
	text = truncate(text)
	inv := Invocation{Call: call, Result: text, Outcome: OutcomeAnswered}
	c := call
	if err := l.record(ctx, Event{Kind: EventToolFinished, Call: &c, Result: text, Outcome: OutcomeAnswered}); err != nil {
		return Invocation{}, err
	}
	return inv, nil
}

// callKind says what a call of this loop's turn is for a person.
func (l *Loop) callKind(call ToolCall) CallKind {
	if t := l.tool(call.Name); t != nil {
		return KindOf(t)
	}
	return CallUnknown
}

// answerWithout answers a call with an error result without running it.
func (l *Loop) answerWithout(ctx context.Context, call ToolCall, outcome Outcome, text string) (Invocation, error) {
	inv := Invocation{Call: call, Result: text, IsError: true, Outcome: outcome}
	c := call
	if err := l.record(ctx, Event{Kind: EventToolFinished, Call: &c, Result: text, IsError: true, Outcome: outcome}); err != nil {
		return Invocation{}, err
	}
	return inv, nil
}

func (l *Loop) unknownToolText(name string) string {
	return fmt.Sprintf("error: tool %q is not offered to this agent; available tools: %s", name, strings.Join(l.toolNames(), ", "))
}

// errToolPanic marks a tool that panicked.
var errToolPanic = errors.New("tool panicked")

// callTool runs t, turning a panic into an error.
func callTool(ctx context.Context, t Tool, args json.RawMessage) (out string, err error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			out, err, panicked = "", fmt.Errorf("%w: %v\n%s", errToolPanic, r, firstLines(string(debug.Stack()), 6)), true
		}
	}()
	out, err = t.Call(ctx, args)
	return out, err, false
}

// previews computes the previews of a suspended turn. A preview that fails or
// panics becomes a line saying so, marked as a warning; it never fails the
// run.
func (l *Loop) previews(ctx context.Context, calls []ToolCall) []Preview {
	var out []Preview
	for _, c := range calls {
		t := l.tool(c.Name)
		if t == nil {
			out = append(out, Preview{CallID: c.ID, Tool: c.Name, Lines: []string{"not executed: tool is not offered"}, Warning: true})
			continue
		}
		p, ok := t.(Previewer)
		if !ok {
			continue
		}
		pv := safePreview(ctx, p, c.Arguments)
		pv.CallID, pv.Tool = c.ID, c.Name
		out = append(out, pv)
	}
	return out
}

// safePreview runs p's preview of the arguments raw, bounded. A preview
// that fails or panics is a Warning whose one line says why.
func safePreview(ctx context.Context, p Previewer, raw string) (pv Preview) {
	defer func() {
		if r := recover(); r != nil {
			pv = Preview{Lines: []string{fmt.Sprintf("preview unavailable: it panicked: %v", r)}, Warning: true}
		}
		pv.Lines = boundLines(pv.Lines)
	}()
	args, err := parseArgs(raw)
	if err != nil {
		return Preview{Lines: []string{"preview unavailable: arguments are not a valid JSON object"}, Warning: true}
	}
	lines, err := p.Preview(ctx, args)
	if err != nil {
		return Preview{Lines: []string{"preview unavailable: " + err.Error()}, Warning: true}
	}
	return Preview{Lines: lines}
}

// boundLines keeps at most MaxPreviewLines lines of at most
// MaxPreviewLineBytes bytes each, saying what was left out.
func boundLines(lines []string) []string {
	out := make([]string, 0, min(len(lines), MaxPreviewLines+1))
	for i, ln := range lines {
		if i == MaxPreviewLines {
			out = append(out, fmt.Sprintf("… %d more line(s) not shown", len(lines)-MaxPreviewLines))
			break
		}
		if len(ln) > MaxPreviewLineBytes {
			ln = cutUTF8(ln, MaxPreviewLineBytes-len("…")) + "…"
		}
		out = append(out, ln)
	}
	return out
}
