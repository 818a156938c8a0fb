package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// healthz answers liveness probes; it also checks that the database answers.
func (s *server) healthz(c echo.Context) error {
	if _, err := s.db.CountWaitingUpTo(c.Request().Context(), 1); err != nil {
		return c.String(http.StatusServiceUnavailable, "database unavailable\n")
	}
	return c.String(http.StatusOK, "ok\n")
}

// home sends people where they can act: operators to the playground, viewers
// to the history, visitors to sign in.
func (s *server) home(c echo.Context) error {
	switch {
	case hasRole(c, "operator"):
		return c.Redirect(http.StatusSeeOther, "/runs/new")
	case hasRole(c, "viewer"):
		return c.Redirect(http.StatusSeeOther, "/runs")
	default:
		return c.Redirect(http.StatusSeeOther, "/login")
	}
}
