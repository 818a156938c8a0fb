package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"countersign/engine"
)

// apiDecision is the body of POST /api/v1/runs/{id}/decision: a verdict
// per call of the turn named by digest, and optionally one verdict
// (approve or deny) for every call it does not name.
type apiDecision struct {
	Digest  string            `json:"digest"`
	Verdict string            `json:"verdict"`
	Calls   []apiCallDecision `json:"calls"`
	Reason  string            `json:"reason"`
}

// apiCallDecision is the verdict on one pending call: approve, deny (with
// an optional reason), edit (with the arguments it runs with, a JSON
// object) or answer (with the text the agent gets).
type apiCallDecision struct {
	ID        string          `json:"id"`
	Verdict   string          `json:"verdict"`
	Arguments json.RawMessage `json:"arguments"`
	Answer    string          `json:"answer"`
	Reason    string          `json:"reason"`
	// Grant asks, with an approval or an edit, that later calls of the
	// same tool run without a person: "run" for the rest of this run,
	// "agent" for every run of this agent for an hour.
	Grant string `json:"grant"`
}

// apiDecide decides the turn a run waits on, as the run page does, through
// the same engine call: one decision claims the turn, the rest get 409
// naming who decided; a viewer gets 403, as does an initiator approving a
// run that needs a second approver. It answers with the run as it is
// after the decision. Edits are decided as sent: the caller previews them
// from the pending calls, as there is no form to confirm.
func (s *server) apiDecide(c echo.Context) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	var req apiDecision
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	d, err := decisionOf(req)
	if err != nil {
		return err
	}
	d.By = u.Name
	run, err := s.db.Run(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	ids, scopes := grantsAsked(req.Calls)
	if d.Grants, err = s.grantsFor(ctx, run, ids, scopes, d); err != nil {
		return namedByIndex(err, req.Calls)
	}
	if err := s.rt.Decide(ctx, run.ID, d); err != nil {
		s.log.Info("decision refused", "run", run.ID, "by", u.Name, "from", "api", "err", err)
		return namedByIndex(err, req.Calls)
	}
	s.log.Info("decision", "run", run.ID, "by", u.Name, "from", "api")
	return s.writeRunNow(c, run.ID, u.Name)
}

// decisionOf checks the shape of a decision and makes it the engine's. What
// depends on the turn (the calls it has, their kinds) the engine checks.
func decisionOf(req apiDecision) (engine.Decision, error) {
	invalid := func(field, message string) error {
		return badField(http.StatusUnprocessableEntity, "invalid-input", field, message)
	}
	d := engine.Decision{Digest: req.Digest, Reason: req.Reason}
	if strings.TrimSpace(req.Digest) == "" {
		return d, invalid("digest", "Name the turn you decide with its digest, from the run's pending turn.")
	}
	switch engine.Verdict(req.Verdict) {
	case "":
		if len(req.Calls) == 0 {
			return d, invalid("calls", "Give a verdict on each pending call, or a verdict (approve or deny) for all of them.")
		}
	case engine.VerdictApprove, engine.VerdictDeny:
		d.Verdict = engine.Verdict(req.Verdict)
	default:
		return d, invalid("verdict", "The verdict for every call must be approve or deny.")
	}
	for i, cd := range req.Calls {
		field := fmt.Sprintf("calls[%d]", i)
		if cd.ID == "" {
			return d, invalid(field+".id", "Name the call with its id.")
		}
		cv := engine.CallVerdict{CallID: cd.ID, Verdict: engine.Verdict(cd.Verdict)}
		switch cv.Verdict {
		case engine.VerdictApprove:
		case engine.VerdictDeny:
			cv.Text = cd.Reason
		case engine.VerdictEdit:
			args := bytes.TrimSpace(cd.Arguments)
			if len(args) == 0 || args[0] != '{' {
				return d, invalid(field+".arguments", "An edit needs the arguments the call runs with, as a JSON object.")
			}
			cv.Arguments = string(args)
		case engine.VerdictAnswer:
			if strings.TrimSpace(cd.Answer) == "" {
				return d, invalid(field+".answer", "An answer needs its text.")
			}
			cv.Text = cd.Answer
		default:
			return d, invalid(field+".verdict", "The verdict must be approve, deny, edit or answer.")
		}
		if len(cd.Arguments) > 0 && cv.Verdict != engine.VerdictEdit {
			return d, invalid(field+".arguments", "Only an edit takes arguments.")
		}
		if cd.Answer != "" && cv.Verdict != engine.VerdictAnswer {
			return d, invalid(field+".answer", "Only an answer takes an answer.")
		}
		switch engine.GrantScope(cd.Grant) {
		case "":
		case engine.GrantRun, engine.GrantAgent:
			if !cv.Verdict.Approves() {
				return d, invalid(field+".grant", "Only an approval or an edit takes a standing grant.")
			}
		default:
			return d, invalid(field+".grant", "A standing grant is for the rest of this run (run) or for this agent (agent).")
		}
		d.Calls = append(d.Calls, cv)
	}
	return d, nil
}

// grantsAsked lists the calls that ask for a standing grant, in the order
// of the request, with the scope each asks for.
func grantsAsked(calls []apiCallDecision) ([]string, map[string]string) {
	var ids []string
	scopes := map[string]string{}
	for _, cd := range calls {
		if cd.Grant != "" {
			ids = append(ids, cd.ID)
			scopes[cd.ID] = cd.Grant
		}
	}
	return ids, scopes
}

// namedByIndex renames the field of an input error from the engine, which
// names calls by id ("calls.<id>.text"), as the request names them
// ("calls[1].answer").
func namedByIndex(err error, calls []apiCallDecision) error {
	var input *engine.InputError
	if !errors.As(err, &input) {
		return err
	}
	field := input.Field
	switch {
	case field == "decision":
		field = "verdict"
	case strings.HasPrefix(field, "grant."):
		id := strings.TrimPrefix(field, "grant.")
		for i := len(calls) - 1; i >= 0; i-- {
			if calls[i].ID == id {
				field = fmt.Sprintf("calls[%d].grant", i)
				break
			}
		}
	case strings.HasPrefix(field, "calls."):
		rest := strings.TrimPrefix(field, "calls.")
		for i := len(calls) - 1; i >= 0; i-- {
			id := calls[i].ID
			if sub, ok := strings.CutPrefix(rest, id); ok && (sub == "" || sub[0] == '.') {
				if sub == ".text" {
					sub = ".reason"
					if calls[i].Verdict == string(engine.VerdictAnswer) {
						sub = ".answer"
					}
				}
				field = fmt.Sprintf("calls[%d]%s", i, sub)
				break
			}
		}
	}
	return badField(http.StatusUnprocessableEntity, "invalid-input", field, input.Message)
}
