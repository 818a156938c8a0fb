package web

import (
	"errors"
	"net/http"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"countersign/engine"
	"countersign/views"
)

// toolResume applies an operator's decision on a waiting turn: the
// counterpart of nrllm_tool_resume. Without JavaScript it answers with a 303
// to the run and a flash message; with htmx it swaps the card in place. A
// refusal keeps its status code (404, 409, 403, 422) and shows why; a stale
// decision shows the current card.
func (s *server) toolResume(c echo.Context) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	runID, digest, reason := c.FormValue("run_id"), c.FormValue("digest"), c.FormValue("reason")

	verdict, err := engine.ParseVerdict(c.FormValue("decision"))
	if err != nil {
		return s.resumeRefused(c, runID, err)
	}
	if !utf8.ValidString(reason) || utf8.RuneCountInString(reason) > engine.MaxReasonRunes {
		return s.resumeRefused(c, runID, newHTTPError(http.StatusUnprocessableEntity, "Check your input", "The reason must be text of at most 2,000 characters."))
	}
	run, err := s.db.Run(ctx, runID)
	if err != nil {
		return err
	}
	err = s.rt.Decide(ctx, run.ID, engine.Decision{Verdict: verdict, Digest: digest, By: u.Name, Reason: reason})
	if err != nil {
		s.log.Info("decision refused", "run", run.ID, "by", u.Name, "decision", verdict, "err", err)
		return s.resumeRefused(c, run.ID, err)
	}
	s.log.Info("decision", "run", run.ID, "by", u.Name, "decision", verdict)

	text := "Approved. The run carries on."
	if verdict == engine.VerdictDeny {
		text = "Denied. The agent has been told not to retry."
	}
	if isHTMX(c) {
		return render(c, http.StatusOK, views.DecisionFragment(run.ID, views.Flash{Kind: "ok", Text: text}, nil, run.LastSeq))
	}
	if err := setFlash(c, "ok", text); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/runs/"+run.ID)
}

// resumeRefused answers a refused decision with its status: with htmx, the
// current card (or an error fragment) and the reason; without, the run page
// with the reason, or the error page when there is no run to show.
func (s *server) resumeRefused(c echo.Context, runID string, cause error) error {
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
		}
		return render(c, he.status, views.DecisionFragment(run.ID, flash, card, run.LastSeq))
	}
	v, err := s.runView(c, run)
	if err != nil {
		return err
	}
	if v.Card != nil {
		v.Card.Error = he.message
	}
	l := s.layout(c, he.title, "runs")
	flash.Text = he.title + ": " + he.message
	l.Flash = &flash
	return render(c, he.status, views.RunPage(l, v))
}
