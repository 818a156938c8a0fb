package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"countersign/engine"
)

// The webhook event types an endpoint may subscribe to.
const (
	// WebhookRunWaiting: a turn of a run waits for a decision (a suspended
	// event).
	WebhookRunWaiting = "run.waiting"
	// WebhookRunDecided: a waiting turn was decided, by a person or by its
	// deadline (a decision event).
	WebhookRunDecided = "run.decided"
	// WebhookRunFinished: a run ended, completed, failed or cancelled (a
	// finished or failed event).
	WebhookRunFinished = "run.finished"
)

// WebhookEventTypes lists the event types an endpoint may subscribe to, in
// the order a run meets them.
func WebhookEventTypes() []string {
	return []string{WebhookRunWaiting, WebhookRunDecided, WebhookRunFinished}
}

// webhookType is the webhook event type of events of kind k, or "" for the
// kinds no webhook reports. Every end of a run, cancelled ones included, is a
// finished or failed event written by FinishRun or RequestCancel.
func webhookType(k engine.EventKind) string {
	switch k {
	case engine.EventSuspended:
		return WebhookRunWaiting
	case engine.EventDecision:
		return WebhookRunDecided
	case engine.EventFinished, engine.EventFailed:
		return WebhookRunFinished
	}
	return ""
}

// maxAnswerBytes bounds the final answer a run.finished payload carries; a
// longer one is cut, and the run page or the API has it whole.
const maxAnswerBytes = 4096

// webhookData is what a payload's data adds, per type, to the fields every
// type has (run_id, seq, status, agent, model, initiated_by), which the
// INSERT reads from the run row in the same transaction.
type webhookData struct {
	// run.waiting and run.decided: the turn, as the API's decide names it.
	Digest string `json:"digest,omitempty"`
	// run.waiting: the calls that wait for a decision.
	Pending []webhookCall `json:"pending,omitempty"`

	// run.decided. A turn that expired is decided by "deadline"
	// (engine.ExpiredBy) with the decision "expire".
	DecidedBy string           `json:"decided_by,omitempty"`
	Decision  engine.Verdict   `json:"decision,omitempty"`
	Verdicts  []webhookVerdict `json:"verdicts,omitempty"`
	Reason    string           `json:"reason,omitempty"`

	// run.finished.
	Termination engine.Termination `json:"termination,omitempty"`
	Answer      string             `json:"answer,omitempty"`
	Error       string             `json:"error,omitempty"`
	CancelledBy string             `json:"cancelled_by,omitempty"`
}

type webhookCall struct {
	ID   string `json:"id"`
	Tool string `json:"tool"`
}

type webhookVerdict struct {
	CallID  string         `json:"call_id"`
	Tool    string         `json:"tool,omitempty"`
	Verdict engine.Verdict `json:"verdict"`
}

// dataOf returns the type-specific data of ev's payload.
func dataOf(ev engine.Event) webhookData {
	var d webhookData
	switch ev.Kind {
	case engine.EventSuspended:
		d.Digest = ev.Digest
		d.Pending = make([]webhookCall, len(ev.Pending))
		for i, c := range ev.Pending {
			d.Pending[i] = webhookCall{ID: c.ID, Tool: c.Name}
		}
	case engine.EventDecision:
		d.Digest, d.DecidedBy, d.Decision, d.Reason = ev.Digest, ev.By, ev.Decision, ev.Reason
		for _, v := range ev.Verdicts {
			d.Verdicts = append(d.Verdicts, webhookVerdict{CallID: v.CallID, Tool: v.Tool, Verdict: v.Verdict})
		}
	default:
		d.Termination, d.Answer, d.Error = ev.Termination, clipUTF8(ev.Text, maxAnswerBytes), ev.Error
		if ev.Termination == engine.TermCancelled {
			d.CancelledBy = ev.By
		}
	}
	return d
}

// clipUTF8 cuts s to at most n bytes, on a character boundary.
func clipUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// enqueueDeliveries writes the webhook deliveries that ev causes into the
// outbox, in the transaction that inserts ev: one per enabled endpoint
// subscribed to ev's type, in one INSERT … SELECT. A kind no webhook reports
// costs nothing, and a reported kind one small read while no endpoint is
// enabled. The payload follows Standard Webhooks ({"type",
// "timestamp", "data"}); the run's fields come from its row as this
// transaction left it, so status is the status the event brought.
func enqueueDeliveries(ctx context.Context, tx writeTx, id string, seq int64, ev engine.Event) error {
	typ := webhookType(ev.Kind)
	if typ == "" {
		return nil
	}
	const q = `INSERT INTO webhook_delivery
			(id, endpoint_id, event_type, run_id, seq, payload, next_attempt_at, created_at)
		SELECT 'msg_' || r.id || '_' || ?2 || '_' || e.id, e.id, ?3, r.id, ?2,
			json_object('type', ?3, 'timestamp', ?4, 'data', json_patch(json_object(
				'run_id', r.id, 'seq', ?2, 'status', r.status, 'agent', r.agent,
				'model', r.model, 'initiated_by', r.initiated_by), ?5)),
			?6, ?6
		FROM agent_run r, webhook_endpoint e
		WHERE r.id = ?1 AND e.disabled_at IS NULL
			AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE json_each.value = ?3)`
	// Most servers have no endpoint: a small read, in this transaction, spares
	// them the payload's encoding and the INSERT's preparation.
	var some bool
	if err := tx.GetContext(ctx, &some, `SELECT EXISTS (SELECT 1 FROM webhook_endpoint WHERE disabled_at IS NULL)`); err != nil {
		return fmt.Errorf("look up webhook endpoints: %w", err)
	}
	if !some {
		return nil
	}
	data, err := json.Marshal(dataOf(ev))
	if err != nil {
		return fmt.Errorf("encode %s webhook: %w", typ, err)
	}
	at := ev.At.UTC().Truncate(time.Millisecond)
	if _, err := tx.ExecContext(ctx, q, id, seq, typ, at.Format(time.RFC3339Nano), string(data), millis(at)); err != nil {
		return fmt.Errorf("enqueue %s webhooks: %w", typ, err)
	}
	return nil
}
