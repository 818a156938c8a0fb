// Package web is countersign's HTTP interface: Echo routes and handlers,
// cookie sessions, CSRF, roles, and the one place where domain errors become
// status codes and readable pages.
package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/a-h/templ"
	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"

	"countersign/engine"
	"countersign/engine/mcptools"
	"countersign/static"
	"countersign/store"
	"countersign/views"
)

// MaxBodyBytes bounds a request body; larger ones are refused with 413.
const MaxBodyBytes = 64 << 10

// OfferedModel is a model the playground offers: its entry name and what the
// picker says of it.
type OfferedModel struct {
	Name, Description string
}

// Config is what the web app needs. Store, Runtime, Agents, Models, Assets
// and SessionKey are required.
type Config struct {
	Store      *store.DB
	Runtime    *engine.Runtime
	Agents     []engine.Agent
	Models     []OfferedModel
	Assets     *static.Assets
	SessionKey []byte
	// SessionMaxAge is how long a sign-in lasts (default 12 hours).
	SessionMaxAge time.Duration
	// SignIn throttles failed sign-ins; the zero value takes the defaults
	// of SignInLimits.
	SignIn SignInLimits
	// Servers, when not nil, returns where the MCP servers of an agent
	// stand, for the playground and the run page.
	Servers func(agent string) []mcptools.Status
	Logger  *slog.Logger
	Now     func() time.Time
}

// server holds what the handlers share.
type server struct {
	cfg      Config
	db       *store.DB
	rt       *engine.Runtime
	sessions *sessions.CookieStore
	throttle *throttle
	origins  *http.CrossOriginProtection
	log      *slog.Logger
	now      func() time.Time
}

// New returns the Echo app with every route of routes.go.
func New(cfg Config) (*echo.Echo, error) {
	if cfg.Store == nil || cfg.Runtime == nil || cfg.Assets == nil || len(cfg.Agents) == 0 || len(cfg.Models) == 0 {
		return nil, errors.New("web: store, runtime, assets, agents and models are required")
	}
	if len(cfg.SessionKey) < 32 {
		return nil, errors.New("web: the session key must be at least 32 bytes")
	}
	if cfg.SessionMaxAge <= 0 {
		cfg.SessionMaxAge = 12 * time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &server{cfg: cfg, db: cfg.Store, rt: cfg.Runtime, log: cfg.Logger, now: cfg.Now,
		sessions: newCookieStore(cfg.SessionKey, cfg.SessionMaxAge),
		throttle: newThrottle(cfg.SignIn, cfg.Now), origins: http.NewCrossOriginProtection()}

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// The client address (for the sign-in throttle) is the peer's, or, when
	// the peer is a proxy on a private or loopback address, the nearest
	// untrusted address in X-Forwarded-For. Echo's default would take the
	// first X-Forwarded-For entry, which any client can set.
	e.IPExtractor = echo.ExtractIPFromXFFHeader()
	e.HTTPErrorHandler = s.handleError
	s.routes(e)
	return e, nil
}

// render writes a component with status.
func render(c echo.Context, status int, comp templ.Component) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	return comp.Render(c.Request().Context(), c.Response().Writer)
}

// isHTMX reports whether the request was made by htmx.
func isHTMX(c echo.Context) bool { return c.Request().Header.Get("HX-Request") == "true" }

// layout returns the shared layout for the signed-in user (if any).
func (s *server) layout(c echo.Context, title, active string) views.Layout {
	l := views.Layout{Title: title, Active: active, CSRF: csrfToken(c),
		CSS: s.cfg.Assets.URL("app.css"), JS: s.cfg.Assets.URL("app.js"), Icon: s.cfg.Assets.URL(faviconAsset)}
	if s.cfg.Assets.Has("vendor/htmx.min.js") {
		l.HTMX = s.cfg.Assets.URL("vendor/htmx.min.js")
	}
	if u, ok := currentUser(c); ok {
		l.User = &views.User{Name: u.Name, Role: u.Role,
			CanOperate: hasRole(c, store.RoleOperator), IsAdmin: hasRole(c, store.RoleAdmin)}
		if n, err := s.db.CountWaitingUpTo(c.Request().Context(), maxBadgeCount); err == nil {
			l.InboxCount = n
		}
		l.Flash = popFlash(c)
	}
	return l
}

// httpError is an error with the status and sentence a person sees.
type httpError struct {
	status  int
	title   string
	message string
}

func (e *httpError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.title, e.message) }

func newHTTPError(status int, title, message string) error {
	return &httpError{status: status, title: title, message: message}
}

var (
	errForbidden = newHTTPError(http.StatusForbidden, "Not allowed", "Your role does not allow this.")
	errBadCSRF   = newHTTPError(http.StatusForbidden, "Form expired",
		"The form's security token was missing or wrong. Reload the page and try again.")
	errCrossOrigin = newHTTPError(http.StatusForbidden, "Request from another site",
		"Your browser sent this from another site, so it was refused. Open countersign and try again from there.")
)

