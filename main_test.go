package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/chromedp/chromedp"

	"countersign/engine/models/demo"
)

// The end-to-end tests boot the real run() on a free port, as `countersign
// serve` does, and drive it with headless Chromium (and, for the restart
// test, plain HTTP). They assert what a person sees: data-testid elements,
// their text and the run's status badge. Their kit is in browser_test.go.

// TestApproveInBrowser signs in, starts an example, approves the write and
// watches the run complete in place.
func TestApproveInBrowser(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	b := newBrowser(t)
	b.signIn(srv.URL, "admin", srv.Password)

	b.startExample("Publish the about page.")
	b.setMarker()
	if b.count(cardSel) == 0 {
		t.Log("the run page loaded before the run suspended; polling brings the card")
	}
	b.waitForCard("publish_page")
	b.waitUntil("the inbox badge to show 1", `document.querySelector("[data-testid=inbox-badge]").textContent.trim() === "1"`)
	b.checkMarker("after the card appeared")

	b.decide(approveSel, "Approved")
	b.waitForStatus("completed")
	b.checkMarker("after approving")

	want := []string{"prompt", "model_turn", "suspended", "decision", "tool_started", "tool_finished", "model_turn", "finished"}
	if got := b.stepKinds(); !slices.Equal(got, want) {
		t.Errorf("steps %v, want %v", got, want)
	}
	if got := eval[int](b, `new Set(Array.from(document.querySelectorAll("#steps [data-testid=step]"), e => e.dataset.seq)).size`); got != len(want) {
		t.Errorf("%d distinct step numbers, want %d (a step shown twice?)", got, len(want))
	}
	if got := b.text(`[data-testid=decision]`); !strings.Contains(got, "admin") {
		t.Errorf("decision step %q does not name admin", got)
	}
	if got := b.text(`[data-testid=final-answer]`); got != "I published the page “about”." {
		t.Errorf("final answer %q", got)
	}
	if b.count(`[data-testid=write-mark]`) != 1 {
		t.Error("the tool_started step is not marked as an approved write")
	}
	b.waitUntil("the inbox badge to go back to 0", `document.querySelector("[data-testid=inbox-badge]").textContent.trim() === "0"`)
	if b.count(`#poller[data-active]`) != 0 {
		t.Error("the poller still polls after the run completed")
	}
	b.checkMarker("at the end")

	// A reload shows the same, from the server alone.
	b.navigate(srv.URL + eval[string](b, `location.pathname`))
	if got := b.stepKinds(); !slices.Equal(got, want) {
		t.Errorf("after a reload: steps %v, want %v", got, want)
	}
	if b.count(cardSel) != 0 {
		t.Error("after a reload the completed run still shows an approval card")
	}
}

// TestDenyWithReasonInBrowser denies a write with a reason, which the model's
// final answer quotes.
func TestDenyWithReasonInBrowser(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	b := newBrowser(t)
	b.signIn(srv.URL, "admin", srv.Password)

	b.startExample("Delete the old announcement page.")
	b.setMarker()
	b.waitForCard("delete_page")
	// No quote mark at either end: the demo model trims those off when it
	// quotes a reason.
	reason := `Keep "it" for the <archive> & legal`
	b.do("type a reason", chromedp.SendKeys(chromedp.CSS(cardSel+` [data-testid=reason-input]`), reason))
	b.decide(denySel, "Denied")
	b.waitForStatus("completed")
	b.checkMarker("after denying")

	if got := b.text(`[data-testid=decision]`); !strings.Contains(got, "admin") {
		t.Errorf("decision step %q does not name admin", got)
	}
	if got := eval[string](b, `document.querySelector("[data-testid=decision]").dataset.decision`); got != "deny" {
		t.Errorf("decision %q, want deny", got)
	}
	if got := b.text(`[data-testid=reason]`); got != reason {
		t.Errorf("the decision step shows the reason %q, want %q", got, reason)
	}
	answer := b.text(`[data-testid=final-answer]`)
	if !strings.Contains(answer, "denied") || !strings.Contains(answer, "“"+reason+"”") {
		t.Errorf("the final answer does not quote the reason %q:\n%s", reason, answer)
	}
	if kinds := b.stepKinds(); slices.Contains(kinds, "tool_started") || len(kinds) == 0 || kinds[len(kinds)-1] != "finished" {
		t.Errorf("steps %v: a denied call must not start, and the run must finish", kinds)
	}
	if b.count(`archive`) != 0 {
		t.Error("the reason was parsed as HTML")
	}
}

