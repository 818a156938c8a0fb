package engine

import (
	"context"
	"encoding/json"
	"time"
)

// Tool is something a model may call. Schema is the JSON Schema of the
// arguments; Call receives arguments that are valid JSON and returns the
// result text the model sees. A returned error becomes an error result.
type Tool interface {
	Name() string
	Description() string
	Schema() json.RawMessage
	Call(ctx context.Context, args json.RawMessage) (string, error)
}

// RequiresApproval is implemented by tools whose calls have side effects. The
// loop finds it by type assertion: a turn that calls such a tool runs none of
// its calls until a person approves the turn.
type RequiresApproval interface {
	RequiresApproval()
}

// Previewer is implemented by tools that can say, before they run, what a call
// would do: a few lines such as a diff. Previews are computed when a run
// suspends and shown to the approver.
type Previewer interface {
	Preview(ctx context.Context, args json.RawMessage) ([]string, error)
}

// AsksOperator is implemented by a tool through which the agent asks the
// operator a question. Its calls wait like calls that need approval, but
// they never run: the only decision is an answer, which becomes the result.
type AsksOperator interface {
	AsksOperator()
}

// NeedsApproval reports whether calls of t wait for a person: a tool that
// requires approval, or a question to the operator.
func NeedsApproval(t Tool) bool {
	_, ok := t.(RequiresApproval)
	_, asks := t.(AsksOperator)
	return ok || asks
}

// KindOf says what a call of t is for the person deciding it; nil is a tool
// that is not offered.
func KindOf(t Tool) CallKind {
	switch t.(type) {
	case nil:
		return CallUnknown
	case AsksOperator:
		return CallQuestion
	case RequiresApproval:
		return CallWrite
	}
	return CallRead
}

// ArgsChecker checks arguments against a tool's JSON Schema. Its error says,
// for a person, which field is wrong and why. The engine declares it and
// stays free of a schema library; the app supplies one.
type ArgsChecker func(schema, args json.RawMessage) error

// Agent is a named configuration of the loop: its instructions, the tools it
// offers and its limits. Agents are presets the operator picks from.
type Agent struct {
	// Name is the stable identifier stored with each run.
	Name string
	// Title and Description are shown in the playground.
	Title       string
	Description string
	// Instructions are added to the transcript after the system prompt.
	Instructions string
	// Tools are the tools offered to the model.
	Tools []Tool
	// MaxIterations bounds the model calls of one run; zero means the default.
	MaxIterations int
	// SecondApprover (four-eyes) forbids the initiator of a run from
	// approving its calls; the initiator may still deny.
	SecondApprover bool
	// Examples are prompts the playground offers one click away.
	Examples []string
	// DefaultModel is the model the playground preselects for the agent;
	// empty leaves the first one offered.
	DefaultModel string
	// Policy decides which calls need a person; nil asks a person for every
	// call of a tool that requires approval.
	Policy Policy
	// ApprovalDeadline bounds how long a turn may wait for a decision; when
	// it passes, every pending call is answered as expired and the run
	// carries on. Zero waits for ever.
	ApprovalDeadline time.Duration
	// MaxRepeatDenials ends a run after that many turns in a row that
	// repeat a call denied earlier in the run (default 3).
	MaxRepeatDenials int
}

// AcceptsGrants reports whether operators may give the agent standing
// grants: not an agent that needs a second approver, whose every write
// needs two people.
func (a Agent) AcceptsGrants() bool { return !a.SecondApprover }
