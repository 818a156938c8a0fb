package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"

	"countersign/store"
	"countersign/views"
)

const (
	sessionName = "countersign"
	keyUserID   = "uid"
	keyCSRF     = "csrf"
	keySID      = "sid"
	keyEpoch    = "epoch"
	keyFlashK   = "flash_kind"
	keyFlashT   = "flash_text"

	ctxSession = "session"
	ctxUser    = "user"
)

// Ranks of the roles: each role may do what the lower ones may.
var roleRank = map[string]int{store.RoleViewer: 1, store.RoleOperator: 2, store.RoleAdmin: 3}

// newCookieStore derives the signing and encryption keys from the session key.
func newCookieStore(key []byte, maxAge time.Duration) *sessions.CookieStore {
	auth := sha256.Sum256(append([]byte("countersign session auth "), key...))
	enc := sha256.Sum256(append([]byte("countersign session enc "), key...))
	cs := sessions.NewCookieStore(auth[:], enc[:])
	cs.Options = &sessions.Options{Path: "/", MaxAge: int(maxAge.Seconds()), HttpOnly: true, SameSite: http.SameSiteLaxMode}
	cs.MaxAge(int(maxAge.Seconds()))
	return cs
}

func randomToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// secure reports whether the request came over TLS, directly or through a
// proxy that says so.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// withSession loads the session (a broken or forged cookie gives a fresh
// one), gives it a CSRF token, and loads the signed-in user.
func (s *server) withSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		sess, err := s.sessions.Get(r, sessionName)
		if err != nil {
			sess, _ = s.sessions.New(r, sessionName)
			sess.Values = map[any]any{}
		}
		opts := *s.sessions.Options
		opts.Secure = secure(r)
		sess.Options = &opts
		c.Set(ctxSession, sess)
		if _, ok := sess.Values[keyCSRF].(string); !ok {
			sess.Values[keyCSRF] = randomToken()
			if err := sess.Save(r, c.Response()); err != nil {
				return err
			}
		}
		if id, ok := sess.Values[keyUserID].(int64); ok {
			u, err := s.db.UserByID(r.Context(), id)
			epoch, _ := sess.Values[keyEpoch].(int64)
			switch {
			case err == nil && !u.Disabled() && u.SessionEpoch == epoch:
				c.Set(ctxUser, u)
			case err == nil || errors.Is(err, store.ErrNotFound):
				// Disabled, deleted or signed out since: the session ends.
				delete(sess.Values, keyUserID)
				if err := sess.Save(r, c.Response()); err != nil {
					return err
				}
			default:
				return err
			}
		}
		return next(c)
	}
}

// checkCSRF refuses every unsafe request whose _csrf form field or
// X-CSRF-Token header does not match the session's token.
func checkCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		// Read the form first, so that a body over the limit is a 413 and
		// not a missing token.
		if _, err := c.FormParams(); err != nil {
			var he *echo.HTTPError
			if errors.As(err, &he) {
				return he
			}
		}
		want := csrfToken(c)
		got := c.Request().Header.Get("X-CSRF-Token")
		if got == "" {
			got = c.FormValue("_csrf")
		}
		if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			return errBadCSRF
		}
		return next(c)
	}
}

func session(c echo.Context) *sessions.Session {
	sess, _ := c.Get(ctxSession).(*sessions.Session)
	return sess
}

func csrfToken(c echo.Context) string {
	if sess := session(c); sess != nil {
		v, _ := sess.Values[keyCSRF].(string)
		return v
	}
	return ""
}

func currentUser(c echo.Context) (store.User, bool) {
	u, ok := c.Get(ctxUser).(store.User)
	return u, ok
}

// requireRole lets through users of role or above. Anonymous visitors of a
// page are sent to sign in; other anonymous requests get 401.
func requireRole(role string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			u, ok := currentUser(c)
			if !ok {
				if c.Request().Method == http.MethodGet && !isHTMX(c) {
					return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(c.Request().URL.RequestURI()))
				}
				if isHTMX(c) {
					c.Response().Header().Set("HX-Redirect", "/login")
				}
				return newHTTPError(http.StatusUnauthorized, "Sign in needed", "Your session has ended. Sign in again.")
			}
			if roleRank[u.Role] < roleRank[role] {
				return errForbidden
			}
			return next(c)
		}
	}
}

func hasRole(c echo.Context, role string) bool {
	u, ok := currentUser(c)
	return ok && roleRank[u.Role] >= roleRank[role]
}

// signIn starts a fresh session for u: every old value is dropped and the
// CSRF token and session id are new, so a session planted before sign-in is
// worth nothing after it.
func signIn(c echo.Context, u store.User) error {
	sess := session(c)
	sess.Values = map[any]any{keyUserID: u.ID, keyEpoch: u.SessionEpoch, keyCSRF: randomToken(), keySID: randomToken()}
	return sess.Save(c.Request(), c.Response())
}

// signOut ends the session, and with it every other session of the user:
// sessions live in cookies, so a copy of this one would otherwise stay valid.
func (s *server) signOut(c echo.Context) error {
	if u, ok := currentUser(c); ok {
		if err := s.db.EndSessions(c.Request().Context(), u.ID); err != nil {
			return err
		}
	}
	sess := session(c)
	sess.Values = map[any]any{keyCSRF: randomToken()}
	return sess.Save(c.Request(), c.Response())
}

// setFlash keeps a one-off message for the next page.
func setFlash(c echo.Context, kind, text string) error {
	sess := session(c)
	sess.Values[keyFlashK], sess.Values[keyFlashT] = kind, text
	return sess.Save(c.Request(), c.Response())
}

// popFlash returns and forgets the pending message.
func popFlash(c echo.Context) *views.Flash {
	sess := session(c)
	if sess == nil {
		return nil
	}
	text, ok := sess.Values[keyFlashT].(string)
	if !ok {
		return nil
	}
	kind, _ := sess.Values[keyFlashK].(string)
	delete(sess.Values, keyFlashK)
	delete(sess.Values, keyFlashT)
	_ = sess.Save(c.Request(), c.Response())
	return &views.Flash{Kind: kind, Text: text}
}
