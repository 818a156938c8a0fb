package web

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"countersign/engine"
	"countersign/store"
)

// apiPrefix is where the JSON API lives.
const apiPrefix = "/api/"

// isAPI reports whether the request is one of the JSON API.
func isAPI(c echo.Context) bool { return strings.HasPrefix(c.Request().URL.Path, apiPrefix) }

// mimeProblem is the media type of an error of the API (RFC 9457).
const mimeProblem = "application/problem+json"

// problemBase begins the type of every problem the API answers with; the
// types are listed in docs/API.md. They name a kind of problem and are not
// meant to be fetched.
const problemBase = "urn:countersign:problem:"

// problem is an error of the API as RFC 9457 describes it, with the
// extension members this API adds.
type problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Instance string `json:"instance"`
	// Errors names the fields of the request that are wrong.
	Errors []fieldError `json:"errors,omitempty"`
	// DecidedBy, DecidedAt and Verdict say who decided a turn first.
	DecidedBy string     `json:"decided_by,omitempty"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	Verdict   string     `json:"verdict,omitempty"`
	// IdempotencyKey is the key of a refused Idempotency-Key request.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// fieldError names one wrong field of a request and says what is wrong.
type fieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// apiError is a refusal of the API that says more than an httpError: its
// problem type and the fields it is about.
type apiError struct {
	status  int
	kind    string
	title   string
	message string
	fields  []fieldError
	key     string
}

func (e *apiError) Error() string { return e.title + ": " + e.message }

// badField refuses a request for one wrong field.
func badField(status int, kind, field, message string) *apiError {
	return &apiError{status: status, kind: kind, title: "Check your input", message: message,
		fields: []fieldError{{Field: field, Message: message}}}
}

// problemFor turns an error into the problem the API answers with. Domain
// errors take their status, title and sentence from classify.
func problemFor(c echo.Context, err error) problem {
	p := problem{Instance: c.Request().URL.Path}
	var ae *apiError
	if errors.As(err, &ae) {
		p.Type, p.Title, p.Status, p.Detail = problemBase+ae.kind, ae.title, ae.status, ae.message
		p.Errors, p.IdempotencyKey = ae.fields, ae.key
		return p
	}
	he := classify(err)
	p.Title, p.Status, p.Detail = he.title, he.status, he.message
	p.Type = problemBase + problemKind(err, he.status)
	var decided *engine.DecidedError
	if errors.As(err, &decided) {
		p.DecidedBy, p.Verdict = decided.By, string(decided.Dec)
		if !decided.At.IsZero() {
			at := decided.At.UTC()
			p.DecidedAt = &at
		}
	}
	var input *engine.InputError
	if errors.As(err, &input) && input.Field != "" {
		p.Errors = []fieldError{{Field: input.Field, Message: input.Message}}
	}
	return p
}

// problemKind names the kind of a problem: the domain error it is, or
// else its status.
func problemKind(err error, status int) string {
	var decided *engine.DecidedError
	var late *engine.DeadlineError
	switch {
	case errors.As(err, &decided):
		return "already-decided"
	case errors.As(err, &late):
		return "too-late"
	case errors.Is(err, engine.ErrStaleTurn):
		return "stale-turn"
	case errors.Is(err, engine.ErrRunTerminal):
		return "run-ended"
	case errors.Is(err, engine.ErrNotWaiting):
		return "not-waiting"
	case errors.Is(err, engine.ErrSelfApproval):
		return "second-approver-needed"
	case errors.Is(err, engine.ErrCorruptState):
		return "damaged-state"
	case errors.Is(err, engine.ErrGrantsNotAccepted):
		return "grants-not-accepted"
	case errors.Is(err, store.ErrGrantRevoked):
		return "already-revoked"
	}
	switch status {
	case http.StatusBadRequest:
		return "bad-request"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return "not-found"
	case http.StatusMethodNotAllowed:
		return "method-not-allowed"
	case http.StatusConflict:
		return "conflict"
	case http.StatusRequestEntityTooLarge:
		return "too-large"
	case http.StatusUnsupportedMediaType:
		return "unsupported-media-type"
	case http.StatusUnprocessableEntity:
		return "invalid-input"
	case http.StatusServiceUnavailable:
		return "unavailable"
	}
	if status >= 500 {
		return "server-error"
	}
	return "error"
}

// writeProblem answers an API request with the problem err is.
func (s *server) writeProblem(c echo.Context, err error) {
	if errors.Is(err, context.Canceled) && c.Request().Context().Err() != nil {
		return // the client went away: nobody reads an answer
	}
	p := problemFor(c, err)
	if p.Status >= 500 {
		s.log.Error("api request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	} else {
		s.log.Debug("api request refused", "path", c.Request().URL.Path, "status", p.Status, "err", err)
	}
	var werr error
	if c.Request().Method == http.MethodHead {
		werr = c.NoContent(p.Status)
	} else {
		c.Response().Header().Set(echo.HeaderContentType, mimeProblem)
		c.Response().WriteHeader(p.Status)
		werr = jsonEncoder(c.Response()).Encode(p)
	}
	if werr != nil && !errors.Is(werr, context.Canceled) {
		s.log.Error("write problem", "err", werr)
	}
}
