package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"countersign/store"
	"countersign/views"
)

func (s *server) loginForm(c echo.Context) error {
	if _, ok := currentUser(c); ok {
		return c.Redirect(http.StatusSeeOther, safeNext(c.QueryParam("next")))
	}
	return render(c, http.StatusOK, views.LoginPage(s.layout(c, "Sign in", ""), views.LoginView{Next: safeNext(c.QueryParam("next"))}))
}

// login signs a user in. Failed sign-ins are throttled per account and per
// address, and password checks are bounded (throttle.go).
func (s *server) login(c echo.Context) error {
	name := strings.TrimSpace(c.FormValue("name"))
	next := safeNext(c.FormValue("next"))
	addr := c.RealIP()
	at, wait := s.throttle.begin(name, addr)
	if wait > 0 {
		secs := retryAfter(wait)
		s.log.Warn("sign-in throttled", "user", name, "addr", addr, "retry_after", secs)
		return s.loginRefused(c, http.StatusTooManyRequests, secs, name, next,
			fmt.Sprintf("Too many failed sign-ins. Try again in %s.", plural(secs, "second", "seconds")))
	}
	if !s.throttle.acquire(c.Request().Context()) {
		at.done(false)
		s.log.Warn("sign-in refused: password checks busy", "user", name, "addr", addr)
		return s.loginRefused(c, http.StatusServiceUnavailable, 1, name, next,
			"The server is busy. Try again in a moment.")
	}
	u, err := s.db.Authenticate(c.Request().Context(), name, c.FormValue("password"))
	s.throttle.release()
	failed := errors.Is(err, store.ErrBadCredentials)
	at.done(failed)
	if failed {
		s.log.Info("sign-in refused", "user", name, "addr", addr)
		return render(c, http.StatusUnauthorized, views.LoginPage(s.layout(c, "Sign in", ""),
			views.LoginView{Name: name, Next: next, Error: "That name and password do not match an active user."}))
	}
	if err != nil {
		return err
	}
	if err := signIn(c, u); err != nil {
		return err
	}
	s.log.Info("signed in", "user", u.Name, "role", u.Role)
	return c.Redirect(http.StatusSeeOther, next)
}

// loginRefused shows the sign-in form again with why, for a sign-in that was
// not checked, and when to try again.
func (s *server) loginRefused(c echo.Context, status, retrySecs int, name, next, why string) error {
	c.Response().Header().Set("Retry-After", strconv.Itoa(retrySecs))
	return render(c, status, views.LoginPage(s.layout(c, "Sign in", ""), views.LoginView{Name: name, Next: next, Error: why}))
}

func (s *server) logout(c echo.Context) error {
	if err := s.signOut(c); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/login")
}

// safeNext keeps a post-sign-in redirect on this site: it must be a path
// that starts with one slash. Browsers drop tabs and newlines anywhere in a
// URL, strip leading controls and spaces, and read a backslash as a slash,
// so "/\t/evil.example" and "/\evil.example" would leave the site; a control
// character or backslash anywhere, a scheme or a host sends the user to /.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || !utf8.ValidString(next) {
		return "/"
	}
	for _, r := range next {
		if r == '\\' || unicode.IsControl(r) {
			return "/"
		}
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "/"
	}
	return next
}

// plural is n with the singular or plural noun.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
