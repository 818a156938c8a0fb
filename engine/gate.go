package engine

import (
	"context"
	"fmt"
	"strings"
)

// DefaultMaxRepeatDenials is how many turns in a row may repeat a denied
// call before the loop breaker ends the run.
const DefaultMaxRepeatDenials = 3

// gate is what the loop decided about a turn before anything of it ran:
// whether the turn waits for a person, and for each call that needs
// approval but runs without a person, the rule or grant that said so.
type gate struct {
	wait   bool
	person map[string]bool   // call id → a person must decide it
	waived map[string]string // call id → "rule <name>" or "grant <id>"
}

// gate asks, call by call, whether a person must decide: a question always;
// otherwise the policy, or without one the tool's own marker. A policy
// that fails asks a person: the safe answer. A turn waits as a whole when
// any call needs a person.
func (l *Loop) gate(ctx context.Context, calls []ToolCall) (gate, error) {
	g := gate{person: map[string]bool{}, waived: map[string]string{}}
	for _, c := range calls {
		t := l.tool(c.Name)
		if t == nil {
			continue // answered as an unknown tool, never run
		}
		marked := NeedsApproval(t)
		switch {
		case KindOf(t) == CallQuestion:
			g.person[c.ID] = true
		case l.Policy == nil:
			g.person[c.ID] = marked
		default:
			res, err := l.Policy.Check(ctx, PolicyCall{RunID: l.RunID, Agent: l.AgentName, Initiator: l.Initiator, Call: c, Marked: marked})
			switch {
			case err != nil:
				g.person[c.ID] = true
			case res.Person:
				g.person[c.ID] = true
			case marked:
				g.waived[c.ID] = waiver(res)
			}
		}
		g.wait = g.wait || g.person[c.ID]
	}
	return g, nil
}

// waiver names what let a call run without a person.
func waiver(res PolicyResult) string {
	switch {
	case res.Grant != "":
		return "grant " + res.Grant
	case res.Rule != "":
		return "rule " + res.Rule
	}
	return "policy"
}

// callKey is a call's identity for the loop breaker: its tool and its
// canonical arguments.
func callKey(c ToolCall) string {
	return c.Name + "\x00" + compactJSON(strings.TrimSpace(c.Arguments))
}

// repeatedDenials returns the ids of the calls of this turn that repeat a
// call denied earlier in the run (by a person, or again by the breaker).
func (l *Loop) repeatedDenials(before []Message, calls []ToolCall) map[string]bool {
	proposed := map[string]ToolCall{}
	denied := map[string]bool{}
	for _, m := range before {
		for _, c := range m.ToolCalls {
			proposed[c.ID] = c
		}
		if m.Role == RoleTool && (strings.HasPrefix(m.Content, DeniedPrefix) || strings.HasPrefix(m.Content, RepeatDeniedPrefix)) {
			if c, ok := proposed[m.ToolCallID]; ok {
				denied[callKey(c)] = true
			}
		}
	}
	out := map[string]bool{}
	for _, c := range calls {
		if denied[callKey(c)] {
			out[c.ID] = true
		}
	}
	return out
}

// refuseRepeats answers a turn that repeats denied calls without asking
// anyone: the repeats are denied again, other calls that would need a
// person are not run either (the turn is not put to anyone), and calls that
// need no person run as usual. Every call is answered once, in order.
func (l *Loop) refuseRepeats(ctx context.Context, calls []ToolCall, repeats map[string]bool) ([]Invocation, error) {
	g, err := l.gate(ctx, calls)
	if err != nil {
		return nil, err
	}
	var out []Invocation
	for _, c := range calls {
		var inv Invocation
		switch {
		case repeats[c.ID]:
			inv, err = l.answerWithout(ctx, c, OutcomeRepeatDenied, repeatDeniedText())
		case g.person[c.ID]:
			inv, err = l.answerWithout(ctx, c, OutcomeRepeatDenied, "NOT EXECUTED: this turn repeated a call that was denied, so no one was asked about it; propose it again on its own if it is still needed.")
		default:
			inv, err = l.run(ctx, c, nil, g.waived[c.ID])
		}
		if err != nil {
			return nil, err
		}
		out = append(out, inv)
	}
	return out, nil
}

// repeatTurns counts the assistant turns at the end of the transcript, in a
// row, that had a call refused by the breaker.
func repeatTurns(transcript []Message) int {
	n := 0
	for i := len(transcript) - 1; i >= 0; i-- {
		m := transcript[i]
		if m.Role != RoleAssistant {
			continue
		}
		if !turnRefused(transcript[i+1:], m.ToolCalls) {
			break
		}
		n++
	}
	return n
}

// turnRefused reports whether a call of the turn was answered by the
// breaker in results.
func turnRefused(results []Message, calls []ToolCall) bool {
	for _, r := range results {
		if r.Role != RoleTool {
			break
		}
		if strings.HasPrefix(r.Content, RepeatDeniedPrefix) && hasCall(calls, r.ToolCallID) {
			return true
		}
	}
	return false
}

func (l *Loop) maxRepeatDenials() int {
	if l.MaxRepeatDenials > 0 {
		return l.MaxRepeatDenials
	}
	return DefaultMaxRepeatDenials
}

// repeatDeniedText is the result of a call the breaker refused.
func repeatDeniedText() string {
	return fmt.Sprintf("%s: an identical call (same tool, same arguments) was denied earlier in this run, "+
		"so it was not executed and no one was asked. Do not repeat it; tell the user it was not done.", RepeatDeniedPrefix)
}

// expiredText is the result of a call whose turn passed its deadline.
func expiredText() string {
	return ExpiredPrefix + ": this call waited for a person's decision until its approval deadline passed, " +
		"so it was not executed. Tell the user it was not done; do not retry it at once."
}
