package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"countersign/app"
	"countersign/engine"
	"countersign/engine/models/demo"
	"countersign/store"
)

// BenchmarkRunSteps measures the htmx polling endpoint GET
// /runs/{id}/steps?after=N in process (no network) for a running run with 10
// and with 10,000 earlier steps, nothing new after N. Each op polls both
// runs, alternately, so the two are measured in the same conditions; it
// reports the p50 and p99 of each and their ratios (goal <= 1.2).
func BenchmarkRunSteps(b *testing.B) {
	app := newBenchApp(b)
	small := app.runWithSteps(b, 10)
	large := app.runWithSteps(b, 10_000)
	cookie := app.signIn(b)
	poll := func(id string, after int) time.Duration {
		req := httptest.NewRequest(http.MethodGet, fmt.Sprintf("/runs/%s/steps?after=%d", id, after), nil)
		req.Header.Set("Cookie", cookie)
		req.Header.Set("HX-Request", "true")
		rec := httptest.NewRecorder()
		start := time.Now()
		app.handler.ServeHTTP(rec, req)
		d := time.Since(start)
		if rec.Code != http.StatusOK {
			b.Fatalf("poll %s: %d %s", id, rec.Code, rec.Body.String())
		}
		return d
	}
	// Warm the caches of both runs once.
	poll(small, 10)
	poll(large, 10_000)
	var ds, dl []time.Duration
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			ds = append(ds, poll(small, 10))
			dl = append(dl, poll(large, 10_000))
		} else {
			dl = append(dl, poll(large, 10_000))
			ds = append(ds, poll(small, 10))
		}
	}
	s50, s99 := benchQuantile(ds, 0.50), benchQuantile(ds, 0.99)
	l50, l99 := benchQuantile(dl, 0.50), benchQuantile(dl, 0.99)
	b.ReportMetric(float64(s50.Microseconds()), "p50-10-us")
	b.ReportMetric(float64(s99.Microseconds()), "p99-10-us")
	b.ReportMetric(float64(l50.Microseconds()), "p50-10k-us")
	b.ReportMetric(float64(l99.Microseconds()), "p99-10k-us")
	b.ReportMetric(float64(l50)/float64(s50), "ratio-p50")
	b.ReportMetric(float64(l99)/float64(s99), "ratio-p99")
}

// BenchmarkRunStepsWaiting measures the poll of a waiting run page, GET
// /runs/{id}/steps?after=N&turn=D, for runs waiting on turn D with 10 and
// with 10,000 earlier steps and nothing new: the 204 answered from the run
// row alone. It reports the same figures as BenchmarkRunSteps, to compare
// with the poll of a running run.
func BenchmarkRunStepsWaiting(b *testing.B) {
	app := newBenchApp(b)
	small, smallTurn := app.waitingRunWithSteps(b, 10)
	large, largeTurn := app.waitingRunWithSteps(b, 10_000)
	cookie := app.signIn(b)
	poll := func(id, turn string, after int) time.Duration {
		req := httptest.NewRequest(http.MethodGet, fmt.Sprintf("/runs/%s/steps?after=%d&turn=%s", id, after, turn), nil)
		req.Header.Set("Cookie", cookie)
		req.Header.Set("HX-Request", "true")
		rec := httptest.NewRecorder()
		start := time.Now()
		app.handler.ServeHTTP(rec, req)
		d := time.Since(start)
		if rec.Code != http.StatusNoContent {
			b.Fatalf("poll %s: %d %s", id, rec.Code, rec.Body.String())
		}
		return d
	}
	poll(small, smallTurn, 10)
	poll(large, largeTurn, 10_000)
	var ds, dl []time.Duration
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			ds = append(ds, poll(small, smallTurn, 10))
			dl = append(dl, poll(large, largeTurn, 10_000))
		} else {
			dl = append(dl, poll(large, largeTurn, 10_000))
			ds = append(ds, poll(small, smallTurn, 10))
		}
	}
	s50, s99 := benchQuantile(ds, 0.50), benchQuantile(ds, 0.99)
	l50, l99 := benchQuantile(dl, 0.50), benchQuantile(dl, 0.99)
	b.ReportMetric(float64(s50.Microseconds()), "p50-10-us")
	b.ReportMetric(float64(s99.Microseconds()), "p99-10-us")
	b.ReportMetric(float64(l50.Microseconds()), "p50-10k-us")
	b.ReportMetric(float64(l99.Microseconds()), "p99-10k-us")
	b.ReportMetric(float64(l50)/float64(s50), "ratio-p50")
	b.ReportMetric(float64(l99)/float64(s99), "ratio-p99")
}

