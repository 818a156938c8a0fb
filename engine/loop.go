package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of the loop.
const (
	// DefaultMaxIterations bounds the model calls of a run when neither the
	// loop nor the agent sets a limit.
	DefaultMaxIterations = 10
	// MaxResultBytes bounds a tool result; a longer one is cut with a note.
	MaxResultBytes = 50_000
	// MaxPreviewLines and MaxPreviewLineBytes bound a call's preview.
	MaxPreviewLines     = 20
	MaxPreviewLineBytes = 500
	// MaxCallsPerTurn bounds the tool calls of one model turn; calls past
	// it are dropped from the turn before anything runs or waits.
	MaxCallsPerTurn = 16
)

// DefaultSystemPrompt opens every transcript unless the loop sets its own.
const DefaultSystemPrompt = "You are an agent running inside countersign. " +
	"Use the tools offered to you to do what the user asks, then answer in plain words. " +
	"Calls that change anything wait for a person's approval; when a call is denied, " +
	"do not retry it or work around it: tell the user what was not done and why."

// Loop runs an agent: it sends the transcript to the model, runs the tools
// the model calls and feeds their results back until the model answers.
// A turn that calls a tool requiring approval suspends the loop with an
// *ApprovalRequiredError; Resume continues it after a person's decision.
type Loop struct {
	Model         Model
	Tools         []Tool
	SystemPrompt  string // DefaultSystemPrompt when empty
	Instructions  string // the agent's instructions, after the system prompt
	MaxIterations int    // DefaultMaxIterations when zero
	Recorder      Recorder
	Now           func() time.Time
	// Fault, when set, is called at the loop's fault points (see
	// FaultModelCall and the others). It exists for fault-injection tests
	// and is nil in production.
	Fault func(point string)
}

// Fault points of the loop and the runtime, named for fault-injection tests
// that stop the process there.
const (
	FaultModelCall    = "model_call"    // a model call is about to be made
	FaultWriteStarted = "write_started" // tool_started of a write is committed, the tool has not run
	FaultWriteDone    = "write_done"    // a write ran, its tool_finished is not recorded yet
	FaultToolFinished = "tool_finished" // a tool_finished event was just committed
	FaultClaimed      = "claimed"       // a decision claimed a run, nothing of it ran yet
)

func (l *Loop) fault(point string) {
	if l.Fault != nil {
		l.Fault(point)
	}
}

// NewLoop returns a loop for agent a on model m, reporting to rec.
func NewLoop(a Agent, m Model, rec Recorder) *Loop {
	return &Loop{
		Model:         m,
		Tools:         a.Tools,
		Instructions:  a.Instructions,
		MaxIterations: a.MaxIterations,
		Recorder:      rec,
	}
}

// Request is what starts a run.
type Request struct {
	Prompt string
}

// Invocation is one tool call answered in a loop segment.
type Invocation struct {
	Call     ToolCall
	Result   string
	IsError  bool
	Outcome  Outcome
	Duration time.Duration
}

// Result is how a run ended. Iterations and Usage span the whole run across
// suspensions; Trace lists the invocations of the last segment only.
type Result struct {
	Answer      string
	Transcript  []Message
	Trace       []Invocation
	Iterations  int
	Usage       Usage
	Termination Termination
}

// Run assembles the transcript (system prompt, agent instructions, user
// prompt) and loops until the model answers, the iteration limit is reached,
// or a turn needs approval (*ApprovalRequiredError).
func (l *Loop) Run(ctx context.Context, req Request) (*Result, error) {
	if strings.TrimSpace(req.Prompt) == "" {
		return nil, errors.New("run: empty prompt")
	}
	return l.runLoop(ctx, l.Assemble(req.Prompt), 0, Usage{}, nil)
}

// Assemble returns the opening transcript of a run for prompt.
func (l *Loop) Assemble(prompt string) []Message {
	system := l.SystemPrompt
	if system == "" {
		system = DefaultSystemPrompt
	}
	msgs := []Message{{Role: RoleSystem, Content: system}}
	if l.Instructions != "" {
		msgs = append(msgs, Message{Role: RoleSystem, Content: l.Instructions})
	}
	return append(msgs, Message{Role: RoleUser, Content: prompt})
}

