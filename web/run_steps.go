package web

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"countersign/engine"
	"countersign/views"
)

// runSteps answers htmx polling with only the steps after ?after=, plus the
// header, card and inbox badge out of band. Its cost does not grow with the
// steps before after: the run is read by key and the events by a range of
// the primary key.
func (s *server) runSteps(c echo.Context) error {
	ctx := c.Request().Context()
	after, err := strconv.ParseInt(c.QueryParam("after"), 10, 64)
	if err != nil || after < 0 {
		return newHTTPError(http.StatusBadRequest, "Bad request", "The after parameter must be a step number.")
	}
	run, err := s.db.Run(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	// Most polls find nothing new: the run's last seq says so without
	// reading the events.
	var evs []engine.RecordedEvent
	if run.LastSeq > after {
		if evs, err = s.db.Events(ctx, run.ID, after, maxPollSteps); err != nil {
			return err
		}
	}
	u := views.StepsUpdate{RunID: run.ID, Steps: steps(evs), After: after, Header: header(run, s.now()),
		Card: s.approvalCard(c, run), Polling: polling(run) || len(evs) == maxPollSteps}
	if len(evs) > 0 {
		u.After = evs[len(evs)-1].Seq
	}
	if n, err := s.db.CountWaitingUpTo(ctx, maxBadgeCount); err == nil {
		u.InboxCount = n
	}
	return render(c, http.StatusOK, views.StepsFragment(u))
}
