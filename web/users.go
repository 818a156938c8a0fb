package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"countersign/store"
	"countersign/views"
)

// userList is the admin's user page.
func (s *server) userList(c echo.Context) error {
	return s.renderUsers(c, http.StatusOK, "")
}

func (s *server) renderUsers(c echo.Context, status int, problem string) error {
	users, err := s.db.Users(c.Request().Context())
	if err != nil {
		return err
	}
	v := views.UsersView{Error: problem, Roles: store.Roles(), NewRole: store.RoleOperator}
	for _, u := range users {
		v.Users = append(v.Users, views.UserRow{ID: u.ID, Name: u.Name, Role: u.Role, Created: stamp(u.CreatedAt), Disabled: u.Disabled()})
	}
	return render(c, status, views.UsersPage(s.layout(c, "Users", "users"), v))
}

// userCreate adds a user.
func (s *server) userCreate(c echo.Context) error {
	name, role := strings.TrimSpace(c.FormValue("name")), c.FormValue("role")
	u, err := s.db.CreateUser(c.Request().Context(), name, c.FormValue("password"), role)
	switch {
	case errors.Is(err, store.ErrUserExists):
		return s.renderUsers(c, http.StatusConflict, "A user named "+name+" already exists.")
	case errors.Is(err, store.ErrInvalidUser):
		return s.renderUsers(c, http.StatusUnprocessableEntity, "Names are 1 to 64 letters, digits, dots, dashes or underscores; passwords at least 8 characters; the role admin, operator or viewer.")
	case err != nil:
		return err
	}
	me, _ := currentUser(c)
	s.log.Info("user added", "user", u.Name, "role", u.Role, "by", me.Name)
	return s.usersDone(c, "Added "+u.Name+" as "+u.Role+".")
}

// userRole changes a user's role. Admins cannot demote themselves, so the
// app always keeps one admin who can undo a mistake.
func (s *server) userRole(c echo.Context) error {
	id, err := s.userID(c)
	if err != nil {
		return err
	}
	role := c.FormValue("role")
	if !store.ValidRole(role) {
		return s.renderUsers(c, http.StatusUnprocessableEntity, "The role must be admin, operator or viewer.")
	}
	if me, _ := currentUser(c); me.ID == id && role != store.RoleAdmin {
		return s.renderUsers(c, http.StatusConflict, "You cannot remove your own admin role.")
	}
	if err := s.db.SetRole(c.Request().Context(), id, role); err != nil {
		return err
	}
	return s.usersDone(c, "Role changed.")
}

// userDisable disables a user; their sessions end at their next request.
func (s *server) userDisable(c echo.Context) error {
	id, err := s.userID(c)
	if err != nil {
		return err
	}
	if me, _ := currentUser(c); me.ID == id {
		return s.renderUsers(c, http.StatusConflict, "You cannot disable yourself.")
	}
	if err := s.db.DisableUser(c.Request().Context(), id); err != nil {
		return err
	}
	return s.usersDone(c, "User disabled.")
}

func (s *server) userID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return 0, store.ErrNotFound
	}
	if _, err := s.db.UserByID(c.Request().Context(), id); err != nil {
		return 0, err
	}
	return id, nil
}

func (s *server) usersDone(c echo.Context, text string) error {
	if err := setFlash(c, "ok", text); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/users")
}
