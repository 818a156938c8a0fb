package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"countersign/engine"
	"countersign/views"
)

// inboxDecide applies a decision made on one turn in the inbox. It reads
// the form of the run page's card (run_id, digest, reason, decision and
// the per-call verdict.<id>, args.<id>, text.<id>, previewed.<id>) with
// the same meaning as toolResume: an edit is decided only once the
// operator has seen the preview of exactly those arguments. Without
// JavaScript it answers with a 303 to the inbox and a flash; with htmx it
// replaces the item in place with the line saying it was decided. A
// refusal keeps its status (409, 403, 422) and shows the turn as it now
// is, in place (out of band: an error status swaps nothing else).
func (s *server) inboxDecide(c echo.Context) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	runID, digest, reason, mode := c.FormValue("run_id"), c.FormValue("digest"), c.FormValue("reason"), c.FormValue("decision")
	form, err := c.FormParams()
	if err != nil {
		return err
	}
	if !utf8.ValidString(reason) || utf8.RuneCountInString(reason) > engine.MaxReasonRunes {
		return s.inboxRefused(c, runID, errBadReason, form)
	}
	run, err := s.db.Run(ctx, runID)
	if err != nil {
		return err
	}
	d := engine.Decision{Digest: digest, By: u.Name, Reason: reason}
	switch mode {
	case "approve", "deny":
		d.Verdict = engine.Verdict(mode)
		d.Calls = questionAnswers(form)
	case "calls":
		d.Calls = callVerdicts(form)
		if unseen := unpreviewedEdits(form, d.Calls); len(unseen) > 0 {
			return s.inboxPreview(c, run, form, "Check the preview of your edit, then submit again to confirm it.")
		}
	case "preview":
		return s.inboxPreview(c, run, form, "")
	default:
		return s.inboxRefused(c, runID, newHTTPError(http.StatusUnprocessableEntity, "Check your input", "The decision must be approve or deny."), form)
	}
	if d.Grants, err = s.grantRequests(ctx, run, form, d); err != nil {
		return s.inboxRefused(c, run.ID, err, form)
	}
	if err := s.rt.Decide(ctx, run.ID, d); err != nil {
		s.log.Info("decision refused", "run", run.ID, "by", u.Name, "decision", mode, "from", "inbox", "err", err)
		return s.inboxRefused(c, run.ID, err, form)
	}
	s.log.Info("decision", "run", run.ID, "by", u.Name, "decision", mode, "from", "inbox")

	flash := views.Flash{Kind: decidedKind(d.Verdict), Text: decidedText(d) + grantedText(d.Grants)}
	if !isHTMX(c) {
		if err := setFlash(c, flash.Kind, flash.Text); err != nil {
			return err
		}
		return c.Redirect(http.StatusSeeOther, "/inbox")
	}
	line, err := s.decidedOn(ctx, c, run.ID, digest)
	if err != nil {
		return err
	}
	return s.renderInboxFragment(c, http.StatusOK, []views.InboxItem{{RunID: run.ID, Decided: &line}}, &flash)
}

// errBadReason refuses a reason that is too long or not text.
var errBadReason = newHTTPError(http.StatusUnprocessableEntity, "Check your input", "The reason must be text of at most 2,000 characters.")

// decidedKind is the flash kind after a decision: a denial is news, not a
// success.
func decidedKind(v engine.Verdict) string {
	if v == engine.VerdictDeny {
		return "info"
	}
	return "ok"
}

// inboxPreview answers with the item showing the preview of every edit in
// the form, sealed so that submitting it again confirms exactly those
// arguments. It decides nothing.
func (s *server) inboxPreview(c echo.Context, run engine.Run, form url.Values, notice string) error {
	ctx := c.Request().Context()
	digest := form.Get("digest")
	it := s.inboxItem(c, run)
	if run.Status != engine.StatusWaiting || it.Damaged != "" || !it.CanDecide {
		// The runtime explains why, as for any decision; an empty one
		// can never be claimed, so asking changes nothing.
		return s.inboxRefused(c, run.ID, s.rt.Decide(ctx, run.ID, engine.Decision{Digest: digest}), form)
	}
	inboxFill(&it, form)
	previewed := 0
	for i := range it.Calls {
		pc := &it.Calls[i]
		if pc.Verdict != string(engine.VerdictEdit) {
			continue
		}
		if !it.CanApprove {
			return s.inboxRefused(c, run.ID, engine.ErrSelfApproval, form)
		}
		pv, err := s.rt.PreviewEdit(ctx, run.ID, digest, pc.ID, pc.EditArgs)
		if err != nil {
			return s.inboxRefused(c, run.ID, err, form)
		}
		lines := pv.Lines
		if len(lines) == 0 {
			lines = []string{"(this tool has no preview; it will run with the arguments above)"}
		}
		pc.EditPreview, pc.Previewed = lines, argsSeal(pc.EditArgs)
		previewed++
	}
	if notice == "" {
		notice = "Nothing runs yet. Check the previews, then submit your decisions."
		if previewed == 0 {
			notice = "Choose \"Edit\" on a call to preview an edit."
		}
	}
	it.Notice = notice
	flash := views.Flash{Kind: "info", Text: notice}
	if isHTMX(c) {
		return s.renderInboxFragment(c, http.StatusOK, []views.InboxItem{it}, &flash)
	}
	return s.renderInboxWith(c, http.StatusOK, it, flash)
}