// TestSuspendsTwiceInBrowser approves two turns of one run: after the first
// decision, polling brings the second card.
func TestSuspendsTwiceInBrowser(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	b := newBrowser(t)
	b.signIn(srv.URL, "admin", srv.Password)

	b.startExample("Create a page announcing the winter sale, then publish it.")
	b.setMarker()
	b.waitForCard("create_page")
	b.decide(approveSel, "Approved")
	// The decision restarted polling, which brings the card of the second
	// turn without a reload.
	b.waitForCard("publish_page")
	b.checkMarker("when the second card appeared")
	b.decide(approveSel, "Approved")
	b.waitForStatus("completed")
	b.checkMarker("at the end")

	kinds := b.stepKinds()
	n := func(kind string) int {
		c := 0
		for _, k := range kinds {
			if k == kind {
				c++
			}
		}
		return c
	}
	if n("suspended") != 2 || n("decision") != 2 || n("tool_finished") != 2 || len(kinds) == 0 || kinds[len(kinds)-1] != "finished" {
		t.Errorf("steps %v: want two suspensions, two decisions, two tool results, then finished", kinds)
	}
	if got := b.text(`[data-testid=final-answer]`); !strings.Contains(got, "published it") {
		t.Errorf("final answer %q", got)
	}
}

// TestInjectionShownAsText starts runs whose prompts are markup and checks
// that every page shows them as text and no script runs.
func TestInjectionShownAsText(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	b := newBrowser(t)
	b.signIn(srv.URL, "admin", srv.Password)

	const prompt = `<script>alert(1)</script><img src=x onerror=alert(2)> <a href="javascript:alert(3)">x</a>`
	noMarkup := func(where string) {
		t.Helper()
		for _, sel := range []string{`img`, `img[onerror]`, `main script`, `a[href^="javascript" i]`, `[onerror]`} {
			if n := b.count(sel); n != 0 {
				t.Errorf("%s: %d elements match %s; the prompt was parsed as HTML", where, n, sel)
			}
		}
	}

	b.do("type the prompt", chromedp.SendKeys(chromedp.CSS(`[data-testid=prompt]`), prompt))
	b.load("start the run", chromedp.Click(chromedp.CSS(`[data-testid=start-run]`)))
	id := b.onRunPage()
	b.waitForStatus("completed")
	if got := b.text(`[data-testid=prompt-text]`); got != prompt {
		t.Errorf("the run page shows the prompt as %q, want the text %q", got, prompt)
	}
	if b.text(`[data-testid=final-answer]`) == "" {
		t.Error("the run has no final answer")
	}
	noMarkup("run page")

	b.navigate(srv.URL + "/runs")
	row := `[data-testid=run-row][data-run-id=` + js(id) + `]`
	if got := b.text(row + ` td[data-label=Prompt] [data-testid=run-link]`); got != prompt {
		t.Errorf("the history lists the prompt as %q, want %q", got, prompt)
	}
	noMarkup("history page")

	// The search box echoes its query into an attribute.
	const q = `"><img src=x onerror=alert(4)>`
	b.navigate(srv.URL + "/runs?q=" + url.QueryEscape(q))
	if got := eval[string](b, `document.querySelector("[data-testid=filter-q]").value`); got != q {
		t.Errorf("the search box holds %q, want %q", got, q)
	}
	noMarkup("history search")

	// Tool arguments and previews on the approval card come from the model.
	b.navigate(srv.URL + "/runs/new")
	b.do("type a create prompt", chromedp.SendKeys(chromedp.CSS(`[data-testid=prompt]`),
		`Create a page announcing <img src=x onerror=alert(5)>, then publish it.`))
	b.load("start the run", chromedp.Click(chromedp.CSS(`[data-testid=start-run]`)))
	b.onRunPage()
	b.waitForCard("create_page")
	if got := b.text(cardSel); !strings.Contains(got, "onerror=alert(5)") {
		t.Errorf("the approval card does not show the injected title as text:\n%s", got)
	}
	noMarkup("approval card")
	b.decide(denySel, "Denied")
	b.waitForStatus("completed")
	noMarkup("denied run")

	// Give a stray handler a moment, then check that no dialog opened.
	time.Sleep(300 * time.Millisecond)
	if d := b.dialogsSeen(); len(d) != 0 {
		t.Fatalf("dialogs opened: %v", d)
	}
	// The listener does catch a dialog: open one through DevTools, which
	// the page's CSP does not govern.
	b.do("open a probe alert", chromedp.Evaluate[chromedp.Void](`setTimeout(() => alert("probe"), 0)`))
	b.waitUntil("the page to run again after the probe alert was dismissed", `true`)
	deadline := time.Now().Add(5 * time.Second)
	for len(b.dialogsSeen()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if d := b.dialogsSeen(); len(d) != 1 || !strings.Contains(d[0], "probe") {
		t.Fatalf("the dialog listener saw %v, want the probe alert", d)
	}
	b.mu.Lock()
	b.dialogs = nil
	b.mu.Unlock()
}

// TestRestartKeepsWaitingRun stops the server while a run waits for approval
// and starts it again on the same database: the run is still there and can
// be approved, over plain HTTP as a browser without JavaScript would.
func TestRestartKeepsWaitingRun(t *testing.T) {
	t.Parallel()
	dbPath := filepath.Join(t.TempDir(), "countersign.db")
	first := startServer(t, dbPath)
	if first.Password == "" {
		t.Fatal("the first start logged no admin password")
	}
	c := newHTTPClient(t)
	signInHTTP(t, c, first.URL, "admin", first.Password)

	doc, _, _ := httpGet(t, c, first.URL+"/runs/new")
	csrf, _ := doc.Find(`[data-testid=new-run-form] input[name=_csrf]`).Attr("value")
	_, final, status := httpPost(t, c, first.URL+"/runs", url.Values{"_csrf": {csrf}, "agent": {"editor"},
		"model": {demo.Name}, "prompt": {"Publish the about page."}})
	runID, ok := strings.CutPrefix(final.Path, "/runs/")
	if status != http.StatusOK || !ok || runID == "" {
		t.Fatalf("start a run: status %d at %s", status, final)
	}
	runURL := "/runs/" + runID
	waitStatus := func(base, want string) *goquery.Document {
		t.Helper()
		return waitRunStatus(t, c, base, runURL, want)
	}
	waitStatus(first.URL, "waiting_for_approval")

	began := time.Now()
	if err := first.stop(5 * time.Second); err != nil {
		t.Fatalf("stop while a run waits: %v", err)
	}
	t.Logf("run() returned %s after its context was cancelled", time.Since(began).Round(time.Millisecond))

	second := startServer(t, dbPath)
	if second.Password != "" || strings.Contains(second.out.String(), "created the first user") {
		t.Error("the second start created the admin again")
	}
	// The session key is kept in the database, so the cookie still signs
	// admin in.
	doc = waitStatus(second.URL, "waiting_for_approval")
	if got := doc.Find(`[data-testid=nav-user]`).Text(); got != "admin" {
		t.Fatalf("after the restart the session no longer signs in admin (nav user %q)", got)
	}
	if got := doc.Find(`[data-testid=inbox-badge]`).Text(); strings.TrimSpace(got) != "1" {
		t.Errorf("inbox badge %q, want 1", got)
	}
	form := doc.Find(`[data-testid=approval-card] [data-testid=decision-form]`)
	if form.Length() != 1 || doc.Find(`[data-testid=approval-card] [data-testid=pending-call] .tool-name`).Text() != "publish_page" {
		t.Fatal("after the restart the waiting run shows no approval card for publish_page")
	}
	vals := url.Values{"decision": {"approve"}}
	for _, name := range []string{"_csrf", "run_id", "digest"} {
		v, _ := form.Find(`input[name=` + name + `]`).Attr("value")
		if v == "" {
			t.Fatalf("the decision form has no %s", name)
		}
		vals.Set(name, v)
	}
	doc, final, status = httpPost(t, c, second.URL+"/tool/resume", vals)
	if status != http.StatusOK || final.Path != runURL {
		t.Fatalf("approve: status %d at %s, want 200 at %s", status, final.Path, runURL)
	}
	if got := doc.Find(`[data-testid=flash]`).Text(); !strings.Contains(got, "Approved") {
		t.Errorf("flash after approving %q", got)
	}
	doc = waitStatus(second.URL, "completed")
	var kinds []string
	doc.Find(`#steps [data-testid=step]`).Each(func(_ int, s *goquery.Selection) { kinds = append(kinds, s.AttrOr("data-kind", "")) })
	want := []string{"prompt", "model_turn", "suspended", "decision", "tool_started", "tool_finished", "model_turn", "finished"}
	if !slices.Equal(kinds, want) {
		t.Errorf("steps %v, want %v", kinds, want)
	}
}

// TestCommands runs the subcommands other than serve.
func TestCommands(t *testing.T) {
	t.Parallel()
	dbPath := filepath.Join(t.TempDir(), "cli.db")
	base := map[string]string{"COUNTERSIGN_DB": dbPath}
	cmd := func(t *testing.T, vars map[string]string, args ...string) (string, error) {
		t.Helper()
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"countersign"}, args...), envOf(vars), &out)
		return out.String(), err
	}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}

	out, err := cmd(t, base, "migrate")
	if err != nil || !regexp.MustCompile(`database .*cli\.db is at schema version [1-9]\d*\n`).MatchString(out) {
		t.Fatalf("migrate: %v, output %q", err, out)
	}

	out, err = cmd(t, with(map[string]string{"COUNTERSIGN_PASSWORD": "correct horse battery"}), "user", "add", "bob", "operator")
	if err != nil || out != "added bob (operator)\n" {
		t.Fatalf("user add bob operator: %v, output %q (a given password must not be printed)", err, out)
	}
	out, err = cmd(t, base, "user", "add", "carol", "viewer")
	if err != nil || !regexp.MustCompile(`^added carol \(viewer\)\npassword: \S{12,}\n$`).MatchString(out) {
		t.Fatalf("user add carol viewer without COUNTERSIGN_PASSWORD: %v, output %q (want a generated password)", err, out)
	}
	if _, err := cmd(t, with(map[string]string{"COUNTERSIGN_PASSWORD": "correct horse battery"}), "user", "add", "bob", "admin"); err == nil {
		t.Error("adding bob twice succeeded")
	}

	userLine := func(out, name string) []string {
		for line := range strings.Lines(out) {
			if f := strings.Fields(line); len(f) > 0 && f[0] == name {
				return f
			}
		}
		return nil
	}
	out, err = cmd(t, base, "user", "list")
	if err != nil {
		t.Fatalf("user list: %v", err)
	}
	if f := userLine(out, "bob"); len(f) != 4 || f[1] != "operator" || f[3] != "active" {
		t.Fatalf("user list shows bob as %q:\n%s", f, out)
	}
	if !strings.HasPrefix(out, "NAME") {
		t.Errorf("user list has no header:\n%s", out)
	}

	out, err = cmd(t, base, "user", "disable", "bob")
	if err != nil || out != "disabled bob\n" {
		t.Fatalf("user disable bob: %v, output %q", err, out)
	}
	out, _ = cmd(t, base, "user", "list")
	if f := userLine(out, "bob"); len(f) != 4 || f[3] != "disabled" {
		t.Errorf("after disabling, user list shows bob as %q:\n%s", f, out)
	}

	out, err = cmd(t, base, "help")
	if err != nil || !strings.HasPrefix(out, "usage: countersign") {
		t.Errorf("help: %v, output %q", err, out)
	}

	for _, tc := range []struct {
		name string
		vars map[string]string
		args []string
		want string // in the error
	}{
		{"unknown command", base, []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown user command", base, []string{"user", "rename", "bob"}, "unknown user command"},
		{"user without subcommand", base, []string{"user"}, "usage"},
		{"user add without role", base, []string{"user", "add", "dave"}, "usage"},
		{"user add bad role", with(map[string]string{"COUNTERSIGN_PASSWORD": "correct horse battery"}), []string{"user", "add", "dave", "root"}, "role"},
		{"disable unknown user", base, []string{"user", "disable", "nobody"}, `user "nobody"`},
		{"workers not a number", with(map[string]string{"COUNTERSIGN_WORKERS": "many"}), []string{"migrate"}, "COUNTERSIGN_WORKERS"},
		{"workers zero", with(map[string]string{"COUNTERSIGN_WORKERS": "0"}), []string{"serve"}, "COUNTERSIGN_WORKERS"},
		{"workers too many", with(map[string]string{"COUNTERSIGN_WORKERS": "257"}), []string{"serve"}, "COUNTERSIGN_WORKERS"},
		{"retention", with(map[string]string{"COUNTERSIGN_RETENTION": "-1h"}), []string{"serve"}, "COUNTERSIGN_RETENTION"},
		{"lease", with(map[string]string{"COUNTERSIGN_LEASE": "10ms"}), []string{"serve"}, "COUNTERSIGN_LEASE"},
		{"four eyes", with(map[string]string{"COUNTERSIGN_FOUR_EYES": "maybe"}), []string{"serve"}, "COUNTERSIGN_FOUR_EYES"},
		{"log level", with(map[string]string{"COUNTERSIGN_LOG_LEVEL": "loud"}), []string{"serve"}, "COUNTERSIGN_LOG_LEVEL"},
		{"short session key", with(map[string]string{"COUNTERSIGN_SESSION_KEY": "short", "COUNTERSIGN_ADDR": "127.0.0.1:0"}), []string{"serve"}, "COUNTERSIGN_SESSION_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := cmd(t, tc.vars, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run %v: error %v, want one containing %q (output %q)", tc.args, err, tc.want, out)
			}
			if strings.Contains(out, "listening") {
				t.Errorf("run %v served despite the error", tc.args)
			}
		})
	}
}

// TestServeFailsOnBusyAddress checks that a listen error comes back from
// run() instead of hanging.
func TestServeFailsOnBusyAddress(t *testing.T) {
	t.Parallel()
	srv := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	addr := strings.TrimPrefix(srv.URL, "http://")
	var out bytes.Buffer
	vars := map[string]string{"COUNTERSIGN_DB": filepath.Join(t.TempDir(), "b.db"), "COUNTERSIGN_ADDR": addr}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := run(ctx, []string{"countersign"}, envOf(vars), &out)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "listen on") {
		t.Fatalf("run() on a busy address: %v, want a listen error", err)
	}
}
