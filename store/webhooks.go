package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"countersign/engine"
)

// Errors of the webhook outbox.
var (
	// ErrStaleAttempt refuses to mark an attempt whose delivery has moved
	// on: another attempt took it over (its lease ran out), or it was
	// delivered.
	ErrStaleAttempt = errors.New("webhook attempt no longer current")
	// ErrDeliveryPending refuses to redeliver a delivery that is still
	// pending: it is sent anyway.
	ErrDeliveryPending = errors.New("webhook delivery still pending")
)

// Limits of an endpoint's fields.
const (
	maxWebhookURL         = 2048
	maxWebhookDescription = 200
)

// WebhookEndpoint is a URL that receives signed deliveries of the event
// types it subscribes to.
type WebhookEndpoint struct {
	ID          int64
	URL         string
	Events      []string
	Description string
	CreatedBy   string
	CreatedAt   time.Time
	// DisabledAt is zero while the endpoint is enabled.
	DisabledAt time.Time
}

// Enabled reports whether the endpoint gets deliveries.
func (e WebhookEndpoint) Enabled() bool { return e.DisabledAt.IsZero() }

// NewWebhookEndpoint is what registering an endpoint needs.
type NewWebhookEndpoint struct {
	// URL is an absolute http or https URL.
	URL string
	// Events are some of WebhookEventTypes, at least one.
	Events      []string
	Description string
	CreatedBy   string
}

type endpointRow struct {
	ID          int64  `db:"id"`
	URL         string `db:"url"`
	Events      string `db:"events"`
	Description string `db:"description"`
	CreatedBy   string `db:"created_by"`
	CreatedAt   int64  `db:"created_at"`
	DisabledAt  *int64 `db:"disabled_at"`
}

func (r endpointRow) endpoint() WebhookEndpoint {
	return WebhookEndpoint{ID: r.ID, URL: r.URL, Events: decodeNames(r.Events), Description: r.Description,
		CreatedBy: r.CreatedBy, CreatedAt: fromMillis(r.CreatedAt), DisabledAt: nullMillis(r.DisabledAt)}
}

const endpointColumns = `id, url, events, description, created_by, created_at, disabled_at`

// CheckWebhookEndpoint returns an *engine.InputError naming the first field
// of n that is wrong, or nil. The URL must be absolute http or https with a
// host; the events some of WebhookEventTypes, at least one.
func CheckWebhookEndpoint(n NewWebhookEndpoint) error {
	u, err := url.Parse(n.URL)
	switch {
	case n.URL == "" || len(n.URL) > maxWebhookURL || err != nil || (u.Scheme != "http" && u.Scheme != "https") ||
		u.Host == "" || u.User != nil || u.Fragment != "" || strings.ContainsAny(n.URL, " \t\r\n"):
		return &engine.InputError{Field: "url", Message: fmt.Sprintf(
			"The URL must be an absolute http:// or https:// address with a host, without credentials, at most %d characters.", maxWebhookURL)}
	case len(n.Events) == 0:
		return &engine.InputError{Field: "events", Message: "Choose at least one event to send."}
	case utf8.RuneCountInString(n.Description) > maxWebhookDescription || !utf8.ValidString(n.Description):
		return &engine.InputError{Field: "description", Message: fmt.Sprintf(
			"The description must be at most %d characters of text.", maxWebhookDescription)}
	}
	for _, ev := range n.Events {
		if !slices.Contains(WebhookEventTypes(), ev) {
			return &engine.InputError{Field: "events", Message: "Unknown event " + fmt.Sprintf("%q", ev) +
				": choose among " + strings.Join(WebhookEventTypes(), ", ") + "."}
		}
	}
	return nil
}

