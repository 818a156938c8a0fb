package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"countersign/engine/models/demo"
)

// Accessibility in the browser: axe-core (a devDependency from the npm
// registry, pinned in package-lock.json and installed into node_modules by
// `make assets`) checks every page in its interesting states against the
// WCAG 2.x A and AA rules, and a walk with the Tab key checks that every
// control can be reached and used from the keyboard.
//
// axe is never served by the app: the test reads node_modules/axe-core/
// axe.min.js and evaluates it in the page through DevTools
// (Runtime.evaluate), which the page's Content-Security-Policy does not
// govern; the kit's console listener would fail the test on any CSP report.

// axePath is where `make assets` (npm ci) puts axe-core.
const axePath = "node_modules/axe-core/axe.min.js"

var axeScript struct {
	once sync.Once
	src  string
	err  error
}

// axeSource is the text of axe.min.js, read once.
func axeSource(t *testing.T) string {
	t.Helper()
	axeScript.once.Do(func() {
		b, err := os.ReadFile(axePath)
		if err != nil {
			axeScript.err = fmt.Errorf("the accessibility checks need axe-core at %s (%v); "+
				"run `make assets`, which installs the npm packages of package-lock.json", axePath, err)
			return
		}
		axeScript.src = string(b)
	})
	if axeScript.err != nil {
		t.Fatal(axeScript.err)
	}
	return axeScript.src
}

// axeTags are the rule sets axe runs: WCAG 2.0, 2.1 and 2.2 at levels A and
// AA.
var axeTags = []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22a", "wcag22aa"}

// axeViolation is one failed rule of an axe report, with the elements that
// fail it.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	URL    string `json:"helpUrl"`
	Nodes  []struct {
		Target  []string `json:"target"`
		Summary string   `json:"summary"`
	} `json:"nodes"`
}

// axeViolations injects axe into the current page (once per document) and
// returns the violations of impact serious or critical.
func (b *browser) axeViolations() []axeViolation {
	b.t.Helper()
	if !eval[bool](b, `typeof window.axe === "object"`) {
		b.do("inject axe-core", chromedp.Evaluate[chromedp.Void](axeSource(b.t)))
		if !eval[bool](b, `typeof window.axe === "object" && typeof axe.run === "function"`) {
			b.t.Fatal("axe-core did not load into the page")
		}
	}
	expr := `axe.run(document, {runOnly: {type: "tag", values: ` + jsList(axeTags) + `}, resultTypes: ["violations"]})
		.then(r => r.violations
			.filter(v => v.impact === "serious" || v.impact === "critical")
			.map(v => ({id: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl,
				nodes: v.nodes.map(n => ({target: n.target.map(String), summary: n.failureSummary || ""}))})))`
	vs, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]axeViolation](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("run axe: %v", err)
	}
	return vs
}

// checkA11y fails the test for every serious or critical axe violation on
// the current page, and for every control the keyboard cannot reach or use.
// where names the page and its state in the messages.
func (b *browser) checkA11y(where string) {
	b.t.Helper()
	for _, p := range b.a11yProblems(where) {
		b.t.Error(p)
	}
}

// a11yProblems lists the serious and critical axe violations of the current
// page (rule id, impact, help, the failing elements' selectors) and its
// keyboard problems.
func (b *browser) a11yProblems(where string) []string {
	b.t.Helper()
	var out []string
	for _, v := range b.axeViolations() {
		var targets []string
		for _, n := range v.Nodes {
			targets = append(targets, strings.Join(n.Target, " "))
		}
		summary := ""
		if len(v.Nodes) > 0 {
			summary = "\n\t\t" + strings.ReplaceAll(v.Nodes[0].Summary, "\n", "\n\t\t")
		}
		out = append(out, fmt.Sprintf("%s: axe %s (%s): %s\n\t%d element(s): %s%s\n\t%s",
			where, v.ID, v.Impact, v.Help, len(v.Nodes), strings.Join(targets, " | "), summary, v.URL))
	}
	return append(out, b.keyboardProblems(where)...)
}

