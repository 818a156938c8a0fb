package views

import (
	"net/url"
	"strconv"
	"strings"
)

// PollState is what the run page's poller asks for: the steps after After,
// and, while the run waits, whether it still waits on Turn.
type PollState struct {
	RunID  string
	After  int64
	Turn   string
	Active bool
}

// replyID names the text of a model turn that may be the final answer.
func replyID(seq int64) string { return "reply-" + strconv.FormatInt(seq, 10) }

// pollStateURL is the address a poller asks: with the turn the page shows,
// so that the server can answer 204 while nothing changed.
func pollStateURL(p PollState) string {
	u := pollURL(p.RunID, p.After)
	if p.Turn != "" {
		u += "&turn=" + url.QueryEscape(p.Turn)
	}
	return u
}

// pollEvery is the poller's cadence: every second while the run works,
// every two while it waits for a person.
func pollEvery(p PollState) string {
	if p.Turn != "" {
		return "every 2s"
	}
	return "every 1s"
}

// decisionPoll is the poller after an htmx decision: quick, to show what
// the decision started, or, when a card stays (the preview of an edit),
// slow on the card's turn.
func decisionPoll(runID string, card *ApprovalCard, after int64) PollState {
	p := PollState{RunID: runID, After: after, Active: true}
	if card != nil {
		p.Turn = card.Digest
		if card.After > after {
			p.After = card.After
		}
	}
	return p
}

// turnIntro says what the card's turn holds, each kind for what it is:
// "2 calls: 1 write waits for you, 1 read held with it." A viewer, who
// cannot decide, is told what waits for an operator instead.
func turnIntro(card ApprovalCard) string {
	you := "you"
	if !card.CanDecide {
		you = "an operator"
	}
	n := map[string]int{}
	for _, c := range card.Calls {
		n[c.Kind]++
	}
	if len(card.Calls) == 1 {
		switch card.Calls[0].Kind {
		case "question":
			if !card.CanDecide {
				return "The agent asks a question. It waits for an operator's answer, which it gets as the result."
			}
			return "The agent asks you a question. It waits for your answer, which it gets as the result."
		case "write":
			return "1 call that changes something waits for " + you + ". It does not run until it is decided."
		case "read":
			return "1 call that only reads waits for " + you + ". It does not run until it is decided."
		}
		return "1 call of a tool this agent does not offer waits for " + you + ". It cannot run; deny or answer it."
	}
	var parts []string
	if k := n["write"]; k > 0 {
		parts = append(parts, plural(k, "write", "writes")+waits(k)+" for "+you)
	}
	if k := n["question"]; k > 0 {
		parts = append(parts, plural(k, "question", "questions")+" for "+you)
	}
	if k := n["unknown"]; k > 0 {
		parts = append(parts, plural(k, "call", "calls")+" of a tool not offered")
	}
	if k := n["read"]; k > 0 {
		held := "held with it"
		if len(card.Calls)-k > 1 {
			held = "held with them"
		}
		if len(card.Calls) == k {
			held = "held together"
		}
		parts = append(parts, plural(k, "read", "reads")+" "+held)
	}
	return plural(len(card.Calls), "call", "calls") + " in one turn: " + strings.Join(parts, ", ") +
		". None runs until each is decided: approved, denied, edited, or answered in its place."
}

func waits(n int) string {
	if n == 1 {
		return " waits"
	}
	return " wait"
}

// pendingKindLabel tags a pending call with its kind; a read held with the
// writes of its turn says so.
func pendingKindLabel(c PendingCall) string {
	if c.Kind == "read" && c.Held {
		return "reads only · held with the turn"
	}
	return kindLabel(c.Kind)
}

// readOnlyNote ends the card of a visitor who cannot decide.
func readOnlyNote(card ApprovalCard) string {
	if card.Error != "" {
		return "An operator can cancel this run."
	}
	return "You can follow this run; an operator decides these calls."
}

// suspendedText says what a turn waits on: "Waiting for approval of 1 call:
// publish_page".
func suspendedText(pending []ToolCallView) string {
	if len(pending) == 0 {
		return "Waiting for a decision"
	}
	names := make([]string, len(pending))
	for i, c := range pending {
		names[i] = c.Name
	}
	return "Waiting for approval of " + plural(len(pending), "call", "calls") + ": " + strings.Join(names, ", ")
}

// previewsSummary labels the folded previews of a suspended step, naming a
// warning when one of them could not be made.
func previewsSummary(previews []PreviewView) string {
	s := "Preview"
	if len(previews) > 1 {
		s = "Previews"
	}
	for _, p := range previews {
		if p.Warning {
			return s + " (with a warning)"
		}
	}
	return s
}

// anyServerDown reports whether one of ss is not up.
func anyServerDown(ss []ServerStatus) bool {
	for _, s := range ss {
		if s.State != "up" {
			return true
		}
	}
	return false
}
