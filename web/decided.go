package web

import (
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"

	"countersign/engine"
	"countersign/views"
)

// decidedNotice says what became of turn, a turn of run the page showed
// the card of and that no longer waits: who decided it, when and how; or
// why it ended undecided.
func (s *server) decidedNotice(c echo.Context, run engine.Run, turn string) *views.DecidedNotice {
	ev, ok, err := s.db.DecisionOn(c.Request().Context(), run.ID, turn)
	if err != nil {
		s.log.Error("decision on a turn", "run", run.ID, "err", err)
	}
	if !ok {
		switch {
		case run.Status == engine.StatusCancelled:
			return &views.DecidedNotice{Text: "The run was cancelled before anyone decided this turn."}
		case run.Status.Terminal():
			return &views.DecidedNotice{Text: "The run ended before anyone decided this turn."}
		}
		return &views.DecidedNotice{Text: "This turn no longer waits for a decision."}
	}
	n := &views.DecidedNotice{By: ev.By, Verdict: string(ev.Decision)}
	if ev.Decision == engine.VerdictExpire {
		n.Text = "No decision came in time: the turn expired at " + views.HumanTime(ev.At) + "."
		return n
	}
	by := ev.By
	if u, ok := currentUser(c); ok && u.Name == ev.By {
		by = "you"
	}
	n.Text = "Decided by " + by + " at " + views.HumanTime(ev.At) + ": " + verdictWords(ev) + "."
	return n
}

// verdictWords says how a decision went: "approved", or per call, "1
// approved, 1 denied".
func verdictWords(ev engine.Event) string {
	if ev.Decision != "" {
		return pastTense(ev.Decision)
	}
	var order []engine.Verdict
	counts := map[engine.Verdict]int{}
	for _, cv := range ev.Verdicts {
		if counts[cv.Verdict] == 0 {
			order = append(order, cv.Verdict)
		}
		counts[cv.Verdict]++
	}
	if len(order) == 0 {
		return "decided"
	}
	parts := make([]string, len(order))
	for i, v := range order {
		parts[i] = fmt.Sprintf("%d %s", counts[v], pastTense(v))
	}
	return strings.Join(parts, ", ")
}

func pastTense(v engine.Verdict) string {
	switch v {
	case engine.VerdictApprove:
		return "approved"
	case engine.VerdictDeny:
		return "denied"
	case engine.VerdictEdit:
		return "edited"
	case engine.VerdictAnswer:
		return "answered"
	case engine.VerdictExpire:
		return "expired"
	}
	return string(v)
}
