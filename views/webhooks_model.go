package views

import (
	"net/url"
	"strconv"
)

// WebhooksView is the admin's webhooks page: the endpoints, the form that
// adds one, and the most recent deliveries.
type WebhooksView struct {
	// Error says why the form was refused; Field names the field.
	Error, Field string
	// URL, Description and Events refill the form after a refusal.
	URL, Description string
	Events           []WebhookEventOption
	Endpoints        []WebhookEndpointRow
	Deliveries       []WebhookDeliveryRow
	// Created is the endpoint just added with its secret, shown this once.
	Created *WebhookCreated
}

// WebhookEventOption is an event type the form offers.
type WebhookEventOption struct {
	Type, Label string
	Checked     bool
}

// WebhookEndpointRow is a registered endpoint.
type WebhookEndpointRow struct {
	ID                 int64
	URL, Description   string
	Events             []string
	Created, CreatedBy string
	Enabled            bool
}

// WebhookDeliveryRow is a delivery of the outbox.
type WebhookDeliveryRow struct {
	ID, Endpoint, Type, RunID string
	Seq                       int64
	// Status is pending, delivered or failed.
	Status   string
	Attempts int
	// LastCode is the status code of the last answer, 0 for none;
	// LastError why the last attempt failed.
	LastCode  int
	LastError string
	// NextAttempt is when a pending delivery is tried next; Created when
	// the event happened.
	NextAttempt, Created string
}

// WebhookCreated is an endpoint just added, with its signing secret.
type WebhookCreated struct {
	URL, Secret string
}

func webhookURL(id int64, action string) string {
	return "/webhooks/" + strconv.FormatInt(id, 10) + "/" + action
}

func redeliverURL(id string) string {
	return "/webhooks/deliveries/" + url.PathEscape(id) + "/redeliver"
}

// deliveryClass colours a delivery's status as the run statuses are.
func deliveryClass(status string) string {
	switch status {
	case "delivered":
		return "status-completed"
	case "failed":
		return "status-failed"
	}
	return "status-waiting_for_approval"
}

// webhooksIntro opens the admin's webhooks page.
const webhooksIntro = "countersign POSTs a JSON message, signed as the Standard Webhooks specification says, " +
	"to each enabled endpoint subscribed to an event: a turn waiting for a decision, a decision, a run that ended. " +
	"A receiver that fails or is down gets the message again with backoff for about a day, always with the same webhook-id."