// keyboardProblems checks the page's controls for keyboard use: no positive
// tabindex (it breaks the reading order), no click handler or click-triggered
// htmx request on an element that cannot take the focus, and every visible
// control reached by pressing Tab from the top of the page.
func (b *browser) keyboardProblems(where string) []string {
	b.t.Helper()
	var out []string
	type problem struct {
		What string `json:"what"`
		El   string `json:"el"`
	}
	// describe names an element for a message; visible tells whether it is
	// rendered; controls lists what the keyboard must reach.
	const lib = `
		const describe = el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
			(el.dataset.testid ? "[data-testid=" + el.dataset.testid + "]" : "") +
			" \"" + (el.textContent || el.value || "").trim().replace(/\s+/g, " ").slice(0, 40) + "\"";
		const visible = el => el.checkVisibility({visibilityProperty: true}) && el.getClientRects().length > 0;
		const native = "a[href], button, input:not([type=hidden]), select, textarea, summary";
		// The controls: every visible native control that is not disabled,
		// tabindex="-1" or not (that would take it out of the Tab order), and
		// any other element that asks to be in the Tab order.
		const controls = () => Array.from(document.querySelectorAll(native + ", [tabindex]"))
			.filter(el => !el.disabled && (el.matches(native) || el.tabIndex >= 0) && visible(el) && !el.closest("[inert]"));
		` + focusTopJS
	problems := eval[[]problem](b, `(() => {`+lib+`
		const out = [];
		for (const el of document.querySelectorAll("[tabindex]")) {
			if (el.tabIndex > 0) out.push({what: "positive tabindex " + el.tabIndex, el: describe(el)});
		}
		for (const el of document.querySelectorAll("[onclick], [hx-get], [hx-post], [hx-put], [hx-patch], [hx-delete]")) {
			if (el.matches(native + ", form") || el.tabIndex >= 0) continue;
			const trigger = el.getAttribute("hx-trigger");
			if (el.hasAttribute("onclick") || trigger === null || /\bclick\b/.test(trigger)) {
				out.push({what: "acts on a click but cannot take the focus", el: describe(el)});
			}
		}
		return out;
	})()`)
	for _, p := range problems {
		out = append(out, fmt.Sprintf("%s: keyboard: %s: %s", where, p.What, p.El))
	}

	// Number the controls, then press Tab from the top of the page, noting
	// each control it lands on, until all are reached or the focus has had
	// the time to go round the page twice (a poll that swaps part of the
	// page may drop the focus back to the top).
	n := eval[int](b, `(() => {`+lib+`
		for (const el of document.querySelectorAll("[data-a11y-index]")) delete el.dataset.a11yIndex;
		const cs = controls();
		focusTop();
		cs.forEach((el, i) => { el.dataset.a11yIndex = String(i); });
		window.__a11yReached = new Set();
		return cs.length;
	})()`)
	// missing lists the numbered controls not reached yet that are still on
	// the page. Tab stops at one radio button of a group (the arrow keys
	// move in it), so a group counts as reached with any of its buttons.
	const missing = `(() => {` + lib + `
		const reached = window.__a11yReached;
		const group = el => Array.prototype.indexOf.call(document.forms, el.form) + "/" + el.name;
		const groups = new Set();
		for (const el of document.querySelectorAll("[data-a11y-index]")) {
			if (reached.has(el.dataset.a11yIndex) && el.type === "radio") groups.add(group(el));
		}
		const out = [];
		for (const el of document.querySelectorAll("[data-a11y-index]")) {
			if (reached.has(el.dataset.a11yIndex) || !el.isConnected || !visible(el)) continue;
			if (el.type === "radio" && groups.has(group(el))) continue;
			out.push(describe(el));
		}
		return out;
	})()`
	for range 2*n + 10 {
		b.do("press Tab", chromedp.KeyEvent(kb.Tab))
		left := eval[int](b, `(() => {
			const el = document.activeElement;
			if (el?.dataset?.a11yIndex !== undefined) window.__a11yReached.add(el.dataset.a11yIndex);
			return `+missing+`.length;
		})()`)
		if left == 0 {
			break
		}
	}
	b.do("remove the starting point", chromedp.Evaluate[chromedp.Void](`document.getElementById("a11y-start")?.remove()`))
	missed := eval[[]string](b, missing)
	for _, m := range missed {
		out = append(out, fmt.Sprintf("%s: keyboard: Tab never reaches %s", where, m))
	}
	return out
}

