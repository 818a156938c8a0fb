package web_test

import (
	"net/http"
	"testing"
)

// TestAPIInbox lists the waiting turns, oldest first, each with its run and
// pending calls; a decided turn leaves it.
func TestAPIInbox(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	w1 := a.waitingRun("editor", publishAbout, olgaName)
	w2 := a.waitingRun("editor", deleteOld, oscarName)
	vera := a.api(veraName)

	type inbox struct {
		Count int `json:"count"`
		Items []struct {
			Run apiRunBody `json:"run"`
		} `json:"items"`
	}
	res := vera.call(http.MethodGet, "/api/v1/inbox", nil)
	mustAPIStatus(t, res, http.StatusOK)
	var in inbox
	res.decode(t, &in)
	if in.Count != 2 || len(in.Items) != 2 || in.Items[0].Run.ID != w1.ID || in.Items[1].Run.ID != w2.ID {
		t.Fatalf("inbox %+v, want the two runs oldest first", in)
	}
	for _, it := range in.Items {
		if it.Run.Pending == nil || len(it.Run.Pending.Calls) == 0 || it.Run.Pending.Digest == "" {
			t.Errorf("inbox item without its turn: %+v", it.Run)
		}
	}
	mustAPIStatus(t, a.api(olgaName).call(http.MethodPost, "/api/v1/runs/"+w1.ID+"/decision",
		map[string]any{"digest": w1.PendingDigest, "verdict": "deny"}), http.StatusOK)
	res = vera.call(http.MethodGet, "/api/v1/inbox", nil)
	mustAPIStatus(t, res, http.StatusOK)
	in = inbox{}
	res.decode(t, &in)
	if in.Count != 1 || in.Items[0].Run.ID != w2.ID {
		t.Errorf("after a decision the inbox is %+v, want only %s", in, w2.ID)
	}
}
