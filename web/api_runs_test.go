package web_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"countersign/engine"
	"countersign/engine/models/demo"
)

// TestAPIStartRunRefusals: a body that is not JSON, is not declared as
// JSON, is too large, has an unknown field or a bad value is refused with
// the field named, and starts nothing.
func TestAPIStartRunRefusals(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	olga := a.api(olgaName)
	good := map[string]string{"agent": "editor", "prompt": publishAbout}
	cases := []struct {
		name   string
		body   any
		opts   []callOpt
		status int
		field  string
	}{
		{"not JSON", nil, []callOpt{rawBody([]byte("agent=editor"))}, http.StatusBadRequest, ""},
		{"cut JSON", nil, []callOpt{rawBody([]byte(`{"agent": "editor"`))}, http.StatusBadRequest, ""},
		{"empty body", nil, []callOpt{rawBody([]byte{})}, http.StatusBadRequest, ""},
		{"two values", nil, []callOpt{rawBody([]byte(`{"agent":"editor","prompt":"x"} {}`))}, http.StatusBadRequest, ""},
		{"form content type", good, []callOpt{withContentType("application/x-www-form-urlencoded")}, http.StatusUnsupportedMediaType, ""},
		{"no content type", good, []callOpt{withContentType("")}, http.StatusUnsupportedMediaType, ""},
		{"unknown field", map[string]string{"agent": "editor", "prompt": publishAbout, "priority": "high"}, nil,
			http.StatusUnprocessableEntity, "priority"},
		{"wrong type", map[string]any{"agent": "editor", "prompt": 42}, nil, http.StatusUnprocessableEntity, "prompt"},
		{"array body", []string{"editor"}, nil, http.StatusUnprocessableEntity, "body"},
		{"no agent", map[string]string{"prompt": publishAbout}, nil, http.StatusUnprocessableEntity, "agent"},
		{"unknown agent", map[string]string{"agent": "nobody", "prompt": publishAbout}, nil, http.StatusUnprocessableEntity, "agent"},
		{"unknown model", map[string]string{"agent": "editor", "model": "gpt-99", "prompt": publishAbout}, nil,
			http.StatusUnprocessableEntity, "model"},
		{"empty prompt", map[string]string{"agent": "editor", "prompt": "  "}, nil, http.StatusUnprocessableEntity, "prompt"},
		{"too large", map[string]string{"agent": "editor", "prompt": strings.Repeat("x", 70_000)}, nil,
			http.StatusRequestEntityTooLarge, ""},
		{"bad idempotency key", good, []callOpt{withHeader("Idempotency-Key", "tab\there")}, http.StatusUnprocessableEntity,
			"Idempotency-Key"},
	}
	runs := a.countRuns()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := olga.with(t).call(http.MethodPost, "/api/v1/runs", tc.body, append(tc.opts, invalidRequest())...)
			p := mustProblem(t, res, tc.status)
			if tc.field != "" && p.field() != tc.field {
				t.Errorf("the problem names %q (%+v), want %q", p.field(), p.Errors, tc.field)
			}
		})
	}
	if n := a.countRuns(); n != runs {
		t.Errorf("refused starts stored %d runs", n-runs)
	}
}

// TestAPIIdempotency: the same key and body give the first run (200,
// replayed); another body with the key is a 422 naming the key; another
// user's key is theirs; concurrent requests with one key start one run.
func TestAPIIdempotency(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	olga, oscar := a.api(olgaName), a.api(oscarName)
	body := map[string]string{"agent": "editor", "prompt": publishAbout}
	key := withHeader("Idempotency-Key", "start-about-1")

	first := olga.call(http.MethodPost, "/api/v1/runs", body, key)
	mustAPIStatus(t, first, http.StatusCreated)
	var r1 apiRunBody
	first.decode(t, &r1)
	again := olga.call(http.MethodPost, "/api/v1/runs", body, key)
	mustAPIStatus(t, again, http.StatusOK)
	var r2 apiRunBody
	again.decode(t, &r2)
	if r2.ID != r1.ID || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay gave run %s (replayed %q), want %s", r2.ID, again.Header.Get("Idempotent-Replayed"), r1.ID)
	}
	// The same body written differently is the same request.
	spaced := olga.call(http.MethodPost, "/api/v1/runs", nil, key,
		rawBody([]byte(`{ "prompt": "`+publishAbout+`",  "agent": "editor" }`)))
	mustAPIStatus(t, spaced, http.StatusOK)

	other := olga.call(http.MethodPost, "/api/v1/runs", map[string]string{"agent": "editor", "prompt": deleteOld}, key)
	p := mustProblem(t, other, http.StatusUnprocessableEntity)
	if p.field() != "Idempotency-Key" || !strings.Contains(p.Detail, "start-about-1") {
		t.Errorf("reused key: %+v, want it named", p)
	}
	// Keys belong to their user.
	mustAPIStatus(t, oscar.call(http.MethodPost, "/api/v1/runs", map[string]string{"agent": "editor", "prompt": deleteOld}, key),
		http.StatusCreated)
	if n := a.countRuns(); n != 2 {
		t.Fatalf("%d runs, want 2", n)
	}

	// Concurrent duplicates: one run, every answer names it.
	const n = 8
	ids := make([]string, n)
	codes := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res := olga.call(http.MethodPost, "/api/v1/runs", map[string]string{"agent": "editor", "prompt": updatePricing},
				withHeader("Idempotency-Key", "race"))
			var r apiRunBody
			if res.StatusCode < 300 {
				res.decode(t, &r)
			}
			ids[i], codes[i] = r.ID, res.StatusCode
		}()
	}
	close(start)
	wg.Wait()
	created := 0
	for i := range n {
		if codes[i] == http.StatusCreated {
			created++
		}
		if ids[i] == "" || ids[i] != ids[0] {
			t.Errorf("concurrent request %d: %d run %q, want all the same run", i, codes[i], ids[i])
		}
	}
	if created != 1 {
		t.Errorf("%d requests created a run, want 1 (codes %v)", created, codes)
	}
	if got := a.countRuns(); got != 3 {
		t.Errorf("%d runs after the race, want 3", got)
	}
}

