package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"countersign/engine"
	"countersign/store"
	"countersign/views"
)

// maxInbox bounds the inbox page; maxBadgeCount is where the navigation
// badge stops counting (it shows "999+").
const (
	maxInbox      = 500
	maxBadgeCount = 1000
)

// inbox lists every turn waiting for a person, oldest first, each with its
// calls and, for an operator, the form that decides it.
func (s *server) inbox(c echo.Context) error {
	v, err := s.inboxView(c, nil)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.InboxPage(s.layout(c, "Inbox", "inbox"), v))
}

// inboxView is the inbox for the current user. fix, when set, adjusts
// each item before it is shown (a refused decision, an edit's preview).
func (s *server) inboxView(c echo.Context, fix func(*views.InboxItem)) (views.InboxView, error) {
	runs, err := s.db.WaitingRuns(c.Request().Context(), maxInbox)
	if err != nil {
		return views.InboxView{}, err
	}
	v := views.InboxView{Count: len(runs), CSRF: csrfToken(c), CanDecide: hasRole(c, store.RoleOperator)}
	for _, r := range runs {
		it := s.inboxItem(c, r)
		if fix != nil {
			fix(&it)
		}
		v.Items = append(v.Items, it)
	}
	if v.Count == maxInbox {
		if n, err := s.db.CountWaitingUpTo(c.Request().Context(), maxBadgeCount); err == nil {
			v.Count = n
		}
	}
	return v, nil
}

// inboxItem is run's waiting turn as the inbox shows it to the current
// user: the card of the run page, with the arguments in short.
func (s *server) inboxItem(c echo.Context, run engine.Run) views.InboxItem {
	now := s.now()
	it := views.InboxItem{RunID: run.ID, Agent: run.Agent, InitiatedBy: run.InitiatedBy, Prompt: run.Prompt,
		Digest: run.PendingDigest, Outcome: outcome(run), Started: moment(run.CreatedAt, now), Waiting: moment(run.UpdatedAt, now),
		SecondApprover: s.rt.NeedsSecondApprover(run.Agent), CSRF: csrfToken(c)}
	if !run.DeadlineAt.IsZero() {
		left := run.DeadlineAt.Sub(now)
		it.TimeLeft, it.Deadline = humanDuration(left), moment(run.DeadlineAt, now)
		// Close to its deadline: the last quarter of its wait, or the
		// last half minute.
		it.Soon = left < 30*time.Second || left < run.DeadlineAt.Sub(run.UpdatedAt)/4
	}
	card := s.approvalCard(c, run)
	if card == nil {
		it.Damaged = "This run is not waiting any more."
		return it
	}
	if card.Error != "" {
		it.Damaged = card.Error
		return it
	}
	it.CanDecide, it.CanApprove = card.CanDecide, card.CanApprove
	if u, ok := currentUser(c); ok && it.SecondApprover && !s.rt.MayApprove(run, u.Name) {
		it.SelfStarted = true
	}
	setInboxCalls(&it, card)
	return it
}

// setInboxCalls puts the calls of card into the item, with their
// arguments in short.
func setInboxCalls(it *views.InboxItem, card *views.ApprovalCard) {
	it.Calls = it.Calls[:0]
	for _, pc := range card.Calls {
		short, clipped := shortArgs(pc.ArgsPretty)
		it.Calls = append(it.Calls, views.InboxCall{PendingCall: pc, Short: short, Clipped: clipped})
	}
}

// Arguments in short: at most shortPairs key=value pairs, each value at
// most shortValue characters, on one line.
const (
	shortPairs = 3
	shortValue = 40
)

// shortArgs is a call's arguments in a few key=value pairs on one line, in
// the order the model gave them; clipped says something was left out.
// Arguments that are not a JSON object are shown as they came, clipped.
func shortArgs(args string) (short string, clipped bool) {
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return cutRunes(oneLine(args), shortPairs*shortValue)
	}
	var pairs []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return cutRunes(oneLine(args), shortPairs*shortValue)
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return cutRunes(oneLine(args), shortPairs*shortValue)
		}
		if len(pairs) == shortPairs {
			clipped = true
			continue
		}
		val := string(raw)
		var str string
		if json.Unmarshal(raw, &str) == nil {
			val = str
		} else {
			var buf bytes.Buffer
			if json.Compact(&buf, raw) == nil {
				val = buf.String()
			}
		}
		val, cut := cutRunes(oneLine(val), shortValue)
		clipped = clipped || cut || strings.Contains(val, "⏎")
		pairs = append(pairs, key+"="+val)
	}
	if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) {
		return cutRunes(oneLine(args), shortPairs*shortValue)
	}
	if len(pairs) == 0 {
		return "(no arguments)", false
	}
	return strings.Join(pairs, ", "), clipped
}

