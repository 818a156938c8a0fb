package web

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"countersign/store"
)

// routes lists every route of the app.
//
// Middleware is given per route, not per group: Echo gives a group with
// middleware a catch-all route, and a catch-all answers a wrong method on a
// known address with 404 where the router would answer 405 with Allow.
func (s *server) routes(e *echo.Echo) {
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{DisablePrintStack: true,
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			s.log.Error("panic", "path", c.Request().URL.Path, "err", err, "stack", string(stack))
			return err
		}}))
	e.Use(securityHeaders)
	e.Use(s.crossOrigin)
	e.Use(middleware.BodyLimit(bodyLimit))
	// Every page loads the session, error pages (404, 405) too, so that they
	// show who is signed in; the health check and the assets need none, and
	// the API authenticates by token alone (apiAuth).
	e.Use(skipAPI(except(s.withSession, "/healthz", "/favicon.ico", "/static/*")))

	e.GET("/healthz", s.healthz)
	e.GET("/favicon.ico", s.favicon)
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static", s.cfg.Assets)))

	viewer, operator, admin := requireRole(store.RoleViewer), requireRole(store.RoleOperator), requireRole(store.RoleAdmin)

	e.GET("/", s.home)
	e.GET("/login", s.loginForm)
	e.POST("/login", s.login, checkCSRF)
	e.POST("/logout", s.logout, checkCSRF)

	e.GET("/runs", s.runList, viewer)
	e.GET("/runs/:id", s.runShow, viewer)
	e.GET("/runs/:id/steps", s.runSteps, viewer)
	e.GET("/inbox", s.inbox, viewer)
	e.GET("/inbox/count", s.inboxCount, viewer)
	e.GET("/inbox/updates", s.inboxUpdates, viewer)

	e.GET("/runs/new", s.runNew, operator)
	e.POST("/runs", s.runCreate, checkCSRF, operator)
	e.POST("/tool/resume", s.toolResume, checkCSRF, operator)
	e.POST("/inbox/decide", s.inboxDecide, checkCSRF, operator)
	e.POST("/inbox/decide-batch", s.inboxDecideBatch, checkCSRF, operator)
	e.POST("/runs/:id/cancel", s.runCancel, checkCSRF, operator)

	e.GET("/users", s.userList, admin)
	e.POST("/users", s.userCreate, checkCSRF, admin)
	e.POST("/users/:id/role", s.userRole, checkCSRF, admin)
	e.POST("/users/:id/disable", s.userDisable, checkCSRF, admin)
	e.GET("/grants", s.grantList, admin)
	e.POST("/grants/:id/revoke", s.grantRevoke, checkCSRF, admin)

	s.tokenRoutes(e, viewer)
	s.webhookRoutes(e, admin)
	s.apiRoutes(e)
}

// bodyLimit is MaxBodyBytes in Echo's notation.
const bodyLimit = "64K"

// except applies mw to every route but the given ones.
func except(mw echo.MiddlewareFunc, routes ...string) echo.MiddlewareFunc {
	skip := map[string]bool{}
	for _, r := range routes {
		skip[r] = true
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		withMW := mw(next)
		return func(c echo.Context) error {
			if skip[c.Path()] {
				return next(c)
			}
			return withMW(c)
		}
	}
}

// securityHeaders forbids framing, sniffing and any script or style that is
// not served by us: model and tool text can never run in a page. Over HTTPS
// it also sends HSTS. HTTPS is judged as for the session cookie, trusting
// X-Forwarded-Proto: a client that fakes it over plain HTTP gains nothing,
// as browsers ignore Strict-Transport-Security received over plain HTTP.
// includeSubDomains is left out: other hosts of the domain are not ours.
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		if secure(c.Request()) {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		return next(c)
	}
}

// crossOrigin refuses an unsafe request that the browser says comes from
// another origin (Sec-Fetch-Site, else Origin against Host): a second layer
// in front of the CSRF token, answered with the app's error page.
func (s *server) crossOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := s.origins.Check(c.Request()); err != nil {
			return fmt.Errorf("%w: %v", errCrossOrigin, err)
		}
		return next(c)
	}
}

// faviconAsset is the site icon among the static assets.
const faviconAsset = "favicon.svg"

// favicon serves the site icon at the address browsers try by default. This
// address keeps its name when the icon changes, so it is cached for a day,
// not for the year of the hashed one.
func (s *server) favicon(c echo.Context) error {
	r := c.Request().Clone(c.Request().Context())
	r.URL.Path = s.cfg.Assets.URL(faviconAsset)
	w := c.Response()
	w.Before(func() { w.Header().Set("Cache-Control", "public, max-age=86400") })
	s.cfg.Assets.ServeHTTP(w, r)
	return nil
}
