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
// what the operator entered.
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

	text := decidedText(d) + grantedText(d.Grants)
	if isHTMX(c) {
		return render(c, http.StatusOK, views.DecisionFragment(run.ID, views.Flash{Kind: "ok", Text: text}, nil, run.LastSeq))
	}
	if err := setFlash(c, "ok", text); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/runs/"+run.ID)
}

// decidedText is the flash after a decision.
func decidedText(d engine.Decision) string {
	switch {
	case d.Verdict == engine.VerdictApprove:
		return "Approved. The run carries on."
	case d.Verdict == engine.VerdictDeny:
		return "Denied. The agent has been told not to retry."
	}
	return "Decided. The run carries on."
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
		lines, err := s.rt.PreviewEdit(ctx, run.ID, form.Get("digest"), pc.ID, pc.EditArgs)
		if err != nil {
			return s.resumeRefusedWith(c, run.ID, err, form)
		}
		if len(lines) == 0 {
			lines = []string{"(this tool has no preview; it will run with the arguments above)"}
		}
		pc.EditPreview, pc.Previewed = lines, argsSeal(pc.EditArgs)
		previewed++
	}
	if notice == "" {
		notice = "Nothing runs yet. Check the previews, then submit your decisions."
		if previewed == 0 {
			notice = "Choose \"Edit the arguments\" on a call to preview an edit."
		}
	}
	card.Notice = notice
	flash := views.Flash{Kind: "info", Text: notice}
	if isHTMX(c) {
		return render(c, http.StatusOK, views.DecisionFragment(run.ID, flash, card, run.LastSeq))
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
// form, when the card is still current.
func (s *server) resumeRefusedWith(c echo.Context, runID string, cause error, form url.Values) error {
	he := classify(cause)
	if errors.Is(cause, engine.ErrRunNotFound) || runID == "" {
		return cause
	}
	run, err := s.db.Run(c.Request().Context(), runID)
	if err != nil {
		return err
	}
	flash := views.Flash{Kind: "error", Text: he.message}
	if isHTMX(c) {
		card := s.approvalCard(c, run)
		if card != nil {
			card.Error = he.message
			if form != nil && form.Get("digest") == card.Digest {
				fillCard(card, form)
			}
		}
		return render(c, he.status, views.DecisionFragment(run.ID, flash, card, run.LastSeq))
	}
	v, err := s.runView(c, run)
	if err != nil {
		return err
	}
	if v.Card != nil {
		v.Card.Error = he.message
		if form != nil && form.Get("digest") == v.Card.Digest {
			fillCard(v.Card, form)
		}
	}
	l := s.layout(c, he.title, "runs")
	flash.Text = he.title + ": " + he.message
	l.Flash = &flash
	return render(c, he.status, views.RunPage(l, v))
}