// oneLine shows line breaks as ⏎ so that a value fits on one line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\n", "⏎")
}

// inboxCount renders the nav badge alone, for its own polling.
func (s *server) inboxCount(c echo.Context) error {
	n, err := s.db.CountWaitingUpTo(c.Request().Context(), maxBadgeCount)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.InboxBadge(n))
}

// inboxUpdates answers the inbox's poll. The page sends, as "shown", what
// each of its items shows: "run:digest" for a waiting turn, "run:" for the
// line of a decided one. Nothing changed is a 204, found from the list of
// waiting runs alone. Otherwise, out of band: each item whose turn was
// decided becomes the line that says by whom, a run waiting on a new turn
// gets its new item, runs that started waiting are added at the end, and
// the count and badge are updated. An item whose turn did not change is
// left alone, so nobody loses what they were typing.
func (s *server) inboxUpdates(c echo.Context) error {
	ctx := c.Request().Context()
	shown := map[string]string{}
	var order []string
	params, err := c.FormParams()
	if err != nil {
		return err
	}
	for _, v := range params["shown"] {
		if len(order) == maxInbox {
			break // more than a page shows: the rest is not ours to look up
		}
		id, digest, ok := strings.Cut(v, ":")
		if !ok || id == "" {
			continue
		}
		if _, dup := shown[id]; !dup {
			order = append(order, id)
		}
		shown[id] = digest
	}
	runs, err := s.db.WaitingRuns(ctx, maxInbox)
	if err != nil {
		return err
	}
	waiting := map[string]engine.Run{}
	var changed, added []views.InboxItem
	for _, r := range runs {
		waiting[r.ID] = r
		digest, ok := shown[r.ID]
		switch {
		case !ok:
			added = append(added, s.inboxItem(c, r))
		case digest != r.PendingDigest:
			changed = append(changed, s.inboxItem(c, r))
		}
	}
	for _, id := range order {
		if _, ok := waiting[id]; ok || shown[id] == "" {
			continue
		}
		d, err := s.decidedOn(ctx, c, id, shown[id])
		if err != nil {
			return err
		}
		changed = append(changed, views.InboxItem{RunID: id, Decided: &d})
	}
	count := len(runs)
	if count == maxInbox {
		if count, err = s.db.CountWaitingUpTo(ctx, maxBadgeCount); err != nil {
			return err
		}
	}
	if len(changed) == 0 && len(added) == 0 {
		return c.NoContent(http.StatusNoContent)
	}
	return render(c, http.StatusOK, views.InboxUpdates(changed, added, count))
}

// decidedOn says what became of the turn digest of a run that the inbox
// showed: who decided it and how, or that the run ended or moved on
// without a decision on it.
func (s *server) decidedOn(ctx context.Context, c echo.Context, runID, digest string) (views.InboxDecided, error) {
	d := views.InboxDecided{RunID: runID}
	ev, ok, err := s.db.DecisionOn(ctx, runID, digest)
	if err != nil {
		return d, err
	}
	if !ok {
		run, err := s.db.Run(ctx, runID)
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, engine.ErrRunNotFound) {
			d.Ended = "gone"
			return d, nil
		}
		if err != nil {
			return d, err
		}
		d.Ended = statusWords(run.Status)
		if run.Status == engine.StatusWaiting {
			d.Ended = "waiting on another turn"
		}
		if !run.FinishedAt.IsZero() {
			d.At = moment(run.FinishedAt, s.now())
		}
		return d, nil
	}
	d.Decision, d.By, d.Reason, d.At = string(ev.Decision), ev.By, ev.Reason, moment(ev.At, s.now())
	if ev.Decision == engine.VerdictExpire {
		d.By = ""
	}
	if u, ok := currentUser(c); ok && u.Name == ev.By {
		d.You = true
	}
	return d, nil
}