// Resume continues a suspended run after a person's decision. It refuses a
// state that does not validate (ErrCorruptState) and a decision made on
// another turn (ErrStaleTurn) before it does anything. On approval it runs
// every pending call whose tool is still offered; on denial it answers every
// pending call with a denial carrying the reason. Then it re-enters the loop
// with the counters from before the suspension folded in.
func (l *Loop) Resume(ctx context.Context, state *SuspendedState, d Decision) (*Result, error) {
	if state == nil {
		return nil, fmt.Errorf("resume: %w: no state", ErrCorruptState)
	}
	if err := state.Validate(); err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	if d.Digest != TurnDigest(state.Pending) {
		return nil, fmt.Errorf("resume: %w", ErrStaleTurn)
	}
	if err := l.record(ctx, Event{Kind: EventDecision, Decision: d.Verdict, By: d.By, Reason: d.Reason, Digest: d.Digest}); err != nil {
		return nil, err
	}

	transcript := cloneMessages(state.Transcript)
	var trace []Invocation
	for _, call := range state.Pending {
		if err := ctx.Err(); err != nil {
			return nil, l.fail(ctx, TermCancelled, err, state.Iterations, state.Usage)
		}
		inv, err := l.answerDecided(ctx, call, d, state.OfferedTools)
		if err != nil {
			return nil, err
		}
		trace = append(trace, inv)
		transcript = append(transcript, toolMessage(inv))
	}
	return l.runLoop(ctx, transcript, state.Iterations, state.Usage, trace)
}

// answerDecided answers one call of a decided turn: on approval it runs the
// call if its tool was offered when the turn was suspended (offered, unless
// nil) and still is; on denial it answers with the denial.
func (l *Loop) answerDecided(ctx context.Context, call ToolCall, d Decision, offered []string) (Invocation, error) {
	switch {
	case !d.Verdict.Approves():
		return l.answerWithout(ctx, call, OutcomeDenied, denialText(d.Reason))
	case offered != nil && !contains(offered, call.Name):
		return l.answerWithout(ctx, call, OutcomeUnknownTool, l.unknownToolText(call.Name))
	case l.tool(call.Name) == nil && offered != nil:
		return l.answerWithout(ctx, call, OutcomeNotPermitted, NotPermittedPrefix+
			fmt.Sprintf(": %q was offered when this turn was suspended but is not offered any more, so it did not run.", call.Name))
	default:
		return l.execute(ctx, call)
	}
}

// denialText is the result the model sees for a denied call: it carries the
// reason and asks the model not to retry.
func denialText(reason string) string {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		reason = "no reason given"
	}
	if !strings.ContainsAny(reason[len(reason)-1:], ".!?") {
		reason += "."
	}
	return DeniedPrefix + ". Reason: " + reason + " This call was not executed. " +
		"Do not retry it or try to reach the same effect another way; tell the user it was not done."
}

