package web

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"countersign/engine"
	"countersign/views"
)

// runSteps answers htmx polling with only the steps after ?after=, plus the
// header, the card's place and the inbox badge out of band. A page that
// shows the card of a waiting turn sends its digest as ?turn=: while the
// run still waits on that turn and nothing was recorded after ?after=, the
// answer is a 204, found from the run's row alone, which leaves the page
// (and what the operator typed on the card) as it is. Its cost does not
// grow with the steps before after: the run is read by key and the events
// by a range of the primary key.
func (s *server) runSteps(c echo.Context) error {
	ctx := c.Request().Context()
	after, err := strconv.ParseInt(c.QueryParam("after"), 10, 64)
	if err != nil || after < 0 {
		return newHTTPError(http.StatusBadRequest, "Bad request", "The after parameter must be a step number.")
	}
	turn := c.QueryParam("turn")
	run, err := s.db.Run(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	if turn != "" && run.Status == engine.StatusWaiting && run.PendingDigest == turn && run.LastSeq <= after {
		return c.NoContent(http.StatusNoContent)
	}
	u, err := s.runUpdate(c, run, after, turn)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.StepsFragment(u))
}

// runUpdate is what changed for a run page that shows the steps up to
// after and, when turn is set, the card of that waiting turn: the new
// steps, the header, and for the card's place the card of a new turn, the
// notice of who decided turn, or nothing (the operator may be typing on
// the card of the same turn). The flash is cleared once the run has moved
// on to a new turn or ended.
func (s *server) runUpdate(c echo.Context, run engine.Run, after int64, turn string) (views.StepsUpdate, error) {
	ctx := c.Request().Context()
	// Most polls find nothing new: the run's last seq says so without
	// reading the events.
	var evs []engine.RecordedEvent
	var err error
	if run.LastSeq > after {
		if evs, err = s.db.Events(ctx, run.ID, after, maxPollSteps); err != nil {
			return views.StepsUpdate{}, err
		}
	}
	u := views.StepsUpdate{RunID: run.ID, Steps: steps(evs), After: after, Header: headerFor(c, run, s.now()),
		Polling: polling(run) || len(evs) == maxPollSteps, Slot: views.SlotKeep}
	if len(evs) > 0 {
		u.After = evs[len(evs)-1].Seq
		if evs[0].Event.Kind == engine.EventFinished && after > 0 {
			// The final answer came in this answer, the reply it repeats
			// in an earlier one: that reply's text gives way to a note.
			prev, err := s.db.Events(ctx, run.ID, after-1, 1)
			if err != nil {
				return views.StepsUpdate{}, err
			}
			if len(prev) == 1 && answers(prev[0].Event, evs[0].Event) {
				u.Answered = append(u.Answered, prev[0].Seq)
			}
		}
	}
	switch {
	case run.Status == engine.StatusWaiting && run.PendingDigest == turn:
		u.Turn = turn
	case run.Status == engine.StatusWaiting:
		u.Slot, u.Card, u.Turn, u.ClearFlash = views.SlotCard, s.approvalCard(c, run), run.PendingDigest, true
		if u.Card != nil {
			u.Card.After = u.After
		}
	case turn != "":
		u.Slot, u.Decided = views.SlotDecided, s.decidedNotice(c, run, turn)
	}
	if run.Status.Terminal() {
		u.ClearFlash = true
	}
	if n, err := s.db.CountWaitingUpTo(ctx, maxBadgeCount); err == nil {
		u.InboxCount = n
	}
	return u, nil
}
