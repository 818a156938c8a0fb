package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Verdict is what a person decided about a pending call. It is the one type
// for a decision in the engine, its events and the web layer.
type Verdict string

// The verdicts.
const (
	// VerdictApprove runs the call as the model proposed it.
	VerdictApprove Verdict = "approve"
	// VerdictDeny does not run the call; the model gets a denial with the
	// reason and is told not to retry.
	VerdictDeny Verdict = "deny"
	// VerdictEdit runs the call with arguments the operator changed; the
	// result the model gets opens with a note of what actually ran.
	VerdictEdit Verdict = "edit"
	// VerdictAnswer does not run the call; the model gets the operator's
	// text, marked as the operator's answer, as its result. It is the only
	// verdict for a question to the operator.
	VerdictAnswer Verdict = "answer"
	// VerdictExpire is given by the runtime, never by a person, when a
	// turn's approval deadline passes: the call does not run and the model
	// is told no decision came in time.
	VerdictExpire Verdict = "expire"
)

// ParseVerdict returns the verdict named s, or an *InputError.
func ParseVerdict(s string) (Verdict, error) {
	switch v := Verdict(s); v {
	case VerdictApprove, VerdictDeny, VerdictEdit, VerdictAnswer:
		return v, nil
	}
	return "", &InputError{Field: "decision", Message: "The decision must be approve, deny, edit or answer."}
}

// Approves reports whether the verdict lets a call run: approve and edit.
// Four-eyes forbids the initiator every verdict that does.
func (v Verdict) Approves() bool { return v == VerdictApprove || v == VerdictEdit }

// Limits of what a person can write into a decision.
const (
	// MaxAnswerBytes bounds an operator's answer.
	MaxAnswerBytes = 20_000
	// MaxEditBytes bounds edited arguments.
	MaxEditBytes = 32_000
)

// CallVerdict is a person's verdict on one pending call. The JSON is the
// decision event's record of it.
type CallVerdict struct {
	CallID  string  `json:"call_id"`
	Tool    string  `json:"tool,omitempty"`
	Verdict Verdict `json:"verdict"`
	// Arguments are the arguments an edited call runs with.
	Arguments string `json:"arguments,omitempty"`
	// Original are the arguments the model proposed for an edited call,
	// filled in by the engine, so the record shows both.
	Original string `json:"original,omitempty"`
	// Text is the reason of a denial (optional) or the operator's answer.
	Text string `json:"text,omitempty"`
}

// Decision is a person's answer to a suspended turn. Digest names the turn it
// was made on. Verdict, when set, is the verdict on every call that Calls
// does not name ("Approve all", "Deny all"); Calls holds per-call verdicts.
// Resolve turns it into exactly one verdict per pending call.
type Decision struct {
	Verdict Verdict
	Calls   []CallVerdict
	Digest  string
	By      string
	// Reason is the reason given for the whole decision; a denied call
	// without its own reason carries it.
	Reason string
	// Grants ask to allow a tool approved in this decision from now on
	// without a person (see GrantRequest).
	Grants []GrantRequest
}

// CallKind says what a pending call is for the person deciding it.
type CallKind string

// The kinds of pending call.
const (
	CallRead     CallKind = "read"     // a tool that only reads, held in a turn that waits
	CallWrite    CallKind = "write"    // a tool that requires approval
	CallQuestion CallKind = "question" // the agent asks the operator; only an answer decides it
	CallUnknown  CallKind = "unknown"  // a tool that is not offered; it never runs
)