// TestAPIRefusedStartFreesKey: a start refused for its body does not use
// its key up.
func TestAPIRefusedStartFreesKey(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	olga := a.api(olgaName)
	key := withHeader("Idempotency-Key", "k")
	mustProblem(t, olga.call(http.MethodPost, "/api/v1/runs", map[string]string{"agent": "nobody", "prompt": "x"}, key),
		http.StatusUnprocessableEntity)
	mustAPIStatus(t, olga.call(http.MethodPost, "/api/v1/runs", map[string]string{"agent": "editor", "prompt": "x"}, key),
		http.StatusCreated)
}

// TestAPIListRuns: the history's filters and cursor.
func TestAPIListRuns(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	vera := a.api(veraName)
	for i := range 5 {
		by := olgaName
		if i%2 == 1 {
			by = oscarName
		}
		a.startRun("editor", publishAbout, by)
	}
	var all []string
	cursor := ""
	for range 5 {
		q := url.Values{"limit": {"2"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		res := vera.call(http.MethodGet, "/api/v1/runs?"+q.Encode(), nil)
		mustAPIStatus(t, res, http.StatusOK)
		var page struct {
			Runs       []apiRunBody `json:"runs"`
			NextCursor *string      `json:"next_cursor"`
		}
		res.decode(t, &page)
		for _, r := range page.Runs {
			all = append(all, r.ID)
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if len(all) != 5 {
		t.Fatalf("paged through %d runs, want 5", len(all))
	}
	res := vera.call(http.MethodGet, "/api/v1/runs?initiated_by=oscar&status=queued", nil)
	mustAPIStatus(t, res, http.StatusOK)
	var page struct {
		Runs []apiRunBody `json:"runs"`
	}
	res.decode(t, &page)
	if len(page.Runs) != 2 {
		t.Errorf("%d runs of oscar, want 2", len(page.Runs))
	}
	for _, r := range page.Runs {
		if r.InitiatedBy != oscarName {
			t.Errorf("filter by initiator gave a run of %s", r.InitiatedBy)
		}
	}
	for _, bad := range []struct{ query, field string }{
		{"status=sleeping", "status"}, {"outcome=great", "outcome"}, {"cursor=!!!", "cursor"}, {"limit=0", "limit"}, {"limit=x", "limit"},
	} {
		p := mustProblem(t, vera.call(http.MethodGet, "/api/v1/runs?"+bad.query, nil, invalidRequest()), http.StatusBadRequest)
		if p.field() != bad.field {
			t.Errorf("%s: the problem names %q, want %q", bad.query, p.field(), bad.field)
		}
	}
}

// TestAPIGetRun: a waiting run shows its pending calls with arguments as
// JSON, previews and the digest; an unknown run is a 404 problem; an
// unknown address or method under /api is a problem too.
func TestAPIGetRun(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	w := a.waitingRun("editor", publishAbout, olgaName)
	vera := a.api(veraName)
	got := vera.getRun(w.ID)
	if got.Status != string(engine.StatusWaiting) || got.Pending == nil || got.Pending.Digest != w.PendingDigest {
		t.Fatalf("waiting run %+v, want its pending turn %s", got, w.PendingDigest)
	}
	c := got.Pending.Calls[0]
	if c.Tool != "publish_page" || c.Kind != "write" || !c.NeedsApproval || !bytes.Contains(c.Arguments, []byte(`"slug":"about"`)) {
		t.Errorf("pending call %+v", c)
	}
	if c.Preview == nil || !strings.Contains(c.Preview.Text, "about") {
		t.Errorf("pending call without its preview: %+v", c.Preview)
	}
	if got.Audit == nil || !got.Audit.Intact {
		t.Errorf("audit %+v, want intact", got.Audit)
	}
	mustProblem(t, vera.call(http.MethodGet, "/api/v1/runs/01NOSUCHRUN", nil), http.StatusNotFound)
	mustProblem(t, vera.call(http.MethodGet, "/api/v1/nothing-here", nil, undocumented()), http.StatusNotFound)
	res := vera.call(http.MethodDelete, "/api/v1/runs/"+w.ID, nil, undocumented())
	mustProblem(t, res, http.StatusMethodNotAllowed)
	if allow := res.Header.Get("Allow"); !strings.Contains(allow, http.MethodGet) {
		t.Errorf("405 with Allow %q", allow)
	}
}

// TestAPICancel cancels a waiting run; a second cancel is a 409, an unknown
// run a 404.
func TestAPICancel(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	w := a.waitingRun("editor", publishAbout, olgaName)
	olga := a.api(olgaName)
	res := olga.call(http.MethodPost, "/api/v1/runs/"+w.ID+"/cancel", nil)
	mustAPIStatus(t, res, http.StatusOK)
	var got apiRunBody
	res.decode(t, &got)
	if got.Status != string(engine.StatusCancelled) || got.Pending != nil {
		t.Errorf("after cancel: %+v", got)
	}
	mustProblem(t, olga.call(http.MethodPost, "/api/v1/runs/"+w.ID+"/cancel", nil), http.StatusConflict)
	mustProblem(t, olga.call(http.MethodPost, "/api/v1/runs/01NOSUCHRUN/cancel", nil), http.StatusNotFound)
}

// TestAPIAudit gives a run's audit record as JSON lines with the chain, the
// same as the store's export; an unknown run is a 404 problem.
func TestAPIAudit(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	w := a.waitingRun("editor", publishAbout, olgaName)
	vera := a.api(veraName)
	res := vera.call(http.MethodGet, "/api/v1/runs/"+w.ID+"/audit", nil)
	mustAPIStatus(t, res, http.StatusOK)
	if ct := res.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("Content-Type %q", ct)
	}
	var want bytes.Buffer
	if err := a.db.ExportAudit(context.Background(), w.ID, &want); err != nil {
		t.Fatal(err)
	}
	if string(res.body) != want.String() {
		t.Errorf("the API's record differs from the export:\n%s\nwant\n%s", res.body, want.String())
	}
	lines := strings.Split(strings.TrimSpace(string(res.body)), "\n")
	if int64(len(lines)) != w.LastSeq {
		t.Fatalf("%d lines, want %d", len(lines), w.LastSeq)
	}
	var first struct {
		RunID string `json:"run_id"`
		Seq   int64  `json:"seq"`
		Hash  string `json:"hash"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.RunID != w.ID || first.Seq != 1 || first.Hash == "" {
		t.Errorf("first line %s: %+v, %v", lines[0], first, err)
	}
	mustProblem(t, vera.call(http.MethodGet, "/api/v1/runs/01NOSUCHRUN/audit", nil), http.StatusNotFound)
}

// TestAPIIdempotencyWaitsForInFlight: a request whose key is held by a
// request still starting its run waits for that run and answers with it.
// The held reservation is made through the store, with the hash the
// handler computes of the decoded body (its fields in order, compact).
func TestAPIIdempotencyWaitsForInFlight(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	olga := a.api(olgaName)
	ctx := context.Background()
	body, err := json.Marshal(struct {
		Agent  string `json:"agent"`
		Model  string `json:"model"`
		Prompt string `json:"prompt"`
	}{"editor", demo.Name, publishAbout})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	uid := a.users[olgaName].ID
	if id, err := a.db.ReserveIdempotencyKey(ctx, uid, "held", hex.EncodeToString(sum[:]), time.Now()); err != nil || id != "" {
		t.Fatalf("reserve: %q, %v", id, err)
	}
	got := make(chan *apiResponse, 1)
	go func() {
		got <- olga.call(http.MethodPost, "/api/v1/runs", map[string]string{"agent": "editor", "model": demo.Name, "prompt": publishAbout},
			withHeader("Idempotency-Key", "held"))
	}()
	select {
	case res := <-got:
		t.Fatalf("the request did not wait for the held key: %d %s", res.StatusCode, res.body)
	case <-time.After(300 * time.Millisecond):
	}
	run := a.createRun("editor", publishAbout, olgaName, time.Now())
	if err := a.db.CompleteIdempotencyKey(ctx, uid, "held", run.ID); err != nil {
		t.Fatal(err)
	}
	res := <-got
	mustAPIStatus(t, res, http.StatusOK)
	var r apiRunBody
	res.decode(t, &r)
	if r.ID != run.ID || res.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("answered with run %s, want the held key's run %s", r.ID, run.ID)
	}
	if n := a.countRuns(); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
}