// classify maps an error to what a person sees. Domain errors are mapped
// here and nowhere else.
func classify(err error) *httpError {
	var he *httpError
	var decided *engine.DecidedError
	var late *engine.DeadlineError
	var input *engine.InputError
	var ee *echo.HTTPError
	switch {
	case errors.As(err, &he):
		return he
	case errors.As(err, &decided):
		return &httpError{http.StatusConflict, "Already decided", decidedSentence(decided)}
	case errors.As(err, &late):
		return &httpError{http.StatusConflict, "Too late", "The approval deadline of this turn passed at " +
			views.HumanTime(late.At) + ", so it was answered as expired and the run carried on."}
	case errors.Is(err, engine.ErrRunNotFound), errors.Is(err, store.ErrNotFound):
		return &httpError{http.StatusNotFound, "Not found", "There is nothing here. Check the link, or find the run in the history."}
	case errors.Is(err, engine.ErrStaleTurn):
		return &httpError{http.StatusConflict, "Stale decision", "That decision was made on a turn that is no longer pending. Look at the current card and decide again."}
	case errors.Is(err, engine.ErrRunTerminal):
		return &httpError{http.StatusConflict, "Run has ended", "This run has already ended; there is nothing left to decide or cancel."}
	case errors.Is(err, engine.ErrNotWaiting):
		return &httpError{http.StatusConflict, "Not waiting", "This run is not waiting for a decision."}
	case errors.Is(err, engine.ErrGrantsNotAccepted):
		return &httpError{http.StatusForbidden, "No standing grants", "This agent needs a second approver, so it takes no standing grants."}
	case errors.Is(err, store.ErrTokenRevoked):
		return &httpError{http.StatusConflict, "Already revoked", "This token was already revoked."}
	case errors.Is(err, store.ErrGrantRevoked):
		return &httpError{http.StatusConflict, "Already revoked", "This grant was already revoked: calls of its tool ask a person again."}
	case errors.Is(err, engine.ErrSelfApproval):
		return &httpError{http.StatusForbidden, "Second approver needed", "You started this run, and its agent requires another operator to approve it. You may still deny it."}
	case errors.Is(err, engine.ErrCorruptState):
		return &httpError{http.StatusConflict, "Damaged run state", "The stored state of this run could not be read, so the decision was refused and the run was left as it was. An operator can cancel it."}
	case errors.As(err, &input):
		return &httpError{http.StatusUnprocessableEntity, "Check your input", input.Message}
	case errors.Is(err, engine.ErrInvalidInput):
		return &httpError{http.StatusUnprocessableEntity, "Check your input", "Check what you entered and try again."}
	case errors.Is(err, engine.ErrUnknownAgent):
		return &httpError{http.StatusUnprocessableEntity, "Not configured", "That agent is not configured on this server."}
	case errors.Is(err, engine.ErrUnknownModel):
		return &httpError{http.StatusUnprocessableEntity, "Not configured", "That model is not configured on this server."}
	case errors.Is(err, engine.ErrClosed):
		return &httpError{http.StatusServiceUnavailable, "Shutting down", "The server is shutting down. Try again in a moment."}
	case errors.As(err, &ee):
		msg := http.StatusText(ee.Code)
		switch ee.Code {
		case http.StatusNotFound:
			return &httpError{ee.Code, "Not found", "There is no page at this address."}
		case http.StatusRequestEntityTooLarge:
			return &httpError{ee.Code, "Too large", "The request was too large."}
		case http.StatusMethodNotAllowed:
			return &httpError{ee.Code, "Method not allowed", "This address does not accept that method."}
		}
		return &httpError{ee.Code, msg, msg + "."}
	default:
		return &httpError{http.StatusInternalServerError, "Something went wrong", "The server could not finish this request. It has been logged; try again."}
	}
}

// handleError is Echo's error handler: every error becomes a readable page,
// or a fragment for htmx, never a stack trace.
func (s *server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	if isAPI(c) {
		s.writeProblem(c, err)
		return
	}
	he := classify(err)
	if he.status >= 500 {
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	} else {
		s.log.Debug("request refused", "path", c.Request().URL.Path, "status", he.status, "err", err)
	}
	v := views.ErrorView{Status: he.status, Title: he.title, Message: he.message}
	var rerr error
	if c.Request().Method == http.MethodHead {
		rerr = c.NoContent(he.status)
	} else if isHTMX(c) {
		rerr = render(c, he.status, views.ErrorFragment(v))
	} else {
		rerr = render(c, he.status, views.ErrorPage(s.layout(c, he.title, ""), v))
	}
	if rerr != nil && !errors.Is(rerr, context.Canceled) {
		s.log.Error("render error page", "err", rerr)
	}
}

// decidedSentence says who decided a turn first, and when.
func decidedSentence(d *engine.DecidedError) string {
	if d.By == "" {
		return "Someone else decided this turn first."
	}
	verb := "Decided"
	if d.Dec == engine.VerdictExpire {
		return "No decision came before the approval deadline: the turn expired at " + views.HumanTime(d.At) + "."
	}
	switch d.Dec {
	case engine.VerdictApprove:
		verb = "Approved"
	case engine.VerdictDeny:
		verb = "Denied"
	}
	return verb + " by " + d.By + " at " + views.HumanTime(d.At) + "."
}