// waitingRunWithSteps is runWithSteps with its last step a suspension: the
// run waits on a turn whose digest it returns.
func (a *benchApp) waitingRunWithSteps(b *testing.B, n int) (id, turn string) {
	b.Helper()
	id = a.runWithSteps(b, n-1)
	call := engine.ToolCall{ID: "call_w_1", Name: "publish_page", Arguments: `{"slug":"about"}`}
	turn = engine.TurnDigest([]engine.ToolCall{call})
	state, err := engine.EncodeState(&engine.SuspendedState{Version: 1, Iterations: 1, Pending: []engine.ToolCall{call},
		Transcript: []engine.Message{{Role: engine.RoleUser, Content: "Publish the about page."},
			{Role: engine.RoleAssistant, ToolCalls: []engine.ToolCall{call}}}})
	if err != nil {
		b.Fatal(err)
	}
	if err := a.db.SuspendRun(context.Background(), id, "bench-worker", engine.Suspend{
		Suspension: engine.Suspension{State: state, Digest: turn},
		Event:      engine.Event{Kind: engine.EventSuspended, Pending: []engine.ToolCall{call}, Digest: turn}, Now: time.Now()}); err != nil {
		b.Fatal(err)
	}
	return id, turn
}

// benchApp is the real app over a SQLite file, built by app.New as
// `countersign serve` builds it, but with its runtime not started: the runs
// it polls are put in place by the benchmark and no worker touches them.
type benchApp struct {
	db      *store.DB
	handler http.Handler
}

func newBenchApp(b *testing.B) *benchApp {
	b.Helper()
	ctx := context.Background()
	a, err := app.New(ctx, app.Config{DBPath: filepath.Join(b.TempDir(), "cs.db"), BcryptCost: bcrypt.MinCost,
		SessionKey: []byte("bench-session-key-0123456789abcdef0123456789"),
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	if _, err := a.DB.CreateUser(ctx, "bench", "bench-password", store.RoleAdmin); err != nil {
		b.Fatal(err)
	}
	return &benchApp{db: a.DB, handler: a.Handler}
}

// runWithSteps stores a running run, held by a worker whose lease never
// expires, with n steps: the prompt, then model turns with a tool call, each
// followed by the call's tool_started and tool_finished.
func (a *benchApp) runWithSteps(b *testing.B, n int) string {
	b.Helper()
	ctx := context.Background()
	now := time.Now()
	prompt := "How many words are on the pricing page?"
	run, err := a.db.CreateRun(ctx, engine.NewRun{Agent: "researcher", Model: demo.Name, Prompt: prompt, InitiatedBy: "bench"},
		engine.Event{Kind: engine.EventPrompt, At: now, Text: prompt, By: "bench"}, now)
	if err != nil {
		b.Fatal(err)
	}
	far := now.Add(24 * time.Hour)
	if _, err := a.db.AcquireRun(ctx, run.ID, "bench-worker", now, far); err != nil {
		b.Fatal(err)
	}
	for seq := 2; seq <= n; seq++ {
		if _, _, err := a.db.AppendEvent(ctx, run.ID, "bench-worker", benchEvent(seq), far); err != nil {
			b.Fatal(err)
		}
	}
	return run.ID
}

// benchEvent is a plausible step number seq of a read-only run.
func benchEvent(seq int) engine.Event {
	call := engine.ToolCall{ID: fmt.Sprintf("call_%d_1", seq/3), Name: "word_count", Arguments: `{"slug":"pricing"}`}
	switch seq % 3 {
	case 2:
		return engine.Event{Kind: engine.EventModelTurn, Text: "I'll count the words on the page “pricing”.",
			ToolCalls: []engine.ToolCall{call}, Usage: &engine.Usage{PromptTokens: 412, CompletionTokens: 18, TotalTokens: 430},
			Iteration: seq / 3, DurationMS: 1}
	case 0:
		return engine.Event{Kind: engine.EventToolStarted, Call: &call}
	default:
		return engine.Event{Kind: engine.EventToolFinished, Call: &call, Result: `{"slug":"pricing","words":87}`, DurationMS: 1}
	}
}

var benchCSRF = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// signIn signs in as the benchmark's admin and returns the Cookie header
// of the session.
func (a *benchApp) signIn(b *testing.B) string {
	b.Helper()
	rec := httptest.NewRecorder()
	a.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/login", nil))
	m := benchCSRF.FindStringSubmatch(rec.Body.String())
	if m == nil {
		b.Fatalf("no CSRF token on the sign-in page: %d", rec.Code)
	}
	cookie := benchCookies(rec.Result())
	form := url.Values{"name": {"bench"}, "password": {"bench-password"}, "_csrf": {m[1]}}
	req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Cookie", cookie)
	rec = httptest.NewRecorder()
	a.handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusSeeOther {
		b.Fatalf("sign in: %d %s", rec.Code, rec.Body.String())
	}
	return benchCookies(rec.Result())
}

func benchCookies(res *http.Response) string {
	var parts []string
	for _, c := range res.Cookies() {
		parts = append(parts, c.Name+"="+c.Value)
	}
	return strings.Join(parts, "; ")
}

// benchQuantile returns the q-quantile of ds (nearest rank).
func benchQuantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