// focusTopJS defines focusTop, which puts the focus on an element at the
// very start of the body that Tab skips (tabindex -1), so that the next Tab
// goes to the page's first control, as after a page load. Blurring would not
// do: the browser goes on from where the focus was.
const focusTopJS = `
	const focusTop = () => {
		let start = document.getElementById("a11y-start");
		if (!start) {
			start = document.createElement("span");
			start.id = "a11y-start";
			start.tabIndex = -1;
			document.body.prepend(start);
		}
		start.focus();
		window.scrollTo(0, 0);
	};`

// jsList quotes strings as a JavaScript array.
func jsList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = js(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// The accessibility tests visit every page in its interesting states, as the
// users who see them, and check each with axe and the Tab walk.

// TestAccessibilitySignIn checks the sign-in page, empty and with the error
// of a wrong password, and that the checks do catch what they look for.
func TestAccessibilitySignIn(t *testing.T) {
	t.Parallel()
	axeSource(t)
	srv := newServer(t)
	b := newLongBrowser(t)

	// axe runs under the page's CSP, which allows no inline or evaluated
	// script: DevTools' Runtime.evaluate is outside it, and a violation
	// report would show on the console, which fails the test.
	resp, err := http.Get(srv.URL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-") {
		t.Fatalf("the sign-in page's CSP is %q; the test is meant to show that axe runs under a strict one", csp)
	}
	b.navigate(srv.URL + "/login")
	b.checkA11y("sign-in")
	b.do("sign in with a wrong password",
		chromedp.SendKeys(chromedp.CSS(`[data-testid=login-form] input[name=name]`), "admin"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=login-form] input[name=password]`), "wrong"),
		chromedp.Click(chromedp.CSS(`[data-testid=login-submit]`)),
	)
	b.waitUntil("the sign-in error", `document.querySelector("[data-testid=login-error]")`)
	// The refusal answers 401, which the browser logs as a failed load.
	b.forgetProblems("status of 401 (Unauthorized) " + srv.URL + "/login")
	b.checkA11y("sign-in with a wrong password")

	// The checks themselves: an input without a label, faint text, a
	// clickable div and a positive tabindex must all be reported.
	b.do("break the page", chromedp.Evaluate[chromedp.Void](`(() => {
		const main = document.querySelector("main");
		const input = document.createElement("input");
		input.type = "text";
		const faint = document.createElement("p");
		faint.textContent = "faint";
		faint.style.color = "#d0d0d0";
		const div = document.createElement("div");
		div.textContent = "click me";
		div.setAttribute("hx-get", "/runs");
		const jump = document.createElement("button");
		jump.textContent = "first";
		jump.tabIndex = 3;
		const away = document.createElement("a");
		away.href = "/runs";
		away.textContent = "out of reach";
		away.tabIndex = -1;
		main.append(input, faint, div, jump, away);
	})()`))
	got := strings.Join(b.a11yProblems("broken page"), "\n")
	for _, want := range []string{"axe label (critical)", "axe color-contrast (serious)",
		`acts on a click but cannot take the focus: div "click me"`, `positive tabindex 3: button "first"`, `Tab never reaches a "out of reach"`} {
		if !strings.Contains(got, want) {
			t.Errorf("the checks missed %q on a page broken on purpose; they reported:\n%s", want, got)
		}
	}
}

// TestAccessibilityRunPages checks the playground, a run waiting for a
// decision (as the operator and as a viewer), the inbox with a waiting turn
// and empty, and finished runs; and decides two turns with the keyboard
// alone: Enter on Approve, Space on Deny, each reached with Tab.
func TestAccessibilityRunPages(t *testing.T) {
	t.Parallel()
	axeSource(t)
	srv := newServer(t)
	op := newOperator(t, srv.URL, "admin", srv.Password)
	viewerPassword := addUser(t, op.c, srv.URL, "vera", "viewer")

	b := newLongBrowser(t)
	b.signIn(srv.URL, "admin", srv.Password)
	b.checkA11y("playground")

	// A mixed turn: a read held with a write, with a preview.
	runURL := b.startExampleURL("Check the word count of the release notes and publish them.")
	b.waitForMixedCard()
	b.checkA11y("run waiting for approval")

	b.navigate(srv.URL + "/inbox")
	b.waitUntil("the inbox badge to count the waiting run", `document.querySelector("[data-testid=inbox-badge]")?.textContent.trim() === "1"`)
	b.checkA11y("inbox with a waiting turn")

	// The same in the dark colour scheme.
	b.preferScheme("dark")
	b.checkA11y("inbox with a waiting turn (dark)")
	for _, p := range []struct{ where, path string }{{"playground (dark)", "/runs/new"}, {"run waiting for approval (dark)", runURL}} {
		b.navigate(srv.URL + p.path)
		b.checkA11y(p.where)
	}
	b.preferScheme("light")

	v := newLongBrowser(t)
	v.signInAs(srv.URL, "vera", viewerPassword)
	v.navigate(srv.URL + runURL)
	v.waitUntil("the waiting run", `document.querySelector("[data-testid=run-status]")?.dataset.status === "waiting_for_approval"`)
	v.checkA11y("run waiting for approval, as a viewer")

	// Decide with the keyboard alone: Tab from the top of the page to
	// Approve, then press Enter.
	b.navigate(srv.URL + runURL)
	b.waitForMixedCard()
	b.tabTo(approveSel)
	b.do("press Enter on Approve", chromedp.KeyEvent(kb.Enter))
	b.waitForRunStatus("completed")
	if got := b.text(`[data-testid=decision]`); !strings.Contains(got, "admin") {
		t.Errorf("after Enter on Approve the decision step reads %q, want a decision by admin", got)
	}
	b.checkA11y("finished run")

	// And Space on Deny.
	b.navigate(srv.URL + "/runs/new")
	b.startExample("Delete the old announcement page.")
	b.waitForCard("delete_page")
	b.tabTo(denySel)
	b.do("press Space on Deny", chromedp.KeyEvent(" "))
	b.waitForRunStatus("completed")
	if got := eval[string](b, `document.querySelector("[data-testid=decision]")?.dataset.decision ?? ""`); got != "deny" {
		t.Errorf("after Space on Deny the decision is %q, want deny", got)
	}
	b.checkA11y("finished run with a denied write")

	b.navigate(srv.URL + "/inbox")
	b.checkA11y("empty inbox")
}

// TestAccessibilityAdminPages checks the history (with runs, and filtered),
// the users and grants pages and an error page, in the light and the dark
// colour scheme.
func TestAccessibilityAdminPages(t *testing.T) {
	t.Parallel()
	axeSource(t)
	srv := newServer(t)
	op := newOperator(t, srv.URL, "admin", srv.Password)
	addWebhookEndpoint(t, op.c, srv.URL, "http://127.0.0.1:9/hooks") // refused: deliveries pending with an error
	op.decide(op.start("editor", "Publish the about page."), "approve")
	op.decide(op.start("editor", "Delete the old announcement page."), "deny")
	op.start("editor", "Publish the release notes.")
	op.wait(op.start("researcher", "List all pages."), "completed")
	addUser(t, op.c, srv.URL, "olga", "operator")

	b := newLongBrowser(t)
	b.signIn(srv.URL, "admin", srv.Password)
	pages := []struct{ where, path string }{
		{"history", "/runs"},
		{"history with a filter", "/runs?" + url.Values{"q": {"page"}, "status": {"completed"}, "agent": {"editor"}}.Encode()},
		{"users", "/users"},
		{"grants", "/grants"},
		{"webhooks", "/webhooks"},
		{"API tokens", "/tokens"},
	}
	for _, scheme := range []string{"light", "dark"} {
		b.preferScheme(scheme)
		for _, p := range pages {
			b.navigate(srv.URL + p.path)
			if n := b.count(`[data-testid=run-row]`); strings.HasPrefix(p.path, "/runs") && n < 2 {
				t.Errorf("%s lists %d runs, want at least 2", p.where, n)
			}
			b.checkA11y(p.where + " (" + scheme + ")")
		}
		b.do("open a missing run", chromedp.Navigate(srv.URL+"/runs/01NOSUCHRUN0000000000000000"))
		if b.count(`[data-testid=error-page]`) != 1 {
			t.Fatalf("a missing run shows no error page\npage:\n%s", b.pageText())
		}
		b.forgetProblems("status of 404 (Not Found) " + srv.URL + "/runs/01NOSUCHRUN")
		b.checkA11y("error page, 404 (" + scheme + ")")
	}
}

// startExampleURL starts an example of the editor agent and returns the run
// page's path.
func (b *browser) startExampleURL(prompt string) string {
	b.t.Helper()
	return "/runs/" + b.startExample(prompt)
}

// tabTo presses Tab from the top of the page until the element matching sel
// has the focus, and fails if it never does.
func (b *browser) tabTo(sel string) {
	b.t.Helper()
	b.do("start at the top", chromedp.Evaluate[chromedp.Void](`(() => {`+focusTopJS+` focusTop(); })()`))
	for range 200 {
		b.do("press Tab", chromedp.KeyEvent(kb.Tab))
		if eval[bool](b, `document.activeElement === document.querySelector(`+js(sel)+`)`) {
			return
		}
	}
	b.t.Fatalf("200 presses of Tab never reached %s", sel)
}

// signInAs signs in through the login form as any user.
func (b *browser) signInAs(base, name, password string) {
	b.t.Helper()
	b.navigate(base + "/login")
	b.do("fill in the sign-in form",
		chromedp.SendKeys(chromedp.CSS(`[data-testid=login-form] input[name=name]`), name),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=login-form] input[name=password]`), password),
	)
	b.load("sign in as "+name, chromedp.Click(chromedp.CSS(`[data-testid=login-submit]`)))
	if got := b.text(`[data-testid=nav-user]`); got != name {
		b.t.Fatalf("nav shows user %q, want %q", got, name)
	}
}

