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
