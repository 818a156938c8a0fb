package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"countersign/engine"
	"countersign/views"
)

// maxInbox bounds the inbox page; maxBadgeCount is where the navigation
// badge stops counting (it shows "999+").
const (
	maxInbox      = 500
	maxBadgeCount = 1000
)

// inbox lists every run waiting for approval, oldest first.
func (s *server) inbox(c echo.Context) error {
	ctx := c.Request().Context()
	runs, err := s.db.WaitingRuns(ctx, maxInbox)
	if err != nil {
		return err
	}
	var v views.InboxView
	now := s.now()
	for _, r := range runs {
		item := views.InboxItem{RunID: r.ID, Agent: r.Agent, InitiatedBy: r.InitiatedBy, Prompt: r.Prompt,
			Age: humanDuration(now.Sub(r.UpdatedAt))}
		if !r.DeadlineAt.IsZero() {
			left := r.DeadlineAt.Sub(now)
			item.TimeLeft = humanDuration(left)
			// Close to its deadline: the last quarter of its wait, or the
			// last half minute.
			item.Soon = left < 30*time.Second || left < r.DeadlineAt.Sub(r.UpdatedAt)/4
		}
		if sus, err := s.db.SuspendedState(ctx, r.ID); err == nil {
			if st, err := sus.Decode(); err == nil {
				for _, p := range st.Pending {
					name := p.Name
					if s.rt.CallKind(r.Agent, p) == engine.CallQuestion {
						q, _ := questionOf(p.Arguments)
						name = "question: " + q
					}
					item.Tools = append(item.Tools, name)
				}
			} else {
				item.Tools = []string{"(damaged state)"}
			}
		}
		v.Items = append(v.Items, item)
	}
	return render(c, http.StatusOK, views.InboxPage(s.layout(c, "Inbox", "inbox"), v))
}

// inboxCount renders the nav badge alone, for its own polling.
func (s *server) inboxCount(c echo.Context) error {
	n, err := s.db.CountWaitingUpTo(c.Request().Context(), maxBadgeCount)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.InboxBadge(n))
}
