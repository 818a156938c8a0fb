package web

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"

	"countersign/store"
)

// apiRoutes lists the routes of the JSON API under /api/v1. Every route but
// the description authenticates by bearer token (apiAuth), then checks the
// role as the pages do; none takes a session or a CSRF token.
func (s *server) apiRoutes(e *echo.Echo) {
	viewer, operator := requireRole(store.RoleViewer), requireRole(store.RoleOperator)

	e.GET("/api/v1/openapi.json", s.apiOpenAPI)

	e.GET("/api/v1/runs", s.apiRunList, s.apiAuth, viewer)
	e.GET("/api/v1/runs/:id", s.apiRunShow, s.apiAuth, viewer)
	e.GET("/api/v1/runs/:id/events", s.apiRunEvents, s.apiAuth, viewer)
	e.GET("/api/v1/runs/:id/audit", s.apiRunAudit, s.apiAuth, viewer)
	e.GET("/api/v1/inbox", s.apiInbox, s.apiAuth, viewer)

	e.POST("/api/v1/runs", s.apiRunCreate, s.apiAuth, operator)
	e.POST("/api/v1/runs/:id/decision", s.apiDecide, s.apiAuth, operator)
	e.POST("/api/v1/runs/:id/cancel", s.apiRunCancel, s.apiAuth, operator)
}

// openAPI is the description of the API, written by hand.
//
//go:embed openapi.json
var openAPI []byte

// apiOpenAPI serves the OpenAPI description of the API; it needs no token.
func (s *server) apiOpenAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openAPI)
}