// addUser creates a user through the users page as the admin signed in on
// c, with a password of its own, and returns that password.
func addUser(t *testing.T, c *http.Client, base, name, role string) string {
	t.Helper()
	password := name + "-password-1"
	doc, _, _ := httpGet(t, c, base+"/users")
	csrf := doc.Find(`[data-testid=add-user] input[name=_csrf]`).AttrOr("value", "")
	if csrf == "" {
		t.Fatal("the add-user form has no CSRF token")
	}
	doc, _, status := httpPost(t, c, base+"/users", url.Values{"_csrf": {csrf}, "name": {name}, "password": {password}, "role": {role}})
	found := false
	doc.Find(`[data-testid=user-row]`).Each(func(_ int, s *goquery.Selection) {
		if strings.TrimSpace(s.Find(`[data-testid=user-name]`).Text()) == name {
			found = true
		}
	})
	if status != http.StatusOK || !found {
		t.Fatalf("add user %s: status %d, and the users page does not list them", name, status)
	}
	return password
}

// waitForMixedCard waits for the approval card of the demo's mixed turn: a
// word_count (a read) held with a publish_page (a write) of the release
// notes, the write with its preview.
func (b *browser) waitForMixedCard() {
	b.t.Helper()
	b.waitUntil("the approval card with an Approve button", `document.querySelector(`+js(approveSel)+`)`)
	tools := eval[[]string](b, `Array.from(document.querySelectorAll(`+js(cardSel+` [data-testid=pending-call] .tool-name`)+`), e => e.textContent.trim())`)
	if strings.Join(tools, " ") != "word_count publish_page" {
		b.t.Fatalf("the approval card holds %v, want word_count and publish_page", tools)
	}
	if b.text(cardSel+` [data-testid=preview]`) == "" {
		b.t.Fatal("the approval card shows no preview of the publish")
	}
}

