package web_test

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"countersign/engine"
	"countersign/engine/tools"
)

// TestAPIEndToEnd drives a run from start to finish through the API alone,
// as a client program would: start it, long-poll its events until it waits,
// read the pending turn, decide each call, long-poll until it has ended and
// read the final answer.
func TestAPIEndToEnd(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	olga := a.api(olgaName)

	res := olga.call(http.MethodPost, "/api/v1/runs", map[string]string{"agent": "editor", "prompt": publishAbout},
		withHeader("Idempotency-Key", "e2e-1"))
	mustAPIStatus(t, res, http.StatusCreated)
	var run apiRunBody
	res.decode(t, &run)
	if run.ID == "" || run.InitiatedBy != olgaName || res.Header.Get("Location") != "/api/v1/runs/"+run.ID {
		t.Fatalf("started %+v at %q", run, res.Header.Get("Location"))
	}

	after := int64(0)
	var kinds []string
	status := follow(t, olga, run.ID, &after, &kinds, func(s string) bool { return s == string(engine.StatusWaiting) })
	if status != string(engine.StatusWaiting) || !slices.Contains(kinds, "suspended") {
		t.Fatalf("status %s after events %v, want it waiting after a suspended event", status, kinds)
	}

	got := olga.getRun(run.ID)
	if got.Pending == nil || got.Pending.Digest == "" || len(got.Pending.Calls) == 0 {
		t.Fatalf("a waiting run without its pending turn: %+v", got)
	}
	var calls []map[string]any
	for _, c := range got.Pending.Calls {
		if c.Tool == "publish_page" && (c.Preview == nil || c.Preview.Text == "") {
			t.Errorf("the publish call has no preview: %+v", c)
		}
		calls = append(calls, map[string]any{"id": c.ID, "verdict": "approve"})
	}
	res = olga.call(http.MethodPost, "/api/v1/runs/"+run.ID+"/decision",
		map[string]any{"digest": got.Pending.Digest, "calls": calls, "reason": "looks right"})
	mustAPIStatus(t, res, http.StatusOK)

	status = follow(t, olga, run.ID, &after, &kinds, func(s string) bool {
		return engine.Status(s).Terminal()
	})
	if status != string(engine.StatusCompleted) {
		t.Fatalf("the run ended %s (events %v), want completed", status, kinds)
	}
	if !slices.Contains(kinds, "decision") || kinds[len(kinds)-1] != "finished" {
		t.Errorf("events %v: want a decision and the finished event last", kinds)
	}
	final := olga.getRun(run.ID)
	if final.FinalAnswer == nil || strings.TrimSpace(*final.FinalAnswer) == "" {
		t.Fatalf("no final answer: %+v", final)
	}
	if final.Pending != nil || final.Outcome.Label == "" || !slices.Contains(final.Outcome.DecidedBy, olgaName) {
		t.Errorf("finished run %+v: want no pending turn, an outcome, olga among the deciders", final)
	}
	if p := a.page("about"); p.Status != tools.StatusPublished {
		t.Errorf("the approved call did not run: about is %s", p.Status)
	}
}

// follow long-polls the events of a run from *after until done says its
// status is reached and no event is left, collecting the event kinds. It
// gives up after 40 polls.
func follow(t *testing.T, c *apiClient, id string, after *int64, kinds *[]string, done func(string) bool) string {
	t.Helper()
	for range 40 {
		res := c.call(http.MethodGet, "/api/v1/runs/"+id+"/events?wait=5&after="+strconv.FormatInt(*after, 10), nil)
		mustAPIStatus(t, res, http.StatusOK)
		var page apiEventsBody
		res.decode(t, &page)
		for _, e := range page.Events {
			if e.Seq != *after+1 {
				t.Fatalf("event seq %d after %d", e.Seq, *after)
			}
			*after = e.Seq
			*kinds = append(*kinds, e.Kind)
		}
		if page.NextAfter != *after {
			t.Fatalf("next_after %d, want %d", page.NextAfter, *after)
		}
		if done(page.Status) {
			return page.Status
		}
	}
	t.Fatalf("run %s did not get there after 40 polls (events %v)", id, *kinds)
	return ""
}
