package web

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// Bounds of GET /api/v1/runs/{id}/events.
const (
	// maxEventWait caps the wait of a long poll.
	maxEventWait = 30 * time.Second
	// eventPoll is how often a long poll looks at the run's last event:
	// one read of one row by its key.
	eventPoll = 200 * time.Millisecond
	// defaultEvents and maxEvents bound a page of events.
	defaultEvents = 200
	maxEvents     = 500
)

// apiEventPage is the answer of GET /api/v1/runs/{id}/events.
type apiEventPage struct {
	RunID string `json:"run_id"`
	// Status is the run's status, read before its events: once it has
	// ended and the page is not full, the page holds the last event.
	Status string     `json:"status"`
	Events []apiEvent `json:"events"`
	// NextAfter is what to send as after to get the events that follow.
	NextAfter int64 `json:"next_after"`
}

// apiRunEvents gives the events of a run after seq "after", at most
// "limit". With "wait" (seconds, at most 30) and no such event yet, it
// holds the request until one is recorded or the wait ends (a longer wait
// is cut to 30 seconds), then answers
// with what there is, possibly nothing. A run that has ended answers at
// once: nothing more will come. The wait ends with the client's request.
func (s *server) apiRunEvents(c echo.Context) error {
	ctx := c.Request().Context()
	after, err := intParam(c, "after", 0, 0, math.MaxInt64)
	if err != nil {
		return err
	}
	limit, err := intParam(c, "limit", defaultEvents, 1, maxEvents)
	if err != nil {
		return err
	}
	wait, err := intParam(c, "wait", 0, 0, 3600)
	if err != nil {
		return err
	}
	run, err := s.db.Run(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	if wait > 0 && run.LastSeq <= after && !run.Status.Terminal() {
		timer := time.NewTimer(min(time.Duration(wait)*time.Second, maxEventWait))
		defer timer.Stop()
		tick := time.NewTicker(eventPoll)
		defer tick.Stop()
	poll:
		for run.LastSeq <= after && !run.Status.Terminal() {
			select {
			case <-ctx.Done():
				return nil // the client went away: nobody reads an answer
			case <-timer.C:
				break poll
			case <-tick.C:
			}
			if run, err = s.db.Run(ctx, run.ID); err != nil {
				return err
			}
		}
	}
	evs, err := s.db.Events(ctx, run.ID, after, int(limit))
	if err != nil {
		return err
	}
	page := apiEventPage{RunID: run.ID, Status: string(run.Status), Events: make([]apiEvent, 0, len(evs)), NextAfter: after}
	for _, e := range evs {
		page.Events = append(page.Events, apiEvent{Seq: e.Seq, Event: e.Event})
		page.NextAfter = e.Seq
	}
	return writeJSON(c, http.StatusOK, page)
}

// intParam reads a whole-number query parameter between lo and hi, or def
// when it is absent.
func intParam(c echo.Context, name string, def, lo, hi int64) (int64, error) {
	v := c.QueryParam(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		if hi == math.MaxInt64 {
			return 0, badParam(name, "The parameter "+name+" must be a whole number, "+strconv.FormatInt(lo, 10)+" or more.")
		}
		return 0, badParam(name, "The parameter "+name+" must be a whole number from "+
			strconv.FormatInt(lo, 10)+" to "+strconv.FormatInt(hi, 10)+".")
	}
	return n, nil
}
