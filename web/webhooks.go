package web

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"countersign/engine"
	"countersign/store"
	"countersign/views"
)

// webhookRoutes lists the admin pages of the webhook endpoints and deliveries.
func (s *server) webhookRoutes(e *echo.Echo, admin echo.MiddlewareFunc) {
	e.GET("/webhooks", s.webhookList, admin)
	e.POST("/webhooks", s.webhookCreate, checkCSRF, admin)
	e.POST("/webhooks/:id/disable", s.webhookEnable(false), checkCSRF, admin)
	e.POST("/webhooks/:id/enable", s.webhookEnable(true), checkCSRF, admin)
	e.POST("/webhooks/:id/delete", s.webhookDelete, checkCSRF, admin)
	e.POST("/webhooks/deliveries/:id/redeliver", s.webhookRedeliver, checkCSRF, admin)
}

// webhookEventLabels say what each event type reports, for the form.
var webhookEventLabels = map[string]string{
	store.WebhookRunWaiting:  "a turn waits for a decision",
	store.WebhookRunDecided:  "a turn was decided",
	store.WebhookRunFinished: "a run ended",
}

// webhookList is the admin's webhooks page.
func (s *server) webhookList(c echo.Context) error {
	return s.renderWebhooks(c, http.StatusOK, views.WebhooksView{})
}

// renderWebhooks renders the page over v, which holds what is particular to
// this answer (a refused form, a secret just made), with the endpoints and
// the recent deliveries. A form not refilled offers every event checked.
func (s *server) renderWebhooks(c echo.Context, status int, v views.WebhooksView) error {
	ctx := c.Request().Context()
	endpoints, err := s.db.WebhookEndpoints(ctx)
	if err != nil {
		return err
	}
	deliveries, err := s.db.RecentDeliveries(ctx, store.DeliveryFilter{Limit: 100})
	if err != nil {
		return err
	}
	chosen := v.Events
	v.Events = nil
	for _, t := range store.WebhookEventTypes() {
		checked := v.Error == "" || slices.ContainsFunc(chosen, func(o views.WebhookEventOption) bool { return o.Type == t })
		v.Events = append(v.Events, views.WebhookEventOption{Type: t, Label: webhookEventLabels[t], Checked: checked})
	}
	for _, e := range endpoints {
		v.Endpoints = append(v.Endpoints, views.WebhookEndpointRow{ID: e.ID, URL: e.URL, Description: e.Description,
			Events: e.Events, Created: stamp(e.CreatedAt), CreatedBy: e.CreatedBy, Enabled: e.Enabled()})
	}
	for _, d := range deliveries {
		v.Deliveries = append(v.Deliveries, views.WebhookDeliveryRow{ID: d.ID, Endpoint: d.URL, Type: d.Type, RunID: d.RunID,
			Seq: d.Seq, Status: d.Status, Attempts: d.Attempts, LastCode: d.LastStatusCode, LastError: d.LastError,
			NextAttempt: stamp(d.NextAttemptAt), Created: stamp(d.CreatedAt)})
	}
	return render(c, status, views.WebhooksPage(s.layout(c, "Webhooks", "webhooks"), v))
}

// webhookCreate registers an endpoint and answers with the page showing its
// secret, this once: it is never put in a cookie or a URL. Bad input
// re-renders the form with 422 and stores nothing.
func (s *server) webhookCreate(c echo.Context) error {
	r := c.Request()
	if err := r.ParseForm(); err != nil {
		return &engine.InputError{Field: "form", Message: "The form could not be read. Reload the page and try again."}
	}
	me, _ := currentUser(c)
	n := store.NewWebhookEndpoint{URL: r.PostForm.Get("url"), Description: r.PostForm.Get("description"),
		Events: r.PostForm["events"], CreatedBy: me.Name}
	e, secret, err := s.db.CreateWebhookEndpoint(c.Request().Context(), n)
	var input *engine.InputError
	if errors.As(err, &input) {
		v := views.WebhooksView{Error: input.Message, Field: input.Field, URL: n.URL, Description: n.Description}
		for _, t := range n.Events {
			v.Events = append(v.Events, views.WebhookEventOption{Type: t})
		}
		return s.renderWebhooks(c, http.StatusUnprocessableEntity, v)
	}
	if err != nil {
		return err
	}
	s.log.Info("webhook endpoint added", "endpoint", e.ID, "events", e.Events, "by", me.Name)
	return s.renderWebhooks(c, http.StatusCreated, views.WebhooksView{Created: &views.WebhookCreated{URL: e.URL, Secret: secret}})
}

// webhookEnable returns the handler that enables or disables an endpoint.
func (s *server) webhookEnable(enabled bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := strconv.ParseInt(c.Param("id"), 10, 64)
		if err != nil {
			return store.ErrNotFound
		}
		e, err := s.db.SetWebhookEndpointEnabled(c.Request().Context(), id, enabled)
		if err != nil {
			return err
		}
		me, _ := currentUser(c)
		s.log.Info("webhook endpoint changed", "endpoint", e.ID, "enabled", enabled, "by", me.Name)
		text := "Disabled " + e.URL + ": it gets no deliveries until it is enabled again."
		if enabled {
			text = "Enabled " + e.URL + "."
		}
		return s.webhooksDone(c, "ok", text)
	}
}

// webhookDelete deletes an endpoint and its deliveries.
func (s *server) webhookDelete(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return store.ErrNotFound
	}
	e, err := s.db.DeleteWebhookEndpoint(c.Request().Context(), id)
	if err != nil {
		return err
	}
	me, _ := currentUser(c)
	s.log.Info("webhook endpoint deleted", "endpoint", e.ID, "by", me.Name)
	return s.webhooksDone(c, "ok", "Deleted "+e.URL+" and its deliveries.")
}

// webhookRedeliver sends a delivered or failed delivery again, with the
// same webhook-id.
func (s *server) webhookRedeliver(c echo.Context) error {
	d, err := s.db.Redeliver(c.Request().Context(), c.Param("id"), s.now())
	if errors.Is(err, store.ErrDeliveryPending) {
		return s.webhooksDone(c, "info", "That delivery is still pending: it will be sent without asking.")
	}
	if err != nil {
		return err
	}
	me, _ := currentUser(c)
	s.log.Info("webhook redelivery", "webhook", d.ID, "by", me.Name)
	return s.webhooksDone(c, "ok", fmt.Sprintf("%s will be sent again shortly, with the same webhook-id.", d.ID))
}

func (s *server) webhooksDone(c echo.Context, kind, text string) error {
	if err := setFlash(c, kind, text); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/webhooks")
}
