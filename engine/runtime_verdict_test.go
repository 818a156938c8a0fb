package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"countersign/engine"
)

// slugChecker stands in for the app's JSON Schema checker: it refuses
// arguments without a slug.
func slugChecker(schema, args json.RawMessage) error {
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		return err
	}
	if _, ok := m["slug"]; !ok {
		return errors.New("at '': missing property 'slug'")
	}
	return nil
}

func TestDecideChecksEditsAndFourEyes(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	rt := e.runtime(t, func(c *engine.RuntimeConfig) { c.CheckArgs = slugChecker })
	run := e.start(t, rt, "editor-4eyes", "Publish the about page.", "olga")
	w := e.waitStatus(t, run.ID, engine.StatusWaiting)
	sus, err := e.db.SuspendedState(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sus.Decode()
	if err != nil {
		t.Fatal(err)
	}
	id := st.Pending[0].ID
	edit := func(by, args string) engine.Decision {
		return engine.Decision{Digest: w.PendingDigest, By: by, Calls: []engine.CallVerdict{{CallID: id, Verdict: engine.VerdictEdit, Arguments: args}}}
	}
	var ie *engine.InputError
	if err := rt.Decide(ctx, run.ID, edit("oscar", `{"title":"x"}`)); !errors.As(err, &ie) || ie.Field != "calls."+id+".arguments" ||
		!strings.Contains(ie.Message, "slug") {
		t.Fatalf("edit that fails the schema: %v", err)
	}
	if err := rt.Decide(ctx, run.ID, edit("olga", `{"slug":"pricing"}`)); !errors.Is(err, engine.ErrSelfApproval) {
		t.Fatalf("the initiator's edit on a four-eyes run: %v", err)
	}
	if _, err := rt.PreviewEdit(ctx, run.ID, w.PendingDigest, id, `{"title":"x"}`); !errors.As(err, &ie) {
		t.Fatalf("preview of an edit that fails the schema: %v", err)
	}
	if _, err := rt.PreviewEdit(ctx, run.ID, "stale", id, `{"slug":"pricing"}`); !errors.Is(err, engine.ErrStaleTurn) {
		t.Fatalf("preview on a stale digest: %v", err)
	}
	pv, err := rt.PreviewEdit(ctx, run.ID, w.PendingDigest, id, `{"slug":"pricing"}`)
	if err != nil || len(pv.Lines) == 0 || pv.Warning || !strings.Contains(strings.Join(pv.Lines, "\n"), "pricing") {
		t.Fatalf("preview of the edit: %+v %v", pv, err)
	}
	if r, _ := e.db.Run(ctx, run.ID); r.Status != engine.StatusWaiting {
		t.Fatalf("a refused decision or a preview changed the run: %s", r.Status)
	}
	if _, ok, _ := e.db.LastDecision(ctx, run.ID); ok {
		t.Fatal("a refused decision wrote an event")
	}
	// The initiator may answer in place of the tool; another operator's
	// edit runs the edited call.
	if err := rt.Decide(ctx, run.ID, edit("oscar", `{"slug":"pricing"}`)); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(t, run.ID, engine.StatusCompleted)
	ev, _, _ := e.db.LastDecision(ctx, run.ID)
	if len(ev.Verdicts) != 1 || ev.Verdicts[0].Original != st.Pending[0].Arguments || ev.Verdicts[0].Arguments != `{"slug":"pricing"}` {
		t.Fatalf("decision event %+v", ev)
	}
	if n := e.revisions(t); n != 1 {
		t.Fatalf("%d writes, want the edited call once", n)
	}
	p, err := e.db.Pages().GetPage(ctx, "pricing")
	if err != nil || p.Status != "published" {
		t.Fatalf("the edited call did not run: %+v %v", p, err)
	}
}