// CreateWebhookEndpoint registers an endpoint, enabled, and returns it with
// its signing secret: "whsec_" and the base64 of 32 random bytes, as
// Standard Webhooks libraries take it. The secret is shown to the admin once;
// it is kept in the database because every delivery is signed with it.
// Bad input is an *engine.InputError and stores nothing.
func (db *DB) CreateWebhookEndpoint(ctx context.Context, n NewWebhookEndpoint) (WebhookEndpoint, string, error) {
	n.URL, n.Description = strings.TrimSpace(n.URL), strings.TrimSpace(n.Description)
	if err := CheckWebhookEndpoint(n); err != nil {
		return WebhookEndpoint{}, "", fmt.Errorf("create webhook endpoint: %w", err)
	}
	var key [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		return WebhookEndpoint{}, "", fmt.Errorf("create webhook endpoint: %w", err)
	}
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key[:])
	// Keep the events in the canonical order, each once.
	var events []string
	for _, t := range WebhookEventTypes() {
		if slices.Contains(n.Events, t) {
			events = append(events, t)
		}
	}
	evJSON, err := json.Marshal(events)
	if err != nil {
		return WebhookEndpoint{}, "", fmt.Errorf("create webhook endpoint: %w", err)
	}
	const q = `INSERT INTO webhook_endpoint (url, secret, events, description, created_by, created_at)
		VALUES (?, ?, ?, ?, ?, ?) RETURNING ` + endpointColumns
	var row endpointRow
	err = db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		return tx.GetContext(ctx, &row, q, n.URL, secret, string(evJSON), n.Description, n.CreatedBy, millis(db.now()))
	})
	if err != nil {
		return WebhookEndpoint{}, "", fmt.Errorf("create webhook endpoint: %w", err)
	}
	return row.endpoint(), secret, nil
}

// WebhookEndpoints lists every endpoint, oldest first.
func (db *DB) WebhookEndpoints(ctx context.Context) ([]WebhookEndpoint, error) {
	const q = `SELECT ` + endpointColumns + ` FROM webhook_endpoint ORDER BY id`
	var rows []endpointRow
	if err := db.db.SelectContext(ctx, &rows, q); err != nil {
		return nil, fmt.Errorf("webhook endpoints: %w", err)
	}
	out := make([]WebhookEndpoint, len(rows))
	for i, r := range rows {
		out[i] = r.endpoint()
	}
	return out, nil
}

// SetWebhookEndpointEnabled enables or disables endpoint id and returns it.
// A disabled endpoint gets no new deliveries, and its pending ones wait
// until it is enabled again. Changing nothing is not an error.
func (db *DB) SetWebhookEndpointEnabled(ctx context.Context, id int64, enabled bool) (WebhookEndpoint, error) {
	const q = `UPDATE webhook_endpoint
		SET disabled_at = CASE WHEN ?1 THEN NULL ELSE COALESCE(disabled_at, ?2) END
		WHERE id = ?3 RETURNING ` + endpointColumns
	var row endpointRow
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		return tx.GetContext(ctx, &row, q, enabled, millis(db.now()), id)
	})
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return WebhookEndpoint{}, fmt.Errorf("set webhook endpoint %d enabled=%t: %w", id, enabled, err)
	}
	return row.endpoint(), nil
}

// DeleteWebhookEndpoint deletes endpoint id with its deliveries, pending
// ones included, and returns what it was.
func (db *DB) DeleteWebhookEndpoint(ctx context.Context, id int64) (WebhookEndpoint, error) {
	const q = `DELETE FROM webhook_endpoint WHERE id = ? RETURNING ` + endpointColumns
	var row endpointRow
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error { return tx.GetContext(ctx, &row, q, id) })
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return WebhookEndpoint{}, fmt.Errorf("delete webhook endpoint %d: %w", id, err)
	}
	return row.endpoint(), nil
}

// The statuses of a delivery.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	// DeliveryFailed: the retries ran out; only a redelivery sends it again.
	DeliveryFailed = "failed"
)

// WebhookDelivery is a delivery of one event to one endpoint, as the outbox
// holds it.
type WebhookDelivery struct {
	// ID is the stable message id, sent as webhook-id on every attempt.
	ID         string
	EndpointID int64
	// URL is the endpoint's URL; Secret its signing secret, filled in only
	// by ClaimDueDeliveries.
	URL    string
	Secret string
	Type   string
	RunID  string
	Seq    int64
	// Payload is the exact body that is signed and sent.
	Payload []byte
	Status  string
	// Attempts counts the attempts started, the one being made included.
	Attempts       int
	NextAttemptAt  time.Time
	LastStatusCode int
	LastError      string
	CreatedAt      time.Time
	DeliveredAt    time.Time
}

type deliveryRow struct {
	ID             string `db:"id"`
	EndpointID     int64  `db:"endpoint_id"`
	URL            string `db:"url"`
	Secret         string `db:"secret"`
	Type           string `db:"event_type"`
	RunID          string `db:"run_id"`
	Seq            int64  `db:"seq"`
	Payload        string `db:"payload"`
	Status         string `db:"status"`
	Attempts       int    `db:"attempts"`
	NextAttemptAt  int64  `db:"next_attempt_at"`
	LastStatusCode int    `db:"last_status_code"`
	LastError      string `db:"last_error"`
	CreatedAt      int64  `db:"created_at"`
	DeliveredAt    *int64 `db:"delivered_at"`
}

