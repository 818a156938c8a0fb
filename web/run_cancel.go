package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// runCancel cancels a run that has not ended.
func (s *server) runCancel(c echo.Context) error {
	u, _ := currentUser(c)
	run, err := s.db.Run(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	if err := s.rt.Cancel(c.Request().Context(), run.ID, u.Name); err != nil {
		return err
	}
	s.log.Info("run cancelled", "run", run.ID, "by", u.Name)
	if err := setFlash(c, "ok", "Cancelled. A running step stops at its next boundary."); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/runs/"+run.ID)
}
