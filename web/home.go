package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"countersign/store"
)

// home sends people where they can act: operators to the playground, viewers
// to the history, visitors to sign in.
func (s *server) home(c echo.Context) error {
	switch {
	case hasRole(c, store.RoleOperator):
		return c.Redirect(http.StatusSeeOther, "/runs/new")
	case hasRole(c, store.RoleViewer):
		return c.Redirect(http.StatusSeeOther, "/runs")
	default:
		return c.Redirect(http.StatusSeeOther, "/login")
	}
}
