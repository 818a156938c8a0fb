package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"countersign/engine"
	"countersign/store"
)

// dbState is what bad input must leave unchanged.
type dbState struct {
	runs, events, revisions int
	status                  engine.Status
	digest                  string
}

func snapshot(t testing.TB, a *testApp, runID string) dbState {
	t.Helper()
	ctx := context.Background()
	run, err := a.db.Run(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := a.db.Events(ctx, runID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := a.db.Pages().Revisions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := a.db.CountRuns(ctx, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return dbState{runs: runs, events: len(evs), revisions: rev, status: run.Status, digest: run.PendingDigest}
}

// checkRefused asserts a 4xx answer without Go internals.
func checkRefused(t *testing.T, what string, code int, body string) {
	t.Helper()
	if code < 400 || code > 499 {
		t.Fatalf("%s: status %d, want 4xx\n%s", what, code, clip(body, 800))
	}
	for _, bad := range []string{"goroutine ", "panic", ".go:", "sqlite3"} {
		if strings.Contains(body, bad) {
			t.Fatalf("%s: answer leaks %q", what, bad)
		}
	}
}

// FuzzToolResume posts random decisions — ids, digests, decision values,
// reasons, invalid UTF-8, huge bodies — on a waiting run as an operator.
// Every answer is a 4xx and nothing changes in the database.
func FuzzToolResume(f *testing.F) {
	a := newTestApp(f)
	run := a.waitingRun("editor", publishAbout, "olga")
	c := a.as("oscar")
	c.get("/runs/" + run.ID)
	csrf := c.csrf
	before := snapshot(f, a, run.ID)

	f.Add(run.ID, "deadbeef", "approve", "")
	f.Add(run.ID, run.PendingDigest, "maybe", "ok")
	f.Add(run.ID, run.PendingDigest, "approve", strings.Repeat("é", 2001))
	f.Add(run.ID, run.PendingDigest, "deny", strings.Repeat("r", 70_000))
	f.Add(run.ID, run.PendingDigest, "deny", "bad \xff\xfe utf-8")
	f.Add(run.ID, run.PendingDigest+" ", "approve", "")
	f.Add("", "", "", "")
	f.Add("01ZZZZZZZZZZZZZZZZZZZZZZZZ", run.PendingDigest, "approve", "")
	f.Add("\x00\xff", "\xff", "approve\x00", "<script>alert(1)</script>")
	f.Add(strings.Repeat("a", 5000), "x", "deny", "")
	f.Fuzz(func(t *testing.T, runID, digest, decision, reason string) {
		if runID == run.ID && digest == run.PendingDigest && (decision == "approve" || decision == "deny") &&
			len(reason) < 2000 && strings.ToValidUTF8(reason, "") == reason {
			return // a real decision on the real turn is not bad input
		}
		form := url.Values{"_csrf": {csrf}, "run_id": {runID}, "digest": {digest}, "decision": {decision}, "reason": {reason}}
		code, body, err := rawPost(c.http, a.srv.URL+"/tool/resume", form)
		if err != nil {
			t.Fatal(err)
		}
		checkRefused(t, "POST /tool/resume", code, body)
		if after := snapshot(t, a, run.ID); after != before {
			t.Fatalf("bad input changed the database: %+v -> %+v", before, after)
		}
	})
}

// FuzzRunRoutes requests the run routes with random ids and after values
// and cancels random ids: only 4xx answers, nothing changes.
func FuzzRunRoutes(f *testing.F) {
	a := newTestApp(f)
	run := a.waitingRun("editor", publishAbout, "olga")
	c := a.as("oscar")
	c.get("/runs")
	csrf := c.csrf
	before := snapshot(f, a, run.ID)

	f.Add("nope", "0", uint8(0))
	f.Add(run.ID+"x", "abc", uint8(1))
	f.Add(run.ID, "-1", uint8(1))
	f.Add(run.ID, "9223372036854775808", uint8(1))
	f.Add("\xff\xfe", "\x00", uint8(2))
	f.Add("../../etc/passwd", "1e9", uint8(0))
	f.Add(strings.Repeat("z", 4000), "", uint8(2))
	f.Fuzz(func(t *testing.T, id, after string, route uint8) {
		if id == "" || id == "new" || id == "." || id == ".." {
			return // "/runs/", "/runs/new", … are other pages
		}
		base := a.srv.URL + "/runs/" + url.PathEscape(id)
		var code int
		var body string
		var err error
		switch route % 3 {
		case 0:
			if id == run.ID {
				return
			}
			code, body, err = rawGet(c.http, base)
		case 1:
			code, body, err = rawGet(c.http, base+"/steps?after="+url.QueryEscape(after))
			if id == run.ID && err == nil && code == http.StatusOK {
				return // a valid poll of the real run
			}
		case 2:
			if id == run.ID {
				return
			}
			code, body, err = rawPost(c.http, base+"/cancel", url.Values{"_csrf": {csrf}})
		}
		if err != nil {
			t.Fatal(err)
		}
		checkRefused(t, "run route", code, body)
		if now := snapshot(t, a, run.ID); now != before {
			t.Fatalf("bad input changed the database: %+v -> %+v", before, now)
		}
	})
}
