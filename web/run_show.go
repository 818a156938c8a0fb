package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"countersign/engine"
	"countersign/store"
	"countersign/views"
)

// maxPageSteps bounds the steps the run page renders at once; polling
// fetches the rest in pages of maxPollSteps.
const (
	maxPageSteps = 2000
	maxPollSteps = 500
)

// runShow renders the run page: header, whether its audit record is intact,
// steps, approval card when waiting.
func (s *server) runShow(c echo.Context) error {
	run, err := s.db.Run(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	v, err := s.runView(c, run)
	if err != nil {
		return err
	}
	v.Audit = s.auditStatus(c.Request().Context(), run.ID)
	return render(c, http.StatusOK, views.RunPage(s.layout(c, "Run "+run.ID, "runs"), v))
}

// runView is the run page of run for the current user: header, steps, the
// approval card when it waits.
func (s *server) runView(c echo.Context, run engine.Run) (views.RunView, error) {
	evs, err := s.db.Events(c.Request().Context(), run.ID, 0, maxPageSteps)
	if err != nil {
		return views.RunView{}, err
	}
	grants, err := s.runGrants(c.Request().Context(), run)
	if err != nil {
		return views.RunView{}, err
	}
	operator := hasRole(c, store.RoleOperator)
	v := views.RunView{Run: headerFor(c, run, s.now()), Steps: steps(evs), Card: s.approvalCard(c, run),
		CanDecide: operator, CanCancel: operator && !run.Status.Terminal(),
		Polling: polling(run) || len(evs) == maxPageSteps, Grants: grants, Servers: s.servers(run.Agent)}
	if len(evs) > 0 {
		v.LastSeq = evs[len(evs)-1].Seq
	}
	if v.Card != nil {
		// While the run waits the page polls slowly for a change of turn.
		v.Card.After, v.Turn = v.LastSeq, run.PendingDigest
	}
	return v, nil
}

// polling reports whether the run may produce steps on its own.
func polling(run engine.Run) bool {
	return run.Status == engine.StatusQueued || run.Status == engine.StatusRunning
}

// approvalCard is the card of a waiting run for the current user, or nil. A
// state that does not decode gives a read-only card saying so.
func (s *server) approvalCard(c echo.Context, run engine.Run) *views.ApprovalCard {
	if run.Status != engine.StatusWaiting {
		return nil
	}
	st, problem := s.pendingState(c.Request().Context(), run)
	if st == nil {
		return &views.ApprovalCard{RunID: run.ID, Digest: run.PendingDigest, CSRF: csrfToken(c), Error: problem}
	}
	card := card(run, st, s.callInfo(run.Agent))
	card.CSRF = csrfToken(c)
	card.CanDecide = hasRole(c, store.RoleOperator)
	card.CanApprove = card.CanDecide
	if u, ok := currentUser(c); ok && card.CanDecide && !s.rt.MayApprove(run, u.Name) {
		card.CanApprove = false
		card.Note = "You started this run and its agent needs a second approver: another operator must approve or edit its calls. You may deny or answer them."
	}
	// An agent that needs a second approver takes no standing grants.
	if a, ok := s.rt.Agent(run.Agent); ok && a.AcceptsGrants() && !s.rt.NeedsSecondApprover(run.Agent) {
		card.Grants, card.GrantFor = card.CanApprove, grantPeriod(engine.DefaultGrantPeriod)
	}
	for i := range card.Calls {
		if pc := &card.Calls[i]; pc.Verdict == string(engine.VerdictApprove) && !card.CanApprove {
			pc.Verdict = string(engine.VerdictDeny)
		}
	}
	return card
}
