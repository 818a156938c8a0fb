package web_test

import (
	"net/http"
	"strings"
	"testing"

	"countersign/engine"
	"countersign/engine/tools"
)

// TestAPIDecideRefusals: bad decisions are 422 naming the field, a stale
// digest 409, a decided turn 409 naming who decided, a viewer 403, an
// unknown run 404; none changes the run.
func TestAPIDecideRefusals(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	w := a.waitingRun("editor", publishAbout, olgaName)
	olga, oscar := a.api(olgaName), a.api(oscarName)
	call := olga.getRun(w.ID).Pending.Calls[0].ID
	path := "/api/v1/runs/" + w.ID + "/decision"

	cases := []struct {
		name    string
		body    any
		invalid bool
		status  int
		field   string
	}{
		{"no digest", map[string]any{"verdict": "approve"}, true, http.StatusUnprocessableEntity, "digest"},
		{"nothing decided", map[string]any{"digest": w.PendingDigest}, false, http.StatusUnprocessableEntity, "calls"},
		{"bad verdict for all", map[string]any{"digest": w.PendingDigest, "verdict": "edit"}, true, http.StatusUnprocessableEntity, "verdict"},
		{"bad call verdict", map[string]any{"digest": w.PendingDigest, "calls": []map[string]any{
			{"id": call, "verdict": "approve"}, {"id": call, "verdict": "maybe"}}}, true, http.StatusUnprocessableEntity, "calls[1].verdict"},
		{"unknown field", map[string]any{"digest": w.PendingDigest, "verdict": "approve", "force": true}, true,
			http.StatusUnprocessableEntity, "force"},
		{"edit without arguments", map[string]any{"digest": w.PendingDigest, "calls": []map[string]any{
			{"id": call, "verdict": "edit"}}}, false, http.StatusUnprocessableEntity, "calls[0].arguments"},
		{"edit outside the schema", map[string]any{"digest": w.PendingDigest, "calls": []map[string]any{
			{"id": call, "verdict": "edit", "arguments": map[string]any{"slug": 7}}}}, false, http.StatusUnprocessableEntity,
			"calls[0].arguments"},
		{"answer on a write", map[string]any{"digest": w.PendingDigest, "calls": []map[string]any{
			{"id": call, "verdict": "answer"}}}, false, http.StatusUnprocessableEntity, "calls[0].answer"},
		{"call not pending", map[string]any{"digest": w.PendingDigest, "calls": []map[string]any{
			{"id": "call_nope", "verdict": "approve"}}}, false, http.StatusUnprocessableEntity, "calls"},
		{"two verdicts on a call", map[string]any{"digest": w.PendingDigest, "calls": []map[string]any{
			{"id": call, "verdict": "approve"}, {"id": call, "verdict": "deny"}}}, false, http.StatusUnprocessableEntity, "calls[1]"},
		{"grant with a denial", map[string]any{"digest": w.PendingDigest, "calls": []map[string]any{
			{"id": call, "verdict": "deny", "grant": "run"}}}, false, http.StatusUnprocessableEntity, "calls[0].grant"},
		{"grant of no scope", map[string]any{"digest": w.PendingDigest, "calls": []map[string]any{
			{"id": call, "verdict": "approve", "grant": "forever"}}}, true, http.StatusUnprocessableEntity, "calls[0].grant"},
		{"grant for a call not pending", map[string]any{"digest": w.PendingDigest, "calls": []map[string]any{
			{"id": call, "verdict": "approve"}, {"id": "call_nope", "verdict": "approve", "grant": "run"}}}, false,
			http.StatusUnprocessableEntity, "calls[1].grant"},
		{"stale digest", map[string]any{"digest": strings.Repeat("0", 64), "verdict": "approve"}, false, http.StatusConflict, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var opts []callOpt
			if tc.invalid {
				opts = append(opts, invalidRequest())
			}
			p := mustProblem(t, olga.with(t).call(http.MethodPost, path, tc.body, opts...), tc.status)
			if p.field() != tc.field {
				t.Errorf("the problem names %q (%+v), want %q", p.field(), p.Errors, tc.field)
			}
			if r := a.with(t).run(w.ID); r.Status != engine.StatusWaiting {
				t.Fatalf("a refused decision changed the run: %s", r.Status)
			}
		})
	}
	mustProblem(t, a.api(veraName).call(http.MethodPost, path, map[string]any{"digest": w.PendingDigest, "verdict": "approve"}),
		http.StatusForbidden)
	mustProblem(t, olga.call(http.MethodPost, "/api/v1/runs/01NOSUCHRUN/decision",
		map[string]any{"digest": w.PendingDigest, "verdict": "approve"}), http.StatusNotFound)
	mustProblem(t, olga.call(http.MethodPost, path, nil, withContentType("text/plain"),
		rawBody([]byte("approve")), invalidRequest()), http.StatusUnsupportedMediaType)
	mustProblem(t, olga.call(http.MethodPost, path, nil, rawBody([]byte(`{"digest":`)), invalidRequest()), http.StatusBadRequest)
	if r := a.run(w.ID); r.Status != engine.StatusWaiting {
		t.Fatalf("refused decisions changed the run: %s", r.Status)
	}

	// Olga decides; Oscar, too late, learns that she did.
	mustAPIStatus(t, olga.call(http.MethodPost, path, map[string]any{"digest": w.PendingDigest, "verdict": "deny",
		"reason": "not today"}), http.StatusOK)
	p := mustProblem(t, oscar.call(http.MethodPost, path, map[string]any{"digest": w.PendingDigest, "verdict": "approve"}),
		http.StatusConflict)
	if p.DecidedBy != olgaName || !strings.Contains(p.Detail, olgaName) || p.Type != "urn:countersign:problem:already-decided" {
		t.Errorf("already decided: %+v, want it to name olga", p)
	}
}