func (r deliveryRow) delivery() WebhookDelivery {
	return WebhookDelivery{ID: r.ID, EndpointID: r.EndpointID, URL: r.URL, Secret: r.Secret, Type: r.Type,
		RunID: r.RunID, Seq: r.Seq, Payload: []byte(r.Payload), Status: r.Status, Attempts: r.Attempts,
		NextAttemptAt: fromMillis(r.NextAttemptAt), LastStatusCode: r.LastStatusCode, LastError: r.LastError,
		CreatedAt: fromMillis(r.CreatedAt), DeliveredAt: nullMillis(r.DeliveredAt)}
}

const deliveryColumns = `id, endpoint_id, event_type, run_id, seq, payload, status, attempts,
	next_attempt_at, last_status_code, last_error, created_at, delivered_at`

// ClaimDueDeliveries takes up to limit pending deliveries of enabled
// endpoints that are due at now, oldest due first, for one attempt each:
// in one UPDATE … RETURNING it counts the attempt and moves next_attempt_at
// to now+lease, so no other claim takes them while the attempt runs. An
// attempt that never reports (its process died) is due again when the lease
// ends. The deliveries come with their endpoint's URL and secret.
//
// It is called every second or so: when nothing is due, a read on the
// readers' pool says so and the writer is not taken.
func (db *DB) ClaimDueDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]WebhookDelivery, error) {
	const due = `SELECT d.id FROM webhook_delivery d INDEXED BY webhook_delivery_due
			JOIN webhook_endpoint e ON e.id = d.endpoint_id
			WHERE d.status = 'pending' AND d.next_attempt_at <= ?2 AND e.disabled_at IS NULL
			ORDER BY d.next_attempt_at LIMIT ?3`
	const claim = `UPDATE webhook_delivery SET attempts = attempts + 1, next_attempt_at = ?1
		WHERE id IN (` + due + `) RETURNING ` + deliveryColumns
	const endpoints = `SELECT id, url, secret FROM webhook_endpoint WHERE id IN (?)`
	var first []string
	if err := db.db.SelectContext(ctx, &first, due, nil /* ?1 is the claim's */, millis(now), 1); err != nil {
		return nil, fmt.Errorf("due webhook deliveries: %w", err)
	}
	if len(first) == 0 {
		return nil, nil
	}
	var rows []deliveryRow
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		if err := tx.SelectContext(ctx, &rows, claim, millis(now.Add(lease)), millis(now), clampLimit(limit, 10, 100)); err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		ids := make([]int64, 0, len(rows))
		for _, r := range rows {
			ids = append(ids, r.EndpointID)
		}
		q, args, err := sqlx.In(endpoints, ids)
		if err != nil {
			return err
		}
		var eps []struct {
			ID     int64  `db:"id"`
			URL    string `db:"url"`
			Secret string `db:"secret"`
		}
		if err := tx.SelectContext(ctx, &eps, q, args...); err != nil {
			return err
		}
		for i := range rows {
			for _, e := range eps {
				if e.ID == rows[i].EndpointID {
					rows[i].URL, rows[i].Secret = e.URL, e.Secret
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim due webhook deliveries: %w", err)
	}
	slices.SortFunc(rows, func(a, b deliveryRow) int { return strings.Compare(a.ID, b.ID) })
	out := make([]WebhookDelivery, len(rows))
	for i, r := range rows {
		out[i] = r.delivery()
	}
	return out, nil
}

// DeliverySucceeded marks delivery id delivered by its attempt number
// attempt, which answered with status code. It returns ErrStaleAttempt,
// changing nothing, when that attempt is no longer the current one.
func (db *DB) DeliverySucceeded(ctx context.Context, id string, attempt, code int, now time.Time) error {
	const q = `UPDATE webhook_delivery
		SET status = 'delivered', last_status_code = ?, last_error = '', delivered_at = ?
		WHERE id = ? AND attempts = ? AND status = 'pending'`
	return db.markAttempt(ctx, "delivered", id, q, code, millis(now), id, attempt)
}

// DefaultBackoff is the wait after each failed attempt: the first retry 10
// seconds after the first attempt, the last one about a day after it. After
// as many failed attempts as it has waits plus one, a delivery fails for
// good.
var DefaultBackoff = []time.Duration{
	10 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 8 * time.Hour,
}

// NextAttempt returns when to try again after failed attempt number attempt
// (1 for the first) at now, by schedule, or false when the schedule is used
// up and the delivery fails for good.
func NextAttempt(schedule []time.Duration, attempt int, now time.Time) (time.Time, bool) {
	if attempt < 1 || attempt > len(schedule) {
		return time.Time{}, false
	}
	return now.Add(schedule[attempt-1]), true
}

// DeliveryFailedAttempt records that attempt number attempt of delivery id
// failed at now, with the status code of the answer (0 for none) and a
// short error: the delivery is due again by schedule (NextAttempt), or fails
// for good when the schedule is used up. It returns the delivery's new
// status, or ErrStaleAttempt, changing nothing, when that attempt is no
// longer the current one.
func (db *DB) DeliveryFailedAttempt(ctx context.Context, id string, attempt, code int, errText string, now time.Time, schedule []time.Duration) (string, error) {
	const retry = `UPDATE webhook_delivery
		SET next_attempt_at = ?, last_status_code = ?, last_error = ?
		WHERE id = ? AND attempts = ? AND status = 'pending'`
	const fail = `UPDATE webhook_delivery
		SET status = 'failed', last_status_code = ?, last_error = ?
		WHERE id = ? AND attempts = ? AND status = 'pending'`
	errText = clipUTF8(errText, 500)
	if next, ok := NextAttempt(schedule, attempt, now); ok {
		return DeliveryPending, db.markAttempt(ctx, "retry", id, retry, millis(next), code, errText, id, attempt)
	}
	return DeliveryFailed, db.markAttempt(ctx, "fail", id, fail, code, errText, id, attempt)
}

// markAttempt runs the update q of an attempt and says whether it matched.
func (db *DB) markAttempt(ctx context.Context, what, id, q string, args ...any) error {
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		return ErrStaleAttempt
	})
	if err != nil {
		return fmt.Errorf("mark webhook delivery %s %s: %w", id, what, err)
	}
	return nil
}