// runLoop is the loop shared by Run and Resume, starting from transcript with
// the counters so far.
func (l *Loop) runLoop(ctx context.Context, transcript []Message, iterations int, usage Usage, trace []Invocation) (*Result, error) {
	specs := l.specs()
	limit := l.MaxIterations
	if limit <= 0 {
		limit = DefaultMaxIterations
	}
	result := func(answer string, term Termination) *Result {
		return &Result{Answer: answer, Transcript: transcript, Trace: trace, Iterations: iterations, Usage: usage, Termination: term}
	}
	for {
		if err := ctx.Err(); err != nil {
			return result("", TermCancelled), l.fail(ctx, TermCancelled, err, iterations, usage)
		}
		if iterations >= limit {
			err := l.record(ctx, Event{Kind: EventFinished, Termination: TermMaxIterations,
				Text:   fmt.Sprintf("Stopped after %d model calls, the iteration limit.", iterations),
				Totals: &Totals{Iterations: iterations, Usage: usage}})
			return result("", TermMaxIterations), err
		}

		l.fault(FaultModelCall)
		start := l.now()
		resp, err := l.Model.Generate(ctx, ModelRequest{Messages: cloneMessages(transcript), Tools: specs})
		if err != nil {
			term := TermModelError
			if ctx.Err() != nil {
				term = TermCancelled
			}
			return result("", term), l.fail(ctx, term, err, iterations, usage)
		}
		iterations++
		usage = usage.Add(resp.Usage)
		msg := resp.Message
		msg.Role = RoleAssistant
		msg.ToolCallID, msg.ToolName, msg.IsError = "", "", false
		if len(msg.ToolCalls) > MaxCallsPerTurn {
			msg.ToolCalls = msg.ToolCalls[:MaxCallsPerTurn]
		}
		msg.ToolCalls = normaliseCalls(msg.ToolCalls, iterations)
		transcript = append(transcript, msg)
		turnUsage := resp.Usage
		if err := l.record(ctx, Event{Kind: EventModelTurn, Text: msg.Content, ToolCalls: msg.ToolCalls,
			Usage: &turnUsage, Iteration: iterations, DurationMS: l.now().Sub(start).Milliseconds()}); err != nil {
			return result("", ""), err
		}

		if resp.Truncated {
			cause := errors.New("the model's reply was cut off at its output token limit; " +
				"raise the model's max_tokens or ask for a shorter answer")
			return result("", TermOutputLimit), l.fail(ctx, TermOutputLimit, cause, iterations, usage)
		}

		if len(msg.ToolCalls) == 0 {
			err := l.record(ctx, Event{Kind: EventFinished, Termination: TermCompleted, Text: msg.Content,
				Totals: &Totals{Iterations: iterations, Usage: usage}})
			return result(msg.Content, TermCompleted), err
		}

		if l.turnNeedsApproval(msg.ToolCalls) {
			state := &SuspendedState{
				Version:      StateVersion,
				Transcript:   cloneMessages(transcript),
				Pending:      cloneCalls(msg.ToolCalls),
				Iterations:   iterations,
				Usage:        usage,
				OfferedTools: l.toolNames(),
				Previews:     l.previews(ctx, msg.ToolCalls),
			}
			if err := l.record(ctx, Event{Kind: EventSuspended, Pending: state.Pending, Previews: state.Previews,
				Digest: TurnDigest(state.Pending), Offered: state.OfferedTools,
				Totals: &Totals{Iterations: iterations, Usage: usage}}); err != nil {
				return result("", ""), err
			}
			return result("", ""), &ApprovalRequiredError{State: state}
		}

		for _, call := range msg.ToolCalls {
			if err := ctx.Err(); err != nil {
				return result("", TermCancelled), l.fail(ctx, TermCancelled, err, iterations, usage)
			}
			inv, err := l.execute(ctx, call)
			if err != nil {
				return result("", ""), err
			}
			trace = append(trace, inv)
			transcript = append(transcript, toolMessage(inv))
		}
	}
}

// fail records a failed event and returns the *RunError for it.
func (l *Loop) fail(ctx context.Context, term Termination, cause error, iterations int, usage Usage) error {
	runErr := &RunError{Termination: term, Err: cause}
	if err := l.record(ctx, Event{Kind: EventFailed, Termination: term, Error: cause.Error(),
		Totals: &Totals{Iterations: iterations, Usage: usage}}); err != nil {
		return errors.Join(runErr, err)
	}
	return runErr
}

// turnNeedsApproval reports whether any call of a turn is for an offered tool
// that requires approval.
func (l *Loop) turnNeedsApproval(calls []ToolCall) bool {
	for _, c := range calls {
		if t := l.tool(c.Name); t != nil && NeedsApproval(t) {
			return true
		}
	}
	return false
}