// TestAPIDecideSecondApprover: with four-eyes, the initiator's token may
// not approve (403, nothing changes) but another operator's may.
func TestAPIDecideSecondApprover(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withFourEyes(), withoutWorkers())
	w := a.waitingRun("editor", publishAbout, olgaName)
	olga := a.api(olgaName)
	got := olga.getRun(w.ID)
	if got.Pending.YouMayApprove {
		t.Error("the initiator is told she may approve")
	}
	path := "/api/v1/runs/" + w.ID + "/decision"
	p := mustProblem(t, olga.call(http.MethodPost, path, map[string]any{"digest": w.PendingDigest, "verdict": "approve"}),
		http.StatusForbidden)
	if p.Type != "urn:countersign:problem:second-approver-needed" {
		t.Errorf("problem type %q", p.Type)
	}
	if r := a.run(w.ID); r.Status != engine.StatusWaiting {
		t.Fatalf("a refused approval changed the run: %s", r.Status)
	}
	mustAPIStatus(t, a.api(oscarName).call(http.MethodPost, path, map[string]any{"digest": w.PendingDigest, "verdict": "approve"}),
		http.StatusOK)
}

// TestAPIDecidePerCallEdit edits a call's arguments: the edited call runs,
// not the one the model proposed.
func TestAPIDecidePerCallEdit(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	w := a.waitingRun("editor", publishAbout, olgaName)
	olga := a.api(olgaName)
	call := olga.getRun(w.ID).Pending.Calls[0].ID
	res := olga.call(http.MethodPost, "/api/v1/runs/"+w.ID+"/decision", map[string]any{"digest": w.PendingDigest,
		"calls": []map[string]any{{"id": call, "verdict": "edit", "arguments": map[string]string{"slug": "release-notes"}}}})
	mustAPIStatus(t, res, http.StatusOK)
	a.waitStatus(w.ID, engine.StatusCompleted)
	if p := a.page("release-notes"); p.Status != tools.StatusPublished {
		t.Errorf("the edited call did not run: release-notes is %s", p.Status)
	}
	if p := a.page("about"); p.Status == tools.StatusPublished {
		t.Error("the call as proposed ran")
	}
}

// TestAPIDecideWithGrant: an approval may ask for a standing grant, as on
// the run page; it is written with the decision and applies to the run.
// An agent that needs a second approver takes none (403, nothing changes).
func TestAPIDecideWithGrant(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	w := a.waitingRun("editor", publishAbout, olgaName)
	olga := a.api(olgaName)
	pending := olga.getRun(w.ID).Pending.Calls[0]
	if gs := a.grantsOf(w.ID); len(gs) != 0 {
		t.Fatalf("grants before the decision: %+v", gs)
	}
	mustAPIStatus(t, olga.call(http.MethodPost, "/api/v1/runs/"+w.ID+"/decision", map[string]any{"digest": w.PendingDigest,
		"calls": []map[string]any{{"id": pending.ID, "verdict": "approve", "grant": "run"}}}), http.StatusOK)
	gs := a.grantsOf(w.ID)
	if len(gs) != 1 || gs[0].Tool != pending.Tool || gs[0].Scope != engine.GrantRun || gs[0].RunID != w.ID || gs[0].By != olgaName {
		t.Fatalf("grants after an approval with grant run: %+v; want one for %s in this run by olga", gs, pending.Tool)
	}

	b := newTestApp(t, withFourEyes(), withoutWorkers())
	w = b.waitingRun("editor", publishAbout, olgaName)
	p := mustProblem(t, b.api(oscarName).call(http.MethodPost, "/api/v1/runs/"+w.ID+"/decision", map[string]any{
		"digest": w.PendingDigest, "calls": []map[string]any{{"id": pending.ID, "verdict": "approve", "grant": "agent"}}}),
		http.StatusForbidden)
	if p.Type != "urn:countersign:problem:grants-not-accepted" || !strings.Contains(p.Detail, "standing grants") {
		t.Errorf("the refusal is %s: %q, want that this agent takes no standing grants", p.Type, p.Detail)
	}
	if r := b.run(w.ID); r.Status != engine.StatusWaiting || len(b.grantsOf(w.ID)) != 0 {
		t.Fatalf("a refused grant changed the run (%s) or wrote a grant; problem %+v", r.Status, p)
	}
}
