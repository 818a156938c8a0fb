package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
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
	// Policy, when set, decides which calls need a person (see Policy);
	// RunID, AgentName and Initiator are what it is told of the run.
	Policy                      Policy
	RunID, AgentName, Initiator string
	// MaxRepeatDenials ends the run after that many turns in a row that
	// repeat a denied call (DefaultMaxRepeatDenials when zero).
	MaxRepeatDenials int
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
	FaultToolFinished = "tool_finished" // a tool_finished event was recorded: committed for a write, held back for a read
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
		Model:            m,
		Tools:            a.OfferedTools(),
		Instructions:     a.Instructions,
		MaxIterations:    a.MaxIterations,
		Recorder:         rec,
		Policy:           a.Policy,
		AgentName:        a.Name,
		MaxRepeatDenials: a.MaxRepeatDenials,
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
// state that does not validate (ErrCorruptState), a decision made on
// another turn (ErrStaleTurn) and a decision that does not give every
// pending call exactly one valid verdict (*InputError) before it does
// anything. Then it answers every pending call once, in the order the model
// made them: an approved call runs (if its tool is still offered), an edited
// one runs with the edited arguments and a note of what ran, a denied one
// gets a denial carrying the reason, an answered one gets the operator's
// text. Then it re-enters the loop with the counters from before the
// suspension folded in.
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
	verdicts, err := d.Resolve(state.Pending, l.callKind)
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	if err := l.record(ctx, Event{Kind: EventDecision, Decision: Summary(verdicts), Verdicts: verdicts,
		By: d.By, Reason: d.Reason, Digest: d.Digest}); err != nil {
		return nil, err
	}
	d.Calls, d.Verdict = verdicts, ""

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

// answerDecided answers one call of a decided turn by its verdict. An
// approved or edited call runs only if its tool was offered when the turn
// was suspended (offered, unless nil) and still is.
func (l *Loop) answerDecided(ctx context.Context, call ToolCall, d Decision, offered []string) (Invocation, error) {
	cv := d.verdictFor(call)
	switch {
	case cv.Verdict == VerdictDeny:
		reason := cv.Text
		if strings.TrimSpace(reason) == "" {
			reason = d.Reason
		}
		return l.answerWithout(ctx, call, OutcomeDenied, denialText(reason))
	case cv.Verdict == VerdictExpire:
		return l.answerWithout(ctx, call, OutcomeExpired, expiredText())
	case cv.Verdict == VerdictAnswer:
		return l.answerFor(ctx, call, answerText(l.callKind(call), d.By, cv.Text))
	case offered != nil && !contains(offered, call.Name):
		return l.answerWithout(ctx, call, OutcomeUnknownTool, l.unknownToolText(call.Name))
	case l.tool(call.Name) == nil && offered != nil:
		return l.answerWithout(ctx, call, OutcomeNotPermitted, NotPermittedPrefix+
			fmt.Sprintf(": %q was offered when this turn was suspended but is not offered any more, so it did not run.", call.Name))
	case l.callKind(call) == CallQuestion:
		// A question never runs; an approval that reached it from an old
		// record is no answer.
		return l.answerWithout(ctx, call, OutcomeDenied, denialText("the question was not answered"))
	case cv.Verdict == VerdictEdit:
		return l.executeEdited(ctx, call, cv, d.By)
	default:
		return l.execute(ctx, call)
	}
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
		if err := l.flush(ctx); err != nil {
			return result("", ""), err
		}
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

		if repeats := l.repeatedDenials(transcript[:len(transcript)-1], msg.ToolCalls); len(repeats) > 0 {
			invs, err := l.refuseRepeats(ctx, msg.ToolCalls, repeats)
			if err != nil {
				return result("", ""), err
			}
			for _, inv := range invs {
				trace = append(trace, inv)
				transcript = append(transcript, toolMessage(inv))
			}
			if n := repeatTurns(transcript); n >= l.maxRepeatDenials() {
				cause := fmt.Errorf("the agent repeated calls that were denied %d turns in a row", n)
				return result("", TermRepeatedDenials), l.fail(ctx, TermRepeatedDenials, cause, iterations, usage)
			}
			continue
		}

		g, err := l.gate(ctx, msg.ToolCalls)
		if err != nil {
			return result("", ""), err
		}
		if g.wait {
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
			inv, err := l.run(ctx, call, nil, g.waived[call.ID])
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

// flush has a recorder that holds events back write them (see Flusher).
func (l *Loop) flush(ctx context.Context) error {
	f, ok := l.Recorder.(Flusher)
	if !ok {
		return nil
	}
	if err := f.Flush(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("record: %w", err)
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
