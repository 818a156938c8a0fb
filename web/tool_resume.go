package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"countersign/engine"
	"countersign/views"
)

// toolResume applies an operator's decision on a waiting turn: the
// counterpart of nrllm_tool_resume. The form says what to do with
// "decision": approve or deny every call ("Approve all", "Deny all"; a
// question still needs its answer), "calls" (a verdict per call from
// verdict.<id>, with args.<id> for an edit and text.<id> for a reason or
// an answer) or "preview" (show what the edits would do, decide nothing);
// grant.<id> asks, with an approval, for a standing grant (grantRequests).
// An edit is decided only once the operator has seen the preview of
// exactly those arguments (previewed.<id>); otherwise the card comes back
// with the preview to confirm. Without JavaScript it answers with a 303 to
// the run and a flash message; with htmx it swaps the card in place. A
// refusal keeps its status code (404, 409, 403, 422), shows why and keeps
// what the operator entered while the turn is the same; when the run has
// moved on it shows where it is (resumeRefusedWith). The form's "after"
// is the last step its page shows.
func (s *server) toolResume(c echo.Context) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	runID, digest, reason, mode := c.FormValue("run_id"), c.FormValue("digest"), c.FormValue("reason"), c.FormValue("decision")
	if !utf8.ValidString(reason) || utf8.RuneCountInString(reason) > engine.MaxReasonRunes {
		return s.resumeRefused(c, runID, newHTTPError(http.StatusUnprocessableEntity, "Check your input", "The reason must be text of at most 2,000 characters."))
	}
	run, err := s.db.Run(ctx, runID)
	if err != nil {
		return err
	}
	form, err := c.FormParams()
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
			return s.previewEdits(c, run, form, "Check the preview of your edit, then submit again to confirm it.")
		}
	case "preview":
		return s.previewEdits(c, run, form, "")
	default:
		return s.resumeRefused(c, runID, newHTTPError(http.StatusUnprocessableEntity, "Check your input", "The decision must be approve or deny."))
	}
	if d.Grants, err = s.grantRequests(ctx, run, form, d); err != nil {
		return s.resumeRefusedWith(c, run.ID, err, form)
	}
	if err := s.rt.Decide(ctx, run.ID, d); err != nil {
		s.log.Info("decision refused", "run", run.ID, "by", u.Name, "decision", mode, "err", err)
		return s.resumeRefusedWith(c, run.ID, err, form)
	}
	s.log.Info("decision", "run", run.ID, "by", u.Name, "decision", mode)

	flash := views.Flash{Kind: decisionKind(d), Text: decidedText(d) + grantedText(d.Grants)}
	if isHTMX(c) {
		return render(c, http.StatusOK, views.DecisionFragment(run.ID, flash, nil, formAfter(c, run)))
	}
	if err := setFlash(c, flash.Kind, flash.Text); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/runs/"+run.ID)
}

// decidedText is the flash after a decision.
func decidedText(d engine.Decision) string {
	switch {
	case d.Verdict == engine.VerdictApprove:
		return "Approved. The run carries on."
	case d.Verdict == engine.VerdictDeny || onlyDenials(d):
		return "Denied. The agent is told not to retry."
	}
	return "Decided. The run carries on."
}

// decisionKind is the flash kind of a decision: a denial is no success to
// show in green, only news.
func decisionKind(d engine.Decision) string {
	if d.Verdict == engine.VerdictDeny || onlyDenials(d) {
		return "info"
	}
	return "ok"
}

// onlyDenials reports whether a per-call decision denies every call it names.
func onlyDenials(d engine.Decision) bool {
	if d.Verdict != "" || len(d.Calls) == 0 {
		return false
	}
	for _, cv := range d.Calls {
		if cv.Verdict != engine.VerdictDeny {
			return false
		}
	}
	return true
}

// formAfter is the last step the deciding page shows, from the form, or
// the run's last step when the form does not say.
func formAfter(c echo.Context, run engine.Run) int64 {
	after, err := strconv.ParseInt(c.FormValue("after"), 10, 64)
	if err != nil || after < 0 || after > run.LastSeq {
		return run.LastSeq
	}
	return after
}

