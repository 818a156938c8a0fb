package views

import (
	"strings"
)

// InboxView is the inbox: every turn waiting for a person, oldest first,
// each with what it asks and, for an operator, the form that decides it.
type InboxView struct {
	Items []InboxItem
	// Count is how many turns wait; the page's heading and the nav badge
	// show it.
	Count int
	// CSRF is the token of the decision forms.
	CSRF string
	// CanDecide shows the forms: the viewer is an operator or an admin.
	CanDecide bool
}

// InboxItem is one waiting turn, or, once it has been decided while the
// page was open, the line that says by whom (Decided).
type InboxItem struct {
	RunID, Agent, InitiatedBy, Prompt string
	// Digest names the waiting turn: a decision or a poll names it.
	Digest  string
	Outcome Outcome
	// Started is when the run was created, Waiting since when it waits.
	Started, Waiting Moment
	// TimeLeft is how long the turn may still wait before it expires, empty
	// when it has no deadline; Deadline is that moment and Soon marks one
	// close to it.
	TimeLeft string
	Deadline Moment
	Soon     bool
	// SecondApprover says the agent needs an approver other than the
	// person who started the run; SelfStarted says that person is the
	// viewer, who may only deny or answer.
	SecondApprover, SelfStarted bool
	// Calls are the pending calls with what the form has selected for each.
	Calls []InboxCall
	// Damaged says why the turn cannot be shown or decided.
	Damaged string
	// CanDecide shows the form; CanApprove enables approve and edit. CSRF
	// is the form's token.
	CanDecide, CanApprove bool
	CSRF                  string
	// Error is why the last decision on this turn was refused; Notice asks
	// the operator to check something (the preview of an edit) first.
	Error, Notice string
	// Reason refills the reason box.
	Reason string
	// Decided replaces the item with the line saying who decided the turn.
	Decided *InboxDecided
}

// InboxCall is one pending call of an inbox item: the card's call with its
// arguments in short.
type InboxCall struct {
	PendingCall
	// Short is the arguments as a few key=value pairs; Clipped says it
	// leaves something out, which ArgsPretty has whole.
	Short   string
	Clipped bool
}

// InboxDecided says what became of a turn shown in the inbox.
type InboxDecided struct {
	RunID string
	// Decision is the verdict every call got ("approve", "deny", "expire"),
	// "" for a mix; Ended names a run that ended without a decision (such
	// as "cancelled").
	Decision, By, Reason, Ended string
	// You marks a decision by the viewer.
	You bool
	At  Moment
	// Error is why the viewer's own decision was refused, when it was.
	Error string
}

// Shown is what the inbox poller reports for an item: its run and the turn
// it shows, or only the run for a decided line.
func (it InboxItem) Shown() string {
	if it.Decided != nil {
		return it.Decided.RunID + ":"
	}
	return it.RunID + ":" + it.Digest
}

// inboxItemID is the element id of a run's inbox item.
func inboxItemID(runID string) string { return "inbox-item-" + runID }

// shortRun is the first characters of a run id, enough to tell runs apart
// on a page.
func shortRun(id string) string {
	if len(id) > 10 {
		return id[:10] + "…"
	}
	return id
}

// previewFailure returns the reason of a preview that could not be made,
// which the engine reports as one line: "preview unavailable: …" when the
// tool refused the arguments, "not executed: …" for a tool not offered.
func previewFailure(lines []string) (string, bool) {
	if len(lines) != 1 {
		return "", false
	}
	for _, prefix := range []string{"preview unavailable: ", "not executed: "} {
		if why, ok := strings.CutPrefix(lines[0], prefix); ok {
			return why, true
		}
	}
	return "", false
}

// decidedWords says what became of a turn: "Approved by you", "Denied by
// oscar", "Expired: no decision in time".
func decidedWords(d InboxDecided) string {
	if d.Ended != "" && d.By == "" {
		return "No longer waiting: the run is " + d.Ended
	}
	if d.Decision == "expire" {
		return "Expired: no decision came in time"
	}
	who := d.By
	if d.You {
		who = "you"
	}
	if who == "" {
		who = "someone else"
	}
	return decisionLabel(d.Decision) + " by " + who
}

// inboxHasEdit reports whether an item has a call whose arguments can be
// edited.
func inboxHasEdit(it InboxItem) bool {
	for _, c := range it.Calls {
		if c.Kind == "read" || c.Kind == "write" {
			return true
		}
	}
	return false
}

// editOpen opens the arguments box of a call being edited.
func editOpen(c InboxCall) bool {
	return c.Verdict == "edit" || len(c.EditPreview) > 0
}

// inboxAllLabel names a button that decides every call of an item.
func inboxAllLabel(it InboxItem, verb string) string {
	if len(it.Calls) == 1 {
		return verb
	}
	return verb + " all"
}

// inboxAnswerLabel names the answer verdict: plain for a question, in
// place of running for any other call.
func inboxAnswerLabel(kind string) string {
	if kind == "question" {
		return "Answer"
	}
	return "Answer in its place"
}
