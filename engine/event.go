package engine

import (
	"context"
	"time"
)

// EventKind names a step of a run's event stream.
type EventKind string

// The kinds of event a run records. Together they are the audit record of the
// run and what the run page shows.
const (
	// EventPrompt is the user's prompt; it opens every run.
	EventPrompt EventKind = "prompt"
	// EventModelTurn is one assistant message with its usage and duration.
	EventModelTurn EventKind = "model_turn"
	// EventToolStarted is committed before a tool runs. For a tool that
	// requires approval it is the fence that keeps side effects at most once.
	EventToolStarted EventKind = "tool_started"
	// EventToolFinished carries a tool's result or error, or the answer the
	// loop gave in its place (denied, not permitted, bad arguments).
	EventToolFinished EventKind = "tool_finished"
	// EventSuspended says the run waits for approval of the pending calls.
	EventSuspended EventKind = "suspended"
	// EventDecision is a person's approval or denial of a suspended turn.
	EventDecision EventKind = "decision"
	// EventReleased says a claimed run was handed back to wait for a
	// decision again, without running anything of the decision, and why.
	EventReleased EventKind = "released"
	// EventFinished ends a run that completed or hit its iteration limit.
	EventFinished EventKind = "finished"
	// EventFailed ends a run that failed or was cancelled.
	EventFailed EventKind = "failed"
)

// Transition names the status transition whose transaction writes an event
// of a durable run. The loop records every event through its Recorder in
// the order the steps happen; a durable recorder appends only the events of
// TransitionNone and leaves the others to the RunStore method of their
// transition, which writes the event in the same transaction as the status
// change, so a status and its event never disagree.
type Transition int

// The transitions that write events.
const (
	// TransitionNone: a step while the run is held (model turn, tool
	// started, tool finished), appended with AppendEvent.
	TransitionNone Transition = iota
	// TransitionCreate: the prompt, written by CreateRun.
	TransitionCreate
	// TransitionClaim: a decision, written by ClaimRun.
	TransitionClaim
	// TransitionSuspend: suspended, written by SuspendRun.
	TransitionSuspend
	// TransitionRelease: released, written by ReleaseRun.
	TransitionRelease
	// TransitionFinish: finished or failed, written by FinishRun or
	// RequestCancel.
	TransitionFinish
)

// Transition returns the status transition that writes events of kind k.
func (k EventKind) Transition() Transition {
	switch k {
	case EventPrompt:
		return TransitionCreate
	case EventDecision:
		return TransitionClaim
	case EventSuspended:
		return TransitionSuspend
	case EventReleased:
		return TransitionRelease
	case EventFinished, EventFailed:
		return TransitionFinish
	}
	return TransitionNone
}