// forgetProblems drops the console problems so far that contain s: ones
// the test provoked on purpose.
func (b *browser) forgetProblems(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	kept := b.problems[:0]
	for _, p := range b.problems {
		if !strings.Contains(p, s) {
			kept = append(kept, p)
		}
	}
	b.problems = kept
}

// TestPlaygroundModelsReadable checks the model picker of the playground at
// 1024 and 1280 pixels: every model's name and whole description are shown,
// inside the form, and the page does not scroll sideways.
func TestPlaygroundModelsReadable(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	b := newBrowser(t)
	b.signIn(srv.URL, "admin", srv.Password)
	for _, width := range []int64{1024, 1280} {
		b.do(fmt.Sprintf("set the viewport to %d px", width), chromedp.EmulateViewport(width, 800))
		b.navigate(srv.URL + "/runs/new")
		type model struct {
			Name, Desc string
			Fits       bool
		}
		models := eval[[]model](b, `Array.from(document.querySelectorAll("[data-testid=model-option]"), o => {
			const form = o.closest("form").getBoundingClientRect();
			const inside = el => { const r = el.getBoundingClientRect();
				return r.width > 0 && r.left >= form.left && r.right <= form.right && el.scrollWidth <= el.clientWidth; };
			const name = o.querySelector(".model-name"), desc = o.querySelector("[data-testid=model-desc]");
			return {Name: name.textContent, Desc: desc ? desc.textContent : "",
				Fits: inside(name) && (!desc || inside(desc)) && o.querySelector("input[type=radio]") !== null};
		})`)
		if len(models) != 1 || models[0].Name != demo.Name || models[0].Desc != demo.Description {
			t.Errorf("at %d px the playground offers %+v, want the demo model with its whole description", width, models)
		}
		for _, m := range models {
			if !m.Fits {
				t.Errorf("at %d px the model %s or its description is cut off or outside the form", width, m.Name)
			}
		}
		if eval[bool](b, `document.documentElement.scrollWidth > window.innerWidth`) {
			t.Errorf("at %d px the playground scrolls sideways", width)
		}
		if got := eval[string](b, `document.querySelector("input[name=model]:checked")?.value ?? ""`); got != demo.Name {
			t.Errorf("at %d px the model chosen at first is %q, want %q", width, got, demo.Name)
		}
	}
	// The radio button starts a run with its model.
	b.do("write a prompt", chromedp.SendKeys(chromedp.CSS(`[data-testid=prompt]`), "List all pages."))
	b.load("start the run", chromedp.Click(chromedp.CSS(`[data-testid=start-run]`)))
	b.onRunPage()
	if got := b.text(`[data-testid=run-model]`); got != demo.Name {
		t.Errorf("the run uses the model %q, want %q", got, demo.Name)
	}
}

