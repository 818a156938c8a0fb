package web_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"countersign/engine"
)

// TestAPIEvents pages through a run's events by seq, and refuses bad
// parameters naming them.
func TestAPIEvents(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	w := a.waitingRun("editor", publishAbout, olgaName)
	vera := a.api(veraName)
	path := "/api/v1/runs/" + w.ID + "/events"

	res := vera.call(http.MethodGet, path, nil)
	mustAPIStatus(t, res, http.StatusOK)
	var all apiEventsBody
	res.decode(t, &all)
	if int64(len(all.Events)) != w.LastSeq || all.Status != string(engine.StatusWaiting) || all.NextAfter != w.LastSeq {
		t.Fatalf("events %+v, want %d events of a waiting run", all, w.LastSeq)
	}
	if all.Events[0].Kind != "prompt" || all.Events[0].Text != publishAbout || all.Events[0].By != olgaName {
		t.Errorf("first event %+v, want the prompt", all.Events[0])
	}
	res = vera.call(http.MethodGet, path+"?after=1&limit=1", nil)
	mustAPIStatus(t, res, http.StatusOK)
	var one apiEventsBody
	res.decode(t, &one)
	if len(one.Events) != 1 || one.Events[0].Seq != 2 || one.NextAfter != 2 {
		t.Errorf("after=1&limit=1 gave %+v", one)
	}
	for _, bad := range []struct{ query, field string }{
		{"after=-1", "after"}, {"after=x", "after"}, {"wait=-5", "wait"}, {"limit=501", "limit"},
	} {
		p := mustProblem(t, vera.call(http.MethodGet, path+"?"+bad.query, nil, invalidRequest()), http.StatusBadRequest)
		if p.field() != bad.field {
			t.Errorf("%s: the problem names %q, want %q", bad.query, p.field(), bad.field)
		}
	}
	mustProblem(t, vera.call(http.MethodGet, "/api/v1/runs/01NOSUCHRUN/events?wait=1", nil), http.StatusNotFound)
}

// TestAPIEventsLongPoll: a long poll on a waiting run is answered by the
// decision that moves it on, and a run that has ended answers at once even
// when asked to wait.
func TestAPIEventsLongPoll(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	w := a.waitingRun("editor", publishAbout, olgaName)
	olga := a.api(olgaName)
	path := "/api/v1/runs/" + w.ID + "/events?wait=30&after="

	got := make(chan apiEventsBody, 1)
	go func() {
		res := olga.call(http.MethodGet, path+strconv.FormatInt(w.LastSeq, 10), nil)
		var page apiEventsBody
		if res.StatusCode == http.StatusOK {
			res.decode(t, &page)
		}
		got <- page
	}()
	// The poll is held: nothing comes before the decision.
	select {
	case page := <-got:
		t.Fatalf("the long poll answered before anything happened: %+v", page)
	case <-time.After(300 * time.Millisecond):
	}
	if err := a.rt.Decide(context.Background(), w.ID, engine.Decision{Verdict: engine.VerdictDeny, Digest: w.PendingDigest,
		By: oscarName}); err != nil {
		t.Fatal(err)
	}
	page := <-got
	if len(page.Events) == 0 || page.Events[0].Kind != "decision" || page.Events[0].By != oscarName {
		t.Fatalf("the long poll gave %+v, want the decision", page)
	}

	// An ended run answers at once, with nothing.
	c := a.createRun("editor", publishAbout, olgaName, time.Now())
	if err := a.rt.Cancel(context.Background(), c.ID, olgaName); err != nil {
		t.Fatal(err)
	}
	ended := a.run(c.ID)
	res := olga.call(http.MethodGet, "/api/v1/runs/"+c.ID+"/events?wait=30&after="+strconv.FormatInt(ended.LastSeq, 10), nil)
	mustAPIStatus(t, res, http.StatusOK)
	var none apiEventsBody
	res.decode(t, &none)
	if len(none.Events) != 0 || none.Status != string(engine.StatusCancelled) || none.NextAfter != ended.LastSeq {
		t.Errorf("an ended run's long poll gave %+v", none)
	}
}

// TestAPIEventsWaitEnds: a long poll with nothing new ends when its wait
// does, with no event; one whose client goes away ends with it.
func TestAPIEventsWaitEnds(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	w := a.waitingRun("editor", publishAbout, olgaName)
	olga := a.api(olgaName)
	res := olga.call(http.MethodGet, "/api/v1/runs/"+w.ID+"/events?wait=1&after="+strconv.FormatInt(w.LastSeq, 10), nil)
	mustAPIStatus(t, res, http.StatusOK)
	var page apiEventsBody
	res.decode(t, &page)
	if len(page.Events) != 0 || page.NextAfter != w.LastSeq || page.Status != string(engine.StatusWaiting) {
		t.Errorf("an ended wait gave %+v", page)
	}

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		a.srv.URL+"/api/v1/runs/"+w.ID+"/events?wait=30&after="+strconv.FormatInt(w.LastSeq, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+olga.token)
	done := make(chan error, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	if err := <-done; err == nil {
		t.Error("the cancelled request got an answer")
	}
	// The server closes with the test: a poll still held would keep
	// httptest.Server.Close waiting and the test from ending.
}
