package web

import (
	"errors"
	"net/http"
	"strings"

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

func (s *server) login(c echo.Context) error {
	name := strings.TrimSpace(c.FormValue("name"))
	next := safeNext(c.FormValue("next"))
	u, err := s.db.Authenticate(c.Request().Context(), name, c.FormValue("password"))
	if errors.Is(err, store.ErrBadCredentials) {
		s.log.Info("sign-in refused", "user", name)
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

func (s *server) logout(c echo.Context) error {
	if err := s.signOut(c); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/login")
}

// safeNext keeps a post-sign-in redirect on this site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.ContainsAny(next, "\r\n") {
		return "/"
	}
	return next
}