// callIDs returns the call ids the form names in fields with prefix, in
// the order of first appearance; a call may be named twice.
func callIDs(form url.Values, prefix string) []string {
	var ids []string
	for key := range form {
		if id, ok := strings.CutPrefix(key, prefix); ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// callVerdicts reads one verdict per verdict.<id> value. Two values for one
// call become two verdicts, which the engine refuses, as it refuses an id
// that is not pending.
func callVerdicts(form url.Values) []engine.CallVerdict {
	var out []engine.CallVerdict
	for _, id := range callIDs(form, "verdict.") {
		for _, v := range form["verdict."+id] {
			cv := engine.CallVerdict{CallID: id, Verdict: engine.Verdict(v)}
			switch cv.Verdict {
			case engine.VerdictEdit:
				cv.Arguments = form.Get("args." + id)
			case engine.VerdictDeny, engine.VerdictAnswer:
				cv.Text = form.Get("text." + id)
			}
			out = append(out, cv)
		}
	}
	return out
}

// questionAnswers are the answers that go with "Approve all" or "Deny all":
// a question is decided only by its answer.
func questionAnswers(form url.Values) []engine.CallVerdict {
	var out []engine.CallVerdict
	for _, cv := range callVerdicts(form) {
		if cv.Verdict == engine.VerdictAnswer && strings.TrimSpace(cv.Text) != "" {
			out = append(out, cv)
		}
	}
	return out
}

// argsSeal names a set of edited arguments: the operator confirms an edit
// whose preview was computed for exactly these arguments.
func argsSeal(args string) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(strings.TrimSpace(args))); err != nil {
		buf.Reset()
		buf.WriteString(args)
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:12])
}

// unpreviewedEdits lists the edits whose arguments the operator has not seen
// previewed.
func unpreviewedEdits(form url.Values, verdicts []engine.CallVerdict) []string {
	var out []string
	for _, cv := range verdicts {
		if cv.Verdict == engine.VerdictEdit && form.Get("previewed."+cv.CallID) != argsSeal(cv.Arguments) {
			out = append(out, cv.CallID)
		}
	}
	return out
}

// previewEdits answers with the card showing the preview of every edit in
// the form, sealed so that submitting it again confirms exactly those
// arguments. It decides nothing. An edit the engine refuses (not a JSON
// object, not the tool's schema) is a 422 naming it.
func (s *server) previewEdits(c echo.Context, run engine.Run, form url.Values, notice string) error {
	ctx := c.Request().Context()
	card := s.approvalCard(c, run)
	if card == nil || !card.CanDecide {
		// Not waiting any more, or a damaged state: the runtime explains
		// why as it would for any decision; an empty one can never be
		// claimed, so asking changes nothing.
		return s.resumeRefused(c, run.ID, s.rt.Decide(ctx, run.ID, engine.Decision{Digest: form.Get("digest")}))
	}
	fillCard(card, form)
	for _, pc := range card.Calls {
		if pc.Verdict == string(engine.VerdictEdit) && !card.CanApprove {
			return s.resumeRefusedWith(c, run.ID, engine.ErrSelfApproval, form)
		}
	}
	previewed := 0
	for i := range card.Calls {
		pc := &card.Calls[i]
		if pc.Verdict != string(engine.VerdictEdit) {
			continue
		}
		pv, err := s.rt.PreviewEdit(ctx, run.ID, form.Get("digest"), pc.ID, pc.EditArgs)
		if err != nil {
			return s.resumeRefusedWith(c, run.ID, err, form)
		}
		lines := pv.Lines
		if len(lines) == 0 {
			lines = []string{"(this tool has no preview; it will run with the arguments above)"}
		}
		pc.EditPreview, pc.EditPreviewWarning, pc.Previewed = lines, pv.Warning, argsSeal(pc.EditArgs)
		previewed++
	}
	if notice == "" {
		notice = "Nothing runs yet. Check the previews, then submit your decisions."
		if previewed == 0 {
			notice = "Choose \"Edit the arguments\" on a call to preview an edit."
		}
	}
	card.Notice = notice
	card.After = formAfter(c, run)
	flash := views.Flash{Kind: "info", Text: notice}
	if isHTMX(c) {
		return render(c, http.StatusOK, views.DecisionFragment(run.ID, flash, card, card.After))
	}
	v, err := s.runView(c, run)
	if err != nil {
		return err
	}
	v.Card = card
	return render(c, http.StatusOK, views.RunPage(s.layout(c, "Run "+run.ID, "runs"), v))
}

