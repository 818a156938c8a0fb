// Package webhook delivers the webhook outbox that the store fills: it
// claims due deliveries, signs each as the Standard Webhooks specification
// says (webhook-id, webhook-timestamp, webhook-signature), POSTs it to its
// endpoint and records the outcome, retrying a failure by the backoff
// schedule. All its state lives in the outbox, so deliveries are at least
// once across restarts, and always under the same webhook-id.
package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"countersign/store"
)

// Outbox is what the deliverer needs of the store.
type Outbox interface {
	ClaimDueDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.WebhookDelivery, error)
	DeliverySucceeded(ctx context.Context, id string, attempt, code int, now time.Time) error
	DeliveryFailedAttempt(ctx context.Context, id string, attempt, code int, errText string, now time.Time, schedule []time.Duration) (string, error)
}

// Config is what New needs. Every field but Outbox may be left zero for its
// default.
type Config struct {
	Outbox Outbox
	// Client sends the requests. The default follows no redirects: a 3xx
	// answer is a failed attempt, as any answer outside 2xx.
	Client *http.Client
	// Timeout bounds one attempt, answer included (default 10 seconds).
	Timeout time.Duration
	// Lease is how long a claimed delivery is held for its attempt before
	// another claim may take it; longer than Timeout (default Timeout + 30
	// seconds).
	Lease time.Duration
	// Poll is how often the outbox is checked for due deliveries (default
	// one second).
	Poll time.Duration
	// Backoff is the wait after each failed attempt (default
	// store.DefaultBackoff); when it is used up the delivery fails.
	Backoff []time.Duration
	// Concurrency is how many attempts run at once (default 8).
	Concurrency int
	// Now is the clock of claims, backoff and signatures (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Deliverer sends the outbox's deliveries from Start until Close.
type Deliverer struct {
	cfg  Config
	wake chan struct{}

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{} // closed when the loop and its attempts have returned
}

// New returns a deliverer over cfg.Outbox, not started.
func New(cfg Config) (*Deliverer, error) {
	if cfg.Outbox == nil {
		return nil, errors.New("webhook: an outbox is required")
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Lease <= cfg.Timeout {
		cfg.Lease = cfg.Timeout + 30*time.Second
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Backoff == nil {
		cfg.Backoff = store.DefaultBackoff
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Deliverer{cfg: cfg, wake: make(chan struct{}, 1)}, nil
}

// Start starts delivering. Calling it again does nothing.
func (d *Deliverer) Start() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel, d.done = cancel, make(chan struct{})
	go func() {
		defer close(d.done)
		d.loop(ctx)
	}()
}

// Wake makes the deliverer look for due deliveries now rather than at its
// next poll.
func (d *Deliverer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Close stops claiming deliveries and waits for the attempts in flight,
// each bounded by Timeout, to finish and be recorded. It may be called
// without Start, and more than once.
func (d *Deliverer) Close() {
	d.mu.Lock()
	cancel, done := d.cancel, d.done
	d.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// loop claims as many due deliveries as there are free slots, each sent by
// a goroutine of its own, until ctx is cancelled; it then waits for them.
func (d *Deliverer) loop(ctx context.Context) {
	var attempts sync.WaitGroup
	defer attempts.Wait()
	slots := make(chan struct{}, d.cfg.Concurrency)
	tick := time.NewTicker(d.cfg.Poll)
	defer tick.Stop()
	for {
		if free := cap(slots) - len(slots); free > 0 {
			ds, err := d.cfg.Outbox.ClaimDueDeliveries(ctx, d.cfg.Now(), d.cfg.Lease, free)
			if err != nil && ctx.Err() == nil {
				d.cfg.Logger.Error("claim webhook deliveries", "err", err)
			}
			for _, del := range ds {
				slots <- struct{}{}
				attempts.Go(func() {
					defer func() {
						<-slots
						d.Wake() // a free slot may take a due delivery
					}()
					d.attempt(del)
				})
			}
			if len(ds) == free {
				continue // more may be due
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-d.wake:
		}
	}
}

// attempt sends del once and records the outcome. It runs to the end after
// Close, within Timeout, so that an answer received is never forgotten.
func (d *Deliverer) attempt(del store.WebhookDelivery) {
	// The URL stays out of the log: some carry a token of the receiver.
	log := d.cfg.Logger.With("webhook", del.ID, "type", del.Type, "endpoint", del.EndpointID, "attempt", del.Attempts)
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.Timeout)
	code, sendErr := d.send(ctx, del)
	cancel()
	// Recording gets its own bound: the database, not the receiver.
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	now := d.cfg.Now()
	if sendErr == nil {
		if err := d.cfg.Outbox.DeliverySucceeded(ctx, del.ID, del.Attempts, code, now); err != nil {
			log.Error("record webhook delivery", "err", err)
			return
		}
		log.Info("webhook delivered", "status", code)
		return
	}
	status, err := d.cfg.Outbox.DeliveryFailedAttempt(ctx, del.ID, del.Attempts, code, sendErr.Error(), now, d.cfg.Backoff)
	switch {
	case err != nil:
		log.Error("record webhook attempt", "err", err, "attempt_err", sendErr)
	case status == store.DeliveryFailed:
		log.Error("webhook failed for good", "status", code, "err", sendErr)
	default:
		next, _ := store.NextAttempt(d.cfg.Backoff, del.Attempts, now)
		log.Warn("webhook attempt failed", "status", code, "err", sendErr, "retry_at", next)
	}
}

// send POSTs del's payload, signed, and returns the answer's status code.
// Any 2xx is a delivery; anything else an error that says why.
func (d *Deliverer) send(ctx context.Context, del store.WebhookDelivery) (int, error) {
	wh, err := standardwebhooks.NewWebhook(del.Secret)
	if err != nil {
		return 0, fmt.Errorf("signing secret: %w", err)
	}
	now := d.cfg.Now()
	sig, err := wh.Sign(del.ID, now, del.Payload)
	if err != nil {
		return 0, fmt.Errorf("sign: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, del.URL, bytes.NewReader(del.Payload))
	if err != nil {
		return 0, fmt.Errorf("request: %w", err)
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "countersign-webhooks/1")
	h.Set(standardwebhooks.HeaderWebhookID, del.ID)
	h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(standardwebhooks.HeaderWebhookSignature, sig)
	res, err := d.cfg.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the method and URL, which the log has
		}
		return 0, fmt.Errorf("no answer: %w", err)
	}
	defer res.Body.Close()
	// Read a little of the body: its start for the error, the rest (up to
	// a bound) so the connection can be reused.
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return res.StatusCode, nil
	}
	msg := fmt.Sprintf("answered %d %s", res.StatusCode, http.StatusText(res.StatusCode))
	if snippet := strings.TrimSpace(string(body)); snippet != "" && utf8.ValidString(snippet) {
		msg += ": " + clip(snippet, 200)
	}
	return res.StatusCode, errors.New(msg)
}

// clip cuts s to at most n bytes, on a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
