package web

import (
	"errors"
	"net/http"
	"net/url"

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
		Initiator: c.QueryParam("initiator"), Q: c.QueryParam("q")}
	if f.Status != "" && !validStatus(f.Status) {
		return newHTTPError(http.StatusBadRequest, "Bad filter", "Unknown status "+f.Status+".")
	}
	rf := store.RunFilter{Status: engine.Status(f.Status), Agent: f.Agent, InitiatedBy: f.Initiator, Query: f.Q,
		Before: c.QueryParam("before")}
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
	v := views.HistoryView{Filter: f, Total: min(total, maxHistoryCount), TotalMore: total > maxHistoryCount}
	for _, st := range statuses {
		v.Statuses = append(v.Statuses, string(st))
	}
	for _, a := range s.cfg.Agents {
		v.Agents = append(v.Agents, a.Name)
	}
	now := s.now()
	for _, r := range page.Runs {
		v.Rows = append(v.Rows, views.HistoryRow{ID: r.ID, Agent: r.Agent, Model: r.Model, Status: string(r.Status),
			InitiatedBy: r.InitiatedBy, Prompt: r.Prompt, Created: stamp(r.CreatedAt), Duration: runDuration(r, now),
			Tokens: r.Usage.TotalTokens})
	}
	if page.Next != "" {
		q := url.Values{}
		for k, val := range map[string]string{"status": f.Status, "agent": f.Agent, "initiator": f.Initiator, "q": f.Q} {
			if val != "" {
				q.Set(k, val)
			}
		}
		q.Set("before", page.Next)
		v.NextURL = "/runs?" + q.Encode()
	}
	return render(c, http.StatusOK, views.HistoryPage(s.layout(c, "Runs", "runs"), v))
}

func validStatus(s string) bool {
	for _, st := range statuses {
		if string(st) == s {
			return true
		}
	}
	return false
}