// Redeliver makes a delivered or failed delivery id pending again, due at
// now, with its attempts counted from zero: a delivered one is sent again
// (with the same webhook-id, so a receiver that deduplicates ignores it), a
// failed one gets a fresh schedule. A pending one is refused with
// ErrDeliveryPending: it is sent anyway, and leaving it alone keeps an
// attempt in flight the only one.
func (db *DB) Redeliver(ctx context.Context, id string, now time.Time) (WebhookDelivery, error) {
	const q = `UPDATE webhook_delivery
		SET status = 'pending', attempts = 0, next_attempt_at = ?, delivered_at = NULL
		WHERE id = ? AND status <> 'pending' RETURNING ` + deliveryColumns
	const exists = `SELECT count(*) FROM webhook_delivery WHERE id = ?`
	var row deliveryRow
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		err := tx.GetContext(ctx, &row, q, millis(now), id)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var n int
		if err := tx.GetContext(ctx, &n, exists, id); err != nil {
			return err
		}
		if n == 0 {
			return ErrNotFound
		}
		return ErrDeliveryPending
	})
	if err != nil {
		return WebhookDelivery{}, fmt.Errorf("redeliver webhook %s: %w", id, err)
	}
	return row.delivery(), nil
}

// DeliveryFilter selects deliveries for RecentDeliveries.
type DeliveryFilter struct {
	// RunID, when set, keeps the deliveries of that run.
	RunID string
	// Limit is the most to return: default 50, at most 500.
	Limit int
}

// RecentDeliveries lists deliveries, newest first, with their endpoint's URL
// (never its secret).
func (db *DB) RecentDeliveries(ctx context.Context, f DeliveryFilter) ([]WebhookDelivery, error) {
	const q = `SELECT d.id, d.endpoint_id, d.event_type, d.run_id, d.seq, d.payload, d.status, d.attempts,
			d.next_attempt_at, d.last_status_code, d.last_error, d.created_at, d.delivered_at, e.url
		FROM webhook_delivery d JOIN webhook_endpoint e ON e.id = d.endpoint_id
		WHERE ?1 = '' OR d.run_id = ?1
		ORDER BY d.created_at DESC, d.id DESC LIMIT ?2`
	var rows []deliveryRow
	if err := db.db.SelectContext(ctx, &rows, q, f.RunID, clampLimit(f.Limit, 50, 500)); err != nil {
		return nil, fmt.Errorf("recent webhook deliveries: %w", err)
	}
	out := make([]WebhookDelivery, len(rows))
	for i, r := range rows {
		out[i] = r.delivery()
	}
	return out, nil
}
