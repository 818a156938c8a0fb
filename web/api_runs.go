package web

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"countersign/engine"
	"countersign/store"
)

// apiRunPage is one page of GET /api/v1/runs.
type apiRunPage struct {
	Runs []apiRun `json:"runs"`
	// NextCursor is the cursor of the next page, or null on the last.
	NextCursor *string `json:"next_cursor"`
}

// apiRunList lists runs newest first, with the history's filters (status,
// agent, initiated_by, q, outcome, decided_by) and its cursor.
func (s *server) apiRunList(c echo.Context) error {
	q := c.QueryParams()
	f := store.RunFilter{Status: engine.Status(q.Get("status")), Agent: q.Get("agent"), InitiatedBy: q.Get("initiated_by"),
		Query: q.Get("q"), Outcome: q.Get("outcome"), DecidedBy: strings.TrimSpace(q.Get("decided_by")), Before: q.Get("cursor")}
	if f.Status != "" && !validStatus(string(f.Status)) {
		return badParam("status", "Unknown status "+strconv.Quote(string(f.Status))+".")
	}
	if f.Outcome != "" && !slices.Contains(store.Outcomes, f.Outcome) {
		return badParam("outcome", "Unknown outcome "+strconv.Quote(f.Outcome)+".")
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > store.MaxRunLimit {
			return badParam("limit", "The limit must be a whole number from 1 to 200.")
		}
		f.Limit = n
	}
	page, err := s.db.ListRuns(c.Request().Context(), f)
	if errors.Is(err, store.ErrBadCursor) {
		return badParam("cursor", "That cursor is not valid; start from the first page.")
	}
	if err != nil {
		return err
	}
	out := apiRunPage{Runs: make([]apiRun, 0, len(page.Runs))}
	for _, r := range page.Runs {
		out.Runs = append(out.Runs, apiRunOf(r))
	}
	if page.Next != "" {
		out.NextCursor = &page.Next
	}
	return writeJSON(c, http.StatusOK, out)
}

// badParam refuses a request for a query parameter it cannot use.
func badParam(name, message string) error {
	return &apiError{status: http.StatusBadRequest, kind: "bad-parameter", title: "Bad parameter", message: message,
		fields: []fieldError{{Field: name, Message: message}}}
}

// apiRunShow gives one run: its status, outcome and totals, its final
// answer once finished and, while it waits, the pending turn.
func (s *server) apiRunShow(c echo.Context) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	run, err := s.db.Run(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	v, err := s.apiRunFull(ctx, run, u.Name)
	if err != nil {
		return err
	}
	v.Audit = s.apiAudit(c, run.ID)
	return writeJSON(c, http.StatusOK, v)
}

// apiRunCancel cancels a run that has not ended: a queued or waiting run at
// once, a running one at its next step. It answers with the run as it is
// then.
func (s *server) apiRunCancel(c echo.Context) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	run, err := s.db.Run(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	if err := s.rt.Cancel(ctx, run.ID, u.Name); err != nil {
		return err
	}
	s.log.Info("run cancelled", "run", run.ID, "by", u.Name, "from", "api")
	return s.writeRunNow(c, run.ID, u.Name)
}

// writeRunNow answers with run id as it is after a change the request made,
// read again, as user sees it.
func (s *server) writeRunNow(c echo.Context, id, user string) error {
	ctx := c.Request().Context()
	run, err := s.db.Run(ctx, id)
	if err != nil {
		return err
	}
	v, err := s.apiRunFull(ctx, run, user)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, v)
}
