package engine

import "slices"

// Tally counts the calls of a run that did not simply run as the model
// asked, and who decided its turns: what a person needs, besides the run's
// status, to tell a clean run from one whose write was denied or failed.
type Tally struct {
	// Denied counts calls a person denied, and calls the loop breaker
	// refused as repeats of a denied call.
	Denied int
	// FailedWrites counts calls of tools that require approval which ran
	// and failed.
	FailedWrites int
	// Expired counts calls answered as expired: no decision came before
	// the turn's deadline.
	Expired int
	// Waived counts calls that needed approval and ran without a person,
	// because a policy rule or a standing grant allowed them.
	Waived int
	// DecidedBy names the people who decided the run's turns, in the order
	// of their first decision.
	DecidedBy []string
}

// Count adds what ev says to the tally. Only tool_started, tool_finished
// and decision events count; every other event leaves it as it is.
func (t *Tally) Count(ev Event) {
	switch ev.Kind {
	case EventToolStarted:
		if ev.WaivedBy != "" {
			t.Waived++
		}
	case EventToolFinished:
		switch {
		case ev.Outcome == OutcomeDenied || ev.Outcome == OutcomeRepeatDenied:
			t.Denied++
		case ev.Outcome == OutcomeExpired:
			t.Expired++
		case ev.Write && ev.IsError && (ev.Outcome == OutcomeToolError || ev.Outcome == ""):
			t.FailedWrites++
		}
	case EventDecision:
		if ev.By != "" && ev.Decision != VerdictExpire && !slices.Contains(t.DecidedBy, ev.By) {
			t.DecidedBy = append(t.DecidedBy, ev.By)
		}
	}
}

// IsZero reports whether the tally counts nothing.
func (t Tally) IsZero() bool {
	return t.Denied == 0 && t.FailedWrites == 0 && t.Expired == 0 && t.Waived == 0 && len(t.DecidedBy) == 0
}