// waitForRunStatus waits until the run page's status badge has the status,
// whatever its words.
func (b *browser) waitForRunStatus(status string) {
	b.t.Helper()
	b.waitUntil("status "+status, `document.querySelector("[data-testid=run-status]")?.dataset.status === `+js(status))
}

// preferScheme makes the pages prefer the light or the dark colour scheme
// (app.css has a palette for each).
func (b *browser) preferScheme(scheme string) {
	b.t.Helper()
	b.do("prefer the "+scheme+" colour scheme", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return err
	}))
	if dark := eval[bool](b, `matchMedia("(prefers-color-scheme: dark)").matches`); dark != (scheme == "dark") {
		b.t.Fatalf("the page prefers dark: %v, want the %s scheme", dark, scheme)
	}
}

// a11yTimeout bounds a browser of the accessibility and screenshot tests,
// which visit many pages and press Tab through each: more than the kit's
// browserTimeout for one flow.
const a11yTimeout = 3 * time.Minute

// newLongBrowser is newBrowser with a11yTimeout for the whole test.
func newLongBrowser(t *testing.T) *browser {
	t.Helper()
	b := newBrowser(t)
	ctx, cancel := context.WithTimeout(b.tab, a11yTimeout)
	t.Cleanup(cancel)
	b.ctx = ctx
	return b
}