// Event is one step of a run. Only the fields of its kind are set; it
// encodes to JSON as the payload of the stored event.
type Event struct {
	Kind EventKind `json:"kind"`
	At   time.Time `json:"at"`

	// Prompt and model turn.
	Text       string     `json:"text,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	Usage      *Usage     `json:"usage,omitempty"`
	Iteration  int        `json:"iteration,omitempty"`
	DurationMS int64      `json:"duration_ms,omitempty"`

	// Tool started and finished. Write marks a tool that requires approval;
	// Outcome says why a call was answered without running it.
	Call  *ToolCall `json:"call,omitempty"`
	Write bool      `json:"write,omitempty"`
	// External marks the tool_started fence of a write whose side effects
	// leave the database (ToolHints.External). Like every fence it is on
	// disk before the tool runs.
	External bool `json:"external,omitempty"`
	// Original is what the model proposed for a call an operator edited
	// (Call holds what ran); EditedBy is who edited it.
	Original string `json:"original_arguments,omitempty"`
	EditedBy string `json:"edited_by,omitempty"`
	// WaivedBy names the rule or grant that let a call needing approval
	// run without a person ("rule <name>", "grant <id>"): the audit record
	// of why nobody was asked.
	WaivedBy string  `json:"waived_by,omitempty"`
	Result   string  `json:"result,omitempty"`
	IsError  bool    `json:"is_error,omitempty"`
	Outcome  Outcome `json:"outcome,omitempty"`

	// Suspended. Offered lists the tools offered when the turn was
	// suspended, so a recovery tells a withdrawn tool from an unknown one.
	Pending  []ToolCall `json:"pending,omitempty"`
	Previews []Preview  `json:"previews,omitempty"`
	Digest   string     `json:"digest,omitempty"`
	Offered  []string   `json:"offered,omitempty"`

	// Decision. Decision is the verdict every call shares, or empty when
	// the verdicts differ; Verdicts holds one per call, in order, with the
	// original and edited arguments of an edit.
	Decision Verdict       `json:"decision,omitempty"`
	Verdicts []CallVerdict `json:"verdicts,omitempty"`
	// Grants are the standing grants given with the decision.
	Grants []Grant `json:"grants,omitempty"`
	By     string  `json:"by,omitempty"`
	Reason string  `json:"reason,omitempty"`

	// Finished and failed.
	Termination Termination `json:"termination,omitempty"`
	Error       string      `json:"error,omitempty"`
	Totals      *Totals     `json:"totals,omitempty"`
}

// Outcome classifies how a tool call was answered.
type Outcome string

// Outcomes of a tool call.
const (
	OutcomeOK           Outcome = "ok"
	OutcomeToolError    Outcome = "tool_error"
	OutcomeUnknownTool  Outcome = "unknown_tool"
	OutcomeBadArguments Outcome = "bad_arguments"
	OutcomeDenied       Outcome = "denied"
	OutcomeNotPermitted Outcome = "not_permitted"
	// OutcomeAnswered: the operator answered in place of the tool, which
	// did not run (and the answer to a question to the operator).
	OutcomeAnswered Outcome = "answered"
	// OutcomeExpired: no decision came before the turn's deadline.
	OutcomeExpired Outcome = "expired"
	// OutcomeRepeatDenied: the call repeats one denied earlier in the run
	// and was refused without asking anyone (the loop breaker).
	OutcomeRepeatDenied Outcome = "repeat_denied"
)

// Totals are the counters of a whole run, across every suspension.
type Totals struct {
	Iterations int   `json:"iterations"`
	Usage      Usage `json:"usage"`
}

// Recorder receives every step of a run. An error from Record stops the
// loop: a step that cannot be recorded must not be taken, above all a write
// whose tool_started event was not committed.
type Recorder interface {
	Record(ctx context.Context, ev Event) error
}

// Flusher is implemented by a recorder that holds events back to write
// several at once. The loop calls Flush before each model call, so that
// what happened before it is stored before the model is asked.
type Flusher interface {
	Flush(ctx context.Context) error
}

// RecorderFunc adapts a function to the Recorder interface.
type RecorderFunc func(ctx context.Context, ev Event) error

// Record calls f.
func (f RecorderFunc) Record(ctx context.Context, ev Event) error { return f(ctx, ev) }

// Termination is why a run ended.
type Termination string

// Termination reasons.
const (
	TermCompleted        Termination = "completed"
	TermMaxIterations    Termination = "max_iterations"
	TermModelError       Termination = "model_error"
	TermToolError        Termination = "tool_error"
	TermCancelled        Termination = "cancelled"
	TermInterrupted      Termination = "interrupted_during_write"
	TermRetriesExhausted Termination = "retries_exhausted"
	TermStateError       Termination = "state_error"
	// TermOutputLimit ends a run whose model reply was cut off by the
	// model's output token limit.
	TermOutputLimit Termination = "output_limit"
	// TermRepeatedDenials ends a run whose agent kept repeating calls that
	// were denied (the loop breaker).
	TermRepeatedDenials Termination = "repeated_denials"
)