// fillCard puts what the operator entered back into the card.
func fillCard(card *views.ApprovalCard, form url.Values) {
	card.Reason = form.Get("reason")
	for i := range card.Calls {
		pc := &card.Calls[i]
		if v := form.Get("verdict." + pc.ID); v != "" {
			pc.Verdict = v
		}
		if a, ok := form["args."+pc.ID]; ok {
			pc.EditArgs = a[0]
		}
		pc.Text = form.Get("text." + pc.ID)
		pc.Grant = form.Get("grant." + pc.ID)
		if p := form.Get("previewed." + pc.ID); p != "" && p == argsSeal(pc.EditArgs) {
			pc.Previewed = p
		}
	}
}

// resumeRefused answers a refused decision with its status: with htmx, the
// current card (or an error fragment) and the reason; without, the run page
// with the reason, or the error page when there is no run to show.
func (s *server) resumeRefused(c echo.Context, runID string, cause error) error {
	return s.resumeRefusedWith(c, runID, cause, nil)
}

// resumeRefusedWith is resumeRefused keeping what the operator entered in
// form, when the card is still current. With htmx, whose error answers
// swap only their out-of-band parts, everything comes out of band: on the
// same turn the card with the reason and the operator's input; once the
// run has moved on, what a poll would bring (the steps after the form's
// "after", the header, the new turn's card or the notice of who decided)
// and a restarted poller, so that a late click never leaves a stale card.
func (s *server) resumeRefusedWith(c echo.Context, runID string, cause error, form url.Values) error {
	he := classify(cause)
	if errors.Is(cause, engine.ErrRunNotFound) || runID == "" {
		return cause
	}
	run, err := s.db.Run(c.Request().Context(), runID)
	if err != nil {
		return err
	}
	digest := c.FormValue("digest")
	flash := views.Flash{Kind: "error", Text: he.title + ": " + he.message}
	if isHTMX(c) {
		u, err := s.runUpdate(c, run, formAfter(c, run), digest)
		if err != nil {
			return err
		}
		if u.Slot == views.SlotKeep && run.Status == engine.StatusWaiting {
			// The same turn: its card again, with why and what was typed.
			u.Slot, u.Card = views.SlotCard, s.approvalCard(c, run)
			if u.Card != nil && form != nil {
				fillCard(u.Card, form)
			}
		}
		if u.Slot == views.SlotCard && u.Card != nil {
			u.Card.Error, u.Card.After = he.message, nextAfterOf(u)
		}
		u.Flash, u.PollerOOB = &flash, true
		return render(c, he.status, views.StepsFragment(u))
	}
	v, err := s.runView(c, run)
	if err != nil {
		return err
	}
	if v.Card != nil {
		v.Card.Error = he.message
		if form != nil && digest == v.Card.Digest {
			fillCard(v.Card, form)
		}
	} else if digest != "" {
		v.Decided = s.decidedNotice(c, run, digest)
	}
	l := s.layout(c, he.title, "runs")
	l.Flash = &flash
	return render(c, he.status, views.RunPage(l, v))
}

// nextAfterOf is the last step an update leaves on the page.
func nextAfterOf(u views.StepsUpdate) int64 {
	after := u.After
	for _, st := range u.Steps {
		after = max(after, st.Seq)
	}
	return after
}
