package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"countersign/store"
	"countersign/views"
)

// tokenRoutes lists the pages where a user manages API tokens. Every
// signed-in user may hold tokens, which act with the user's role; an admin
// sees and may revoke everyone's.
func (s *server) tokenRoutes(e *echo.Echo, viewer echo.MiddlewareFunc) {
	e.GET("/tokens", s.tokenList, viewer)
	e.POST("/tokens", s.tokenCreate, checkCSRF, viewer)
	e.POST("/tokens/:id/revoke", s.tokenRevoke, checkCSRF, viewer)
}

// tokenList shows the tokens.
func (s *server) tokenList(c echo.Context) error {
	return s.renderTokens(c, http.StatusOK, views.TokensView{})
}

// renderTokens renders the tokens page over v with the list filled in. The
// page may hold a new secret, so it is never cached.
func (s *server) renderTokens(c echo.Context, status int, v views.TokensView) error {
	me, _ := currentUser(c)
	owner := me.ID
	if me.Role == store.RoleAdmin {
		owner, v.AllUsers = 0, true
	}
	tokens, err := s.db.Tokens(c.Request().Context(), owner)
	if err != nil {
		return err
	}
	for _, t := range tokens {
		v.Tokens = append(v.Tokens, views.TokenRow{ID: t.ID, Name: t.Name, User: t.UserName, Hint: t.Hint,
			Created: stamp(t.CreatedAt), LastUsed: stamp(t.LastUsedAt), Revoked: stamp(t.RevokedAt)})
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return render(c, status, views.TokensPage(s.layout(c, "API tokens", "tokens"), v))
}

// tokenCreate makes a token for the signed-in user and shows its secret in
// the answer, once: it is not redirected, so the secret never travels in a
// flash cookie or an address.
func (s *server) tokenCreate(c echo.Context) error {
	me, _ := currentUser(c)
	name := c.FormValue("name")
	t, secret, err := s.db.CreateToken(c.Request().Context(), me.ID, name)
	if errors.Is(err, store.ErrInvalidToken) {
		return s.renderTokens(c, http.StatusUnprocessableEntity, views.TokensView{Name: name,
			Error: fmt.Sprintf("A token needs a name of 1 to %d characters.", store.MaxTokenName)})
	}
	if err != nil {
		return err
	}
	s.log.Info("API token created", "token", t.ID, "name", t.Name, "user", me.Name)
	return s.renderTokens(c, http.StatusCreated, views.TokensView{Created: &views.CreatedToken{Name: t.Name, Secret: secret}})
}

// tokenRevoke revokes a token of the signed-in user, or any token for an
// admin; another user's token is not found.
func (s *server) tokenRevoke(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return store.ErrNotFound
	}
	me, _ := currentUser(c)
	owner := me.ID
	if me.Role == store.RoleAdmin {
		owner = 0
	}
	if err := s.db.RevokeToken(c.Request().Context(), id, owner); err != nil {
		return err
	}
	s.log.Info("API token revoked", "token", id, "by", me.Name)
	if err := setFlash(c, "ok", "Token revoked. Calls that send it are refused from now on."); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/tokens")
}