// Resolve returns one verdict per pending call, in the order of pending,
// or an *InputError naming what is wrong: a verdict for a call that is not
// pending, two verdicts for one call, a call left without a verdict, an
// edit whose arguments are not a JSON object, an answer without text, or a
// verdict other than an answer on a question. kind tells the calls apart
// (nil treats every call as a write). Edits get their Original filled in.
// The arguments are not checked against the tool's schema here; see
// Runtime.Decide.
func (d Decision) Resolve(pending []ToolCall, kind func(ToolCall) CallKind) ([]CallVerdict, error) {
	if kind == nil {
		kind = func(ToolCall) CallKind { return CallWrite }
	}
	bad := func(field, format string, args ...any) error {
		return &InputError{Field: field, Message: fmt.Sprintf(format, args...)}
	}
	if d.Verdict == VerdictExpire {
		// The runtime's answer when the deadline passed: every call expires.
		out := make([]CallVerdict, len(pending))
		for i, c := range pending {
			out[i] = CallVerdict{CallID: c.ID, Tool: c.Name, Verdict: VerdictExpire}
		}
		return out, nil
	}
	if d.Verdict != "" && d.Verdict != VerdictApprove && d.Verdict != VerdictDeny {
		return nil, bad("decision", "A decision for every call must be approve or deny.")
	}
	byID := make(map[string]CallVerdict, len(d.Calls))
	for _, cv := range d.Calls {
		if !hasCall(pending, cv.CallID) {
			return nil, bad("calls", "There is no pending call %q in this turn.", cv.CallID)
		}
		if _, dup := byID[cv.CallID]; dup {
			return nil, bad("calls."+cv.CallID, "Call %q has two verdicts; give it one.", cv.CallID)
		}
		if _, err := ParseVerdict(string(cv.Verdict)); err != nil {
			return nil, bad("calls."+cv.CallID+".verdict", "The verdict on call %q must be approve, deny, edit or answer.", cv.CallID)
		}
		byID[cv.CallID] = cv
	}
	out := make([]CallVerdict, 0, len(pending))
	for _, call := range pending {
		cv, ok := byID[call.ID]
		k := kind(call)
		switch {
		case ok:
		case k == CallQuestion:
			return nil, bad("calls."+call.ID, "The agent asked a question (%s): answer it.", call.ID)
		case d.Verdict != "":
			cv = CallVerdict{CallID: call.ID, Verdict: d.Verdict}
		default:
			return nil, bad("calls."+call.ID, "Call %q (%s) has no verdict; decide every call.", call.ID, call.Name)
		}
		cv.Tool = call.Name
		field := "calls." + call.ID
		if k == CallQuestion && cv.Verdict != VerdictAnswer {
			return nil, bad(field+".verdict", "Call %q is a question to the operator: the only decision is an answer.", call.ID)
		}
		switch cv.Verdict {
		case VerdictEdit:
			args := strings.TrimSpace(cv.Arguments)
			if len(args) > MaxEditBytes {
				return nil, bad(field+".arguments", "The edited arguments must be at most %d bytes.", MaxEditBytes)
			}
			if _, err := parseArgs(args); err != nil || args == "" {
				return nil, bad(field+".arguments", "The edited arguments of %q must be a JSON object.", call.ID)
			}
			if k == CallUnknown {
				return nil, bad(field+".verdict", "Call %q names a tool that is not offered; it cannot run.", call.ID)
			}
			cv.Arguments, cv.Original, cv.Text = compactJSON(args), call.Arguments, ""
		case VerdictAnswer:
			if strings.TrimSpace(cv.Text) == "" {
				return nil, bad(field+".text", "Write the answer to %q.", call.ID)
			}
			cv.Arguments = ""
		default:
			cv.Arguments = ""
		}
		if !utf8.ValidString(cv.Text) || len(cv.Text) > MaxAnswerBytes {
			return nil, bad(field+".text", "The text for %q must be at most %d bytes of text.", call.ID, MaxAnswerBytes)
		}
		out = append(out, cv)
	}
	return out, nil
}

// Summary is the verdict every call shares, or "" when they differ: the
// decision event's one-word record, which older readers understand.
func Summary(verdicts []CallVerdict) Verdict {
	if len(verdicts) == 0 {
		return ""
	}
	v := verdicts[0].Verdict
	for _, cv := range verdicts[1:] {
		if cv.Verdict != v {
			return ""
		}
	}
	return v
}

// compactJSON returns valid JSON without insignificant space, or s.
func compactJSON(s string) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		return s
	}
	return buf.String()
}

// verdictFor returns the verdict a decided turn gave call: its own, else
// the whole-turn verdict. A decision recorded before per-call verdicts
// existed has only the latter. A call with neither (a record that does not
// name it) is denied: nothing runs that nobody approved.
func (d Decision) verdictFor(call ToolCall) CallVerdict {
	for _, cv := range d.Calls {
		if cv.CallID == call.ID {
			cv.Tool = call.Name
			if cv.Verdict == VerdictEdit {
				cv.Original = call.Arguments
			}
			return cv
		}
	}
	if d.Verdict == VerdictApprove || d.Verdict == VerdictDeny || d.Verdict == VerdictExpire {
		return CallVerdict{CallID: call.ID, Tool: call.Name, Verdict: d.Verdict}
	}
	return CallVerdict{CallID: call.ID, Tool: call.Name, Verdict: VerdictDeny, Text: "no verdict was recorded for this call"}
}
