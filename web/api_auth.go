package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"countersign/store"
)

// apiAuth authenticates an API request by its bearer token and makes the
// token's user the current user, with the user's role as it is now. Cookies
// play no part: a session does not authenticate the API, and a token needs
// no CSRF token, as a browser never sends it on its own.
func (s *server) apiAuth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		scheme, secret, _ := strings.Cut(c.Request().Header.Get(echo.HeaderAuthorization), " ")
		secret = strings.TrimSpace(secret)
		if !strings.EqualFold(scheme, "Bearer") || secret == "" {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="countersign"`)
			return &apiError{status: http.StatusUnauthorized, kind: "unauthorized", title: "Token needed",
				message: "Send an API token in the header Authorization: Bearer <token>."}
		}
		u, err := s.db.UserByToken(c.Request().Context(), secret)
		if errors.Is(err, store.ErrBadToken) || (err == nil && u.Disabled()) {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="countersign", error="invalid_token"`)
			return &apiError{status: http.StatusUnauthorized, kind: "bad-token", title: "Token not valid",
				message: "This API token is unknown or revoked, or its user is disabled."}
		}
		if err != nil {
			return err
		}
		c.Set(ctxUser, u)
		return next(c)
	}
}

// skipAPI applies mw to every request but those of the API, which carry
// no session.
func skipAPI(mw echo.MiddlewareFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		withMW := mw(next)
		return func(c echo.Context) error {
			if isAPI(c) {
				return next(c)
			}
			return withMW(c)
		}
	}
}
