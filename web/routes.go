package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"countersign/store"
)

// routes lists every route of the app.
func (s *server) routes(e *echo.Echo) {
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{DisablePrintStack: true,
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			s.log.Error("panic", "path", c.Request().URL.Path, "err", err, "stack", string(stack))
			return err
		}}))
	e.Use(securityHeaders)
	e.Use(middleware.BodyLimit(bodyLimit))

	e.GET("/healthz", s.healthz)
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static", s.cfg.Assets)))

	app := e.Group("", s.withSession, checkCSRF)
	app.GET("/", s.home)
	app.GET("/login", s.loginForm)
	app.POST("/login", s.login)
	app.POST("/logout", s.logout)

	viewer := app.Group("", requireRole(store.RoleViewer))
	viewer.GET("/runs", s.runList)
	viewer.GET("/runs/:id", s.runShow)
	viewer.GET("/runs/:id/steps", s.runSteps)
	viewer.GET("/inbox", s.inbox)
	viewer.GET("/inbox/count", s.inboxCount)

	operator := app.Group("", requireRole(store.RoleOperator))
	operator.GET("/runs/new", s.runNew)
	operator.POST("/runs", s.runCreate)
	operator.POST("/tool/resume", s.toolResume)
	operator.POST("/runs/:id/cancel", s.runCancel)

	admin := app.Group("", requireRole(store.RoleAdmin))
	admin.GET("/users", s.userList)
	admin.POST("/users", s.userCreate)
	admin.POST("/users/:id/role", s.userRole)
	admin.POST("/users/:id/disable", s.userDisable)

	// The groups above have no prefix, so each registers a catch-all with its
	// role check; this one, registered last, makes an unknown URL a 404 for
	// everyone.
	app.RouteNotFound("/*", func(echo.Context) error { return echo.ErrNotFound })
}

// bodyLimit is MaxBodyBytes in Echo's notation.
const bodyLimit = "64K"

// securityHeaders forbids framing, sniffing and any script or style that is
// not served by us: model and tool text can never run in a page.
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		return next(c)
	}
}
