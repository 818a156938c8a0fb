package web

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"countersign/engine"
	"countersign/store"
	"countersign/views"
)

var statuses = []engine.Status{engine.StatusQueued, engine.StatusRunning, engine.StatusWaiting,
	engine.StatusCompleted, engine.StatusFailed, engine.StatusCancelled}

// maxHistoryCount is where the history stops counting matches and says
// "more than": an exact count would cost as much as the history is long.
const maxHistoryCount = 1000

// runList is the history: filters, newest first, keyset pagination, and how
// many runs match.
func (s *server) runList(c echo.Context) error {
	ctx := c.Request().Context()
	f := views.HistoryFilter{Status: c.QueryParam("status"), Agent: c.QueryParam("agent"),
		Initiator: c.QueryParam("initiator"), Q: c.QueryParam("q"),
		Outcome: c.QueryParam("outcome"), DecidedBy: strings.TrimSpace(c.QueryParam("decided_by"))}
	if f.Status != "" && !validStatus(f.Status) {
		return newHTTPError(http.StatusBadRequest, "Bad filter", "Unknown status "+f.Status+".")
	}
	if f.Outcome != "" && !slices.Contains(store.Outcomes, f.Outcome) {
		return newHTTPError(http.StatusBadRequest, "Bad filter", "Unknown outcome "+f.Outcome+".")
	}
	rf := store.RunFilter{Status: engine.Status(f.Status), Agent: f.Agent, InitiatedBy: f.Initiator, Query: f.Q,
		Outcome: f.Outcome, DecidedBy: f.DecidedBy, Before: c.QueryParam("before")}
	page, err := s.db.ListRuns(ctx, rf)
	if errors.Is(err, store.ErrBadCursor) {
		return newHTTPError(http.StatusBadRequest, "Bad page link", "That page link is not valid; start from the first page.")
	}
	if err != nil {
		return err
	}
	total, err := s.db.CountRunsUpTo(ctx, rf, maxHistoryCount+1)
	if err != nil {
		return err
	}
	v := views.HistoryView{Filter: f, Total: min(total, maxHistoryCount), TotalMore: total > maxHistoryCount,
		Outcomes: store.Outcomes}
	for _, st := range statuses {
		v.Statuses = append(v.Statuses, string(st))
	}
	for _, a := range s.cfg.Agents {
		v.Agents = append(v.Agents, a.Name)
	}
	now := s.now()
	for _, r := range page.Runs {
		v.Rows = append(v.Rows, historyRow(r, now))
	}
	if page.Next != "" {
		q := url.Values{}
		for k, val := range map[string]string{"status": f.Status, "agent": f.Agent, "initiator": f.Initiator, "q": f.Q,
			"outcome": f.Outcome, "decided_by": f.DecidedBy} {
			if val != "" {
				q.Set(k, val)
			}
		}
		q.Set("before", page.Next)
		v.NextURL = "/runs?" + q.Encode()
	}
	return render(c, http.StatusOK, views.HistoryPage(s.layout(c, "Runs", "runs"), v))
}

// historyRow is one run as the history lists it: its outcome, who decided
// it, when it was created relative to now, and how long it took once it has
// ended (a time that still grows would read as one).
func historyRow(r engine.Run, now time.Time) views.HistoryRow {
	row := views.HistoryRow{ID: r.ID, Agent: r.Agent, Model: r.Model, Status: string(r.Status),
		InitiatedBy: r.InitiatedBy, Prompt: r.Prompt, Outcome: outcome(r), DecidedBy: r.Tally.DecidedBy,
		Created: moment(r.CreatedAt, now), Tokens: r.Usage.TotalTokens}
	if r.Status.Terminal() {
		row.Duration = runDuration(r, now)
	}
	return row
}

func validStatus(s string) bool {
	for _, st := range statuses {
		if string(st) == s {
			return true
		}
	}
	return false
}
