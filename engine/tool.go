package engine

import (
	"context"
	"encoding/json"
	"slices"
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

// Toolset is a source of tools that come and go, such as the tools of an
// MCP server, offered only while the server is up. Tools returns the tools
// offered now; a loop takes them once when it starts or resumes a run, so a
// turn that waits for a tool that has gone since is refused at resume as
// no longer permitted.
type Toolset interface {
	Tools() []Tool
}

// ToolHints is what a tool says of itself to the person deciding its calls
// and to the fence before them.
type ToolHints struct {
	// Source names where the tool comes from, as "MCP server files"; empty
	// for a built-in tool.
	Source string
	// Destructive says a call may overwrite or delete what is there (MCP's
	// destructiveHint), shown as a badge on the approval card.
	Destructive bool
	// External says a call's side effects leave countersign's database
	// (an MCP server's write): its tool_started fence says so, for the
	// audit record.
	External bool
}

// Hinted is implemented by tools that give hints (see ToolHints).
type Hinted interface {
	Hints() ToolHints
}

// HintsOf returns the hints of t; a tool that gives none has the zero
// hints, and so has nil.
func HintsOf(t Tool) ToolHints {
	if h, ok := t.(Hinted); ok {
		return h.Hints()
	}
	return ToolHints{}
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
	// Toolsets offer tools that come and go (an MCP server's), after Tools;
	// see OfferedTools.
	Toolsets []Toolset
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

// OfferedTools returns the tools the agent offers now: its Tools, then those
// its Toolsets offer at this moment. A tool whose name an earlier one already
// has is left out, so a server cannot shadow a built-in tool.
func (a Agent) OfferedTools() []Tool {
	if len(a.Toolsets) == 0 {
		return a.Tools
	}
	out := slices.Clone(a.Tools)
	seen := make(map[string]bool, len(a.Tools))
	for _, t := range a.Tools {
		seen[t.Name()] = true
	}
	for _, ts := range a.Toolsets {
		for _, t := range ts.Tools() {
			if !seen[t.Name()] {
				seen[t.Name()] = true
				out = append(out, t)
			}
		}
	}
	return out
}