// inboxRefused answers a refused decision with its status and the turn as
// it now is: still waiting (with what the operator entered, when it is the
// same turn), waiting on another turn, or the line saying who decided it.
func (s *server) inboxRefused(c echo.Context, runID string, cause error, form url.Values) error {
	he := classify(cause)
	if errors.Is(cause, engine.ErrRunNotFound) || runID == "" {
		return cause
	}
	run, err := s.db.Run(c.Request().Context(), runID)
	if err != nil {
		return err
	}
	it, err := s.inboxCurrent(c, run, form.Get("digest"), he.message)
	if err != nil {
		return err
	}
	if it.Decided == nil && form.Get("digest") == it.Digest {
		inboxFill(&it, form)
	}
	flash := views.Flash{Kind: "error", Text: he.message}
	if isHTMX(c) {
		return s.renderInboxFragment(c, he.status, []views.InboxItem{it}, &flash)
	}
	flash.Text = he.title + ": " + he.message
	return s.renderInboxWith(c, he.status, it, flash)
}

// inboxCurrent is run's item as it now is, carrying msg as its error: the
// waiting turn, or what became of the turn digest.
func (s *server) inboxCurrent(c echo.Context, run engine.Run, digest, msg string) (views.InboxItem, error) {
	if run.Status == engine.StatusWaiting {
		it := s.inboxItem(c, run)
		it.Error = msg
		return it, nil
	}
	d, err := s.decidedOn(c.Request().Context(), c, run.ID, digest)
	if err != nil {
		return views.InboxItem{}, err
	}
	d.Error = msg
	return views.InboxItem{RunID: run.ID, Decided: &d}, nil
}

// inboxFill puts what the operator entered back into the item, as
// fillCard does for the run page's card.
func inboxFill(it *views.InboxItem, form url.Values) {
	card := &views.ApprovalCard{}
	for _, pc := range it.Calls {
		card.Calls = append(card.Calls, pc.PendingCall)
	}
	fillCard(card, form)
	for i := range it.Calls {
		it.Calls[i].PendingCall = card.Calls[i]
	}
	it.Reason = form.Get("reason")
}

// renderInboxFragment answers htmx with items, the flash, the count and the
// badge, all out of band.
func (s *server) renderInboxFragment(c echo.Context, status int, items []views.InboxItem, flash *views.Flash) error {
	n, err := s.db.CountWaitingUpTo(c.Request().Context(), maxBadgeCount)
	if err != nil {
		return err
	}
	return render(c, status, views.InboxFragment(items, flash, n))
}

// renderInboxWith renders the whole inbox with item in place of the run's
// item (first, when the run waits no more), and flash.
func (s *server) renderInboxWith(c echo.Context, status int, item views.InboxItem, flash views.Flash) error {
	found := false
	v, err := s.inboxView(c, func(it *views.InboxItem) {
		if it.RunID == item.RunID {
			*it, found = item, true
		}
	})
	if err != nil {
		return err
	}
	if !found {
		v.Items = append([]views.InboxItem{item}, v.Items...)
	}
	l := s.layout(c, "Inbox", "inbox")
	l.Flash = &flash
	return render(c, status, views.InboxPage(l, v))
}

// maxBatch bounds the turns one batch decides.
const maxBatch = maxInbox

