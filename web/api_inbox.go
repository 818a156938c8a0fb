package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// apiInboxItem is one turn waiting for a person: the run and its turn.
type apiInboxItem struct {
	Run apiRun `json:"run"`
	// WaitingSince is when the run started waiting.
	WaitingSince time.Time `json:"waiting_since"`
}

// apiInboxPage is the answer of GET /api/v1/inbox.
type apiInboxPage struct {
	// Count is how many turns wait, counted up to 1,000.
	Count int            `json:"count"`
	Items []apiInboxItem `json:"items"`
}

// apiInbox lists the turns waiting for a person, oldest first, as the inbox
// does: each run with its pending turn.
func (s *server) apiInbox(c echo.Context) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	runs, err := s.db.WaitingRuns(ctx, maxInbox)
	if err != nil {
		return err
	}
	page := apiInboxPage{Count: len(runs), Items: make([]apiInboxItem, 0, len(runs))}
	if page.Count == maxInbox {
		if page.Count, err = s.db.CountWaitingUpTo(ctx, maxBadgeCount); err != nil {
			return err
		}
	}
	for _, r := range runs {
		v := apiRunOf(r)
		v.Pending = s.apiTurnOf(ctx, r, u.Name)
		page.Items = append(page.Items, apiInboxItem{Run: v, WaitingSince: r.UpdatedAt.UTC()})
	}
	return writeJSON(c, http.StatusOK, page)
}