// execute runs one call: an unknown tool or bad arguments are answered with
// an error result; otherwise tool_started is recorded before the tool runs
// (the fence for side effects) and tool_finished after it.
func (l *Loop) execute(ctx context.Context, call ToolCall) (Invocation, error) {
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
	if err := l.record(ctx, Event{Kind: EventToolStarted, Call: &c, Write: write}); err != nil {
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
	inv := Invocation{Call: call, Duration: l.now().Sub(start), Outcome: OutcomeOK, Result: truncate(out)}
	if callErr != nil {
		inv.IsError, inv.Outcome, inv.Result = true, OutcomeToolError, truncate("error: "+callErr.Error())
	}
	if err := l.record(ctx, Event{Kind: EventToolFinished, Call: &c, Write: write, Result: inv.Result,
		IsError: inv.IsError, Outcome: inv.Outcome, DurationMS: inv.Duration.Milliseconds()}); err != nil {
		return Invocation{}, err
	}
	l.fault(FaultToolFinished)
	if panicked {
		return Invocation{}, &RunError{Termination: TermToolError, Err: fmt.Errorf("tool %s: %w", call.Name, callErr)}
	}
	return inv, nil
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
// panics becomes a line saying so; it never fails the run.
func (l *Loop) previews(ctx context.Context, calls []ToolCall) []Preview {
	var out []Preview
	for _, c := range calls {
		t := l.tool(c.Name)
		if t == nil {
			out = append(out, Preview{CallID: c.ID, Tool: c.Name, Lines: []string{"not executed: tool is not offered"}})
			continue
		}
		p, ok := t.(Previewer)
		if !ok {
			continue
		}
		out = append(out, Preview{CallID: c.ID, Tool: c.Name, Lines: boundLines(safePreview(ctx, p, c.Arguments))})
	}
	return out
}

func safePreview(ctx context.Context, p Previewer, raw string) (lines []string) {
	defer func() {
		if r := recover(); r != nil {
			lines = []string{fmt.Sprintf("preview unavailable: it panicked: %v", r)}
		}
	}()
	args, err := parseArgs(raw)
	if err != nil {
		return []string{"preview unavailable: arguments are not a valid JSON object"}
	}
	lines, err = p.Preview(ctx, args)
	if err != nil {
		return []string{"preview unavailable: " + err.Error()}
	}
	return lines
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

// parseArgs checks that raw is a JSON object; empty arguments mean {}.
func parseArgs(raw string) (json.RawMessage, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return json.RawMessage("{}"), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, errors.New("null is not an object")
	}
	return json.RawMessage(s), nil
}

// truncate cuts a result over MaxResultBytes with a note saying so.
func truncate(s string) string {
	if len(s) <= MaxResultBytes {
		return s
	}
	note := fmt.Sprintf("\n[result truncated: %d of %d bytes shown]", MaxResultBytes, len(s))
	return cutUTF8(s, MaxResultBytes) + note
}

// cutUTF8 returns at most n bytes of s without splitting a rune.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// normaliseCalls gives every call of a turn a non-empty ID unique within the
// turn, so that each can be answered exactly once.
func normaliseCalls(calls []ToolCall, iteration int) []ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := cloneCalls(calls)
	seen := make(map[string]bool, len(out))
	for i := range out {
		if out[i].ID == "" || seen[out[i].ID] {
			out[i].ID = fmt.Sprintf("call_%d_%d", iteration, i+1)
		}
		seen[out[i].ID] = true
	}
	return out
}

func toolMessage(inv Invocation) Message {
	return Message{Role: RoleTool, ToolCallID: inv.Call.ID, ToolName: inv.Call.Name, Content: inv.Result, IsError: inv.IsError}
}

func (l *Loop) record(ctx context.Context, ev Event) error {
	if l.Recorder == nil {
		return nil
	}
	ev.At = l.now()
	// A step that happened is recorded even when the run is being cancelled.
	if err := l.Recorder.Record(context.WithoutCancel(ctx), ev); err != nil {
		return fmt.Errorf("record %s: %w", ev.Kind, err)
	}
	return nil
}

func (l *Loop) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Loop) tool(name string) Tool {
	for _, t := range l.Tools {
		if t.Name() == name {
			return t
		}
	}
	return nil
}

func (l *Loop) toolNames() []string {
	names := make([]string, 0, len(l.Tools))
	for _, t := range l.Tools {
		names = append(names, t.Name())
	}
	return names
}

func (l *Loop) specs() []ToolSpec {
	specs := make([]ToolSpec, 0, len(l.Tools))
	for _, t := range l.Tools {
		specs = append(specs, ToolSpec{Name: t.Name(), Description: t.Description(), Parameters: t.Schema()})
	}
	return specs
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

func cloneCalls(calls []ToolCall) []ToolCall {
	if calls == nil {
		return nil
	}
	return append([]ToolCall(nil), calls...)
}

func cloneMessages(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		m.ToolCalls = cloneCalls(m.ToolCalls)
		out[i] = m
	}
	return out
}