// inboxDecideBatch approves or denies the selected turns ("turn", each
// "run:digest") with one reason. Each turn is decided on its own through
// the runtime, with its own digest, so one winner per turn still holds; a
// turn that cannot be decided this way (it asks a question, four-eyes,
// someone decided it first) is named in the flash, not skipped in silence.
// Without JavaScript it answers with a 303 to the inbox; with htmx it
// updates each item in place and swaps the flash, out of band.
func (s *server) inboxDecideBatch(c echo.Context) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	reason, mode := c.FormValue("reason"), c.FormValue("decision")
	form, err := c.FormParams()
	if err != nil {
		return err
	}
	if !utf8.ValidString(reason) || utf8.RuneCountInString(reason) > engine.MaxReasonRunes {
		return s.batchRefused(c, errBadReason)
	}
	if mode != string(engine.VerdictApprove) && mode != string(engine.VerdictDeny) {
		return s.batchRefused(c, newHTTPError(http.StatusUnprocessableEntity, "Check your input", "The decision must be approve or deny."))
	}
	type turn struct{ runID, digest string }
	var turns []turn
	seen := map[string]bool{}
	for _, v := range form["turn"] {
		id, digest, ok := strings.Cut(v, ":")
		if !ok || id == "" || seen[id] {
			continue
		}
		seen[id] = true
		turns = append(turns, turn{id, digest})
	}
	switch {
	case len(turns) == 0:
		return s.batchRefused(c, newHTTPError(http.StatusUnprocessableEntity, "Nothing selected", "Select the turns to decide, then approve or deny them."))
	case len(turns) > maxBatch:
		return s.batchRefused(c, newHTTPError(http.StatusUnprocessableEntity, "Too many turns", fmt.Sprintf("Decide at most %d turns at once.", maxBatch)))
	}

	verdict := engine.Verdict(mode)
	var items []views.InboxItem
	var failed []string
	decided := 0
	for _, t := range turns {
		run, err := s.db.Run(ctx, t.runID)
		if err != nil {
			failed = append(failed, "run "+t.runID+": "+classify(err).message)
			continue
		}
		if run.Status == engine.StatusWaiting && run.PendingDigest == t.digest {
			if it := s.inboxItem(c, run); asksQuestion(it) {
				msg := "This turn asks a question: answer it here, then submit."
				it.Error = msg
				items = append(items, it)
				failed = append(failed, runLabel(run)+": it asks a question, which needs its own answer")
				continue
			}
		}
		err = s.rt.Decide(ctx, run.ID, engine.Decision{Verdict: verdict, Digest: t.digest, By: u.Name, Reason: reason})
		if err != nil {
			s.log.Info("decision refused", "run", run.ID, "by", u.Name, "decision", mode, "from", "inbox batch", "err", err)
			msg := classify(err).message
			failed = append(failed, runLabel(run)+": "+msg)
			if run, err = s.db.Run(ctx, run.ID); err != nil {
				return err
			}
			it, err := s.inboxCurrent(c, run, t.digest, msg)
			if err != nil {
				return err
			}
			items = append(items, it)
			continue
		}
		s.log.Info("decision", "run", run.ID, "by", u.Name, "decision", mode, "from", "inbox batch")
		decided++
		line, err := s.decidedOn(ctx, c, run.ID, t.digest)
		if err != nil {
			return err
		}
		items = append(items, views.InboxItem{RunID: run.ID, Decided: &line})
	}

	flash := views.Flash{Kind: decidedKind(verdict), Text: batchText(verdict, decided, failed)}
	if len(failed) > 0 {
		flash.Kind = "error"
	}
	if isHTMX(c) {
		return s.renderInboxFragment(c, http.StatusOK, items, &flash)
	}
	if err := setFlash(c, flash.Kind, flash.Text); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/inbox")
}

// batchRefused refuses a batch as a whole: the inbox with the reason, or,
// with htmx, the reason alone.
func (s *server) batchRefused(c echo.Context, cause error) error {
	he := classify(cause)
	if isHTMX(c) {
		return s.renderInboxFragment(c, he.status, nil, &views.Flash{Kind: "error", Text: he.message})
	}
	v, err := s.inboxView(c, nil)
	if err != nil {
		return err
	}
	l := s.layout(c, "Inbox", "inbox")
	l.Flash = &views.Flash{Kind: "error", Text: he.title + ": " + he.message}
	return render(c, he.status, views.InboxPage(l, v))
}

// batchText sums up a batch: "Approved 2 turns. 1 was not decided: …".
func batchText(v engine.Verdict, decided int, failed []string) string {
	verb := "Approved"
	if v == engine.VerdictDeny {
		verb = "Denied"
	}
	var b strings.Builder
	switch decided {
	case 0:
		b.WriteString("No turn was decided.")
	case 1:
		b.WriteString(verb + " 1 turn.")
	default:
		fmt.Fprintf(&b, "%s %d turns.", verb, decided)
	}
	if len(failed) > 0 {
		were := "were"
		if len(failed) == 1 {
			were = "was"
		}
		fmt.Fprintf(&b, " %d %s not decided: %s", len(failed), were, strings.Join(failed, "; "))
	}
	return b.String()
}

// runLabel names a run in a sentence: its agent and the start of its id.
func runLabel(run engine.Run) string {
	id := run.ID
	if len(id) > 10 {
		id = id[:10] + "…"
	}
	return run.Agent + " run " + id
}

// asksQuestion reports whether a turn asks the operator something, which
// only an answer of its own decides.
func asksQuestion(it views.InboxItem) bool {
	for _, pc := range it.Calls {
		if pc.Kind == string(engine.CallQuestion) {
			return true
		}
	}
	return false
}
