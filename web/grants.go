package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"countersign/engine"
	"countersign/store"
	"countersign/views"
)

// grantRequests reads the standing grants an operator chose with a decision:
// grant.<id> is "" (none), "run" or "agent" for a pending call, and counts
// only for a call the decision approves or edits ("Approve all" approves
// every call but a question). The engine checks the rest: that the agent
// takes grants and that each names an approved tool. A form that names no
// grant costs nothing; one whose turn is no longer pending gets no grants,
// as the engine refuses the decision anyway.
func (s *server) grantRequests(ctx context.Context, run engine.Run, form url.Values, d engine.Decision) ([]engine.GrantRequest, error) {
	ids := chosenGrants(form)
	scopes := make(map[string]string, len(ids))
	for _, id := range ids {
		scopes[id] = form.Get("grant." + id)
	}
	return s.grantsFor(ctx, run, ids, scopes, d)
}

// grantsFor turns the grant scopes chosen for call ids (in that order) into
// the grant requests of decision d, as grantRequests says; an error names
// the field grant.<id>.
func (s *server) grantsFor(ctx context.Context, run engine.Run, ids []string, scopes map[string]string, d engine.Decision) ([]engine.GrantRequest, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	sus, err := s.db.SuspendedState(ctx, run.ID)
	if err != nil || sus.Digest != d.Digest {
		return nil, nil // Decide says why: not waiting, moved on, stale
	}
	st, err := sus.Decode()
	if err != nil {
		return nil, nil // Decide refuses a damaged state
	}
	tools := map[string]string{}
	for _, call := range st.Pending {
		tools[call.ID] = call.Name
	}
	var out []engine.GrantRequest
	for _, id := range ids {
		tool, ok := tools[id]
		if !ok {
			return nil, &engine.InputError{Field: "grant." + id, Message: "A standing grant names a call that is not pending."}
		}
		if !verdictOf(d, id).Approves() {
			continue
		}
		gr := engine.GrantRequest{Tool: tool}
		switch scope := scopes[id]; scope {
		case string(engine.GrantRun):
			gr.Scope = engine.GrantRun
		case string(engine.GrantAgent):
			gr.Scope, gr.For = engine.GrantAgent, engine.DefaultGrantPeriod
		default:
			return nil, &engine.InputError{Field: "grant." + id, Message: "A standing grant is for the rest of this run or for this agent."}
		}
		if !containsGrant(out, gr) {
			out = append(out, gr)
		}
	}
	return out, nil
}

// chosenGrants lists the call ids whose grant.<id> field is set.
func chosenGrants(form url.Values) []string {
	var ids []string
	for _, id := range callIDs(form, "grant.") {
		if form.Get("grant."+id) != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// verdictOf is the verdict a decision gives a call: its own, else the one
// for every call.
func verdictOf(d engine.Decision, callID string) engine.Verdict {
	for _, cv := range d.Calls {
		if cv.CallID == callID {
			return cv.Verdict
		}
	}
	return d.Verdict
}

func containsGrant(grs []engine.GrantRequest, gr engine.GrantRequest) bool {
	for _, g := range grs {
		if g == gr {
			return true
		}
	}
	return false
}

// grantedText adds the standing grants of a decision to its flash.
func grantedText(grs []engine.GrantRequest) string {
	var parts []string
	for _, gr := range grs {
		if gr.Scope == engine.GrantRun {
			parts = append(parts, gr.Tool+" for the rest of this run")
		} else {
			parts = append(parts, gr.Tool+" for this agent for "+grantPeriod(gr.For))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " Allowed without asking: " + strings.Join(parts, "; ") + "."
}

// grantPeriod says how long an agent-wide grant lasts: "1 hour", "30
// minutes".
func grantPeriod(d time.Duration) string {
	if d <= 0 {
		d = engine.DefaultGrantPeriod
	}
	if d%time.Hour != 0 {
		return plural(int(d/time.Minute), "minute", "minutes")
	}
	return plural(int(d/time.Hour), "hour", "hours")
}

// grantView turns a grant into a row of the run page or the admin's list.
func grantView(g engine.Grant, now time.Time) views.GrantView {
	v := views.GrantView{ID: g.ID, Agent: g.Agent, RunID: g.RunID, Tool: g.Tool, Scope: string(g.Scope), By: g.By,
		Created: stamp(g.CreatedAt), Ends: stamp(g.ExpiresAt), State: "active"}
	switch {
	case !g.RevokedAt.IsZero():
		v.State, v.Revoked, v.RevokedBy = "revoked", stamp(g.RevokedAt), g.RevokedBy
	case !g.Active(now):
		v.State = "expired"
	}
	if g.Scope == engine.GrantRun {
		// A run grant lasts as long as its run; its stored end is a
		// backstop.
		v.Ends = "when the run ends, at the latest " + v.Ends
	}
	return v
}

// runGrants are the grants the run page lists: given in the run, or
// agent-wide while it ran.
func (s *server) runGrants(ctx context.Context, run engine.Run) ([]views.GrantView, error) {
	grants, err := s.db.Grants(ctx, store.GrantFilter{Agent: run.Agent, RunID: run.ID})
	if err != nil {
		return nil, err
	}
	now := s.now()
	var out []views.GrantView
	for _, g := range grants {
		out = append(out, grantView(g, now))
	}
	return out, nil
}

// grantList is the admin's list of active standing grants.
func (s *server) grantList(c echo.Context) error {
	now := s.now()
	grants, err := s.db.Grants(c.Request().Context(), store.GrantFilter{ActiveAt: now, Limit: 500})
	if err != nil {
		return err
	}
	var v views.GrantsView
	for _, g := range grants {
		v.Grants = append(v.Grants, grantView(g, now))
	}
	return render(c, http.StatusOK, views.GrantsPage(s.layout(c, "Standing grants", "grants"), v))
}

// grantRevoke revokes a grant at once: the next call of its tool asks a
// person again.
func (s *server) grantRevoke(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return store.ErrNotFound
	}
	me, _ := currentUser(c)
	g, err := s.db.RevokeGrant(c.Request().Context(), id, me.Name, s.now())
	if err != nil {
		return err
	}
	s.log.Info("grant revoked", "grant", g.ID, "agent", g.Agent, "tool", g.Tool, "by", me.Name)
	if err := setFlash(c, "ok", fmt.Sprintf("Revoked the grant of %s to %s. Its calls ask a person again.", g.Tool, g.Agent)); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/grants")
}
