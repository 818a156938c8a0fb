package views

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
)

const xss = `<script>alert(1)</script>`

func render(t *testing.T, c templ.Component) (*goquery.Document, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatalf("render: %v", err)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return doc, buf.String()
}

func count(doc *goquery.Document, sel string) int { return doc.Find(sel).Length() }

func testid(id string) string { return `[data-testid="` + id + `"]` }

func layout(role string) Layout {
	l := Layout{Title: "T", CSRF: "tok", CSS: "/static/app.1.css", JS: "/static/app.2.js", HTMX: "/static/vendor/htmx.min.3.js"}
	if role != "" {
		l.User = &User{Name: "ann", Role: role, CanOperate: role == "operator" || role == "admin", IsAdmin: role == "admin"}
	}
	return l
}

// noInjectedScript fails if any script element other than the layout's own
// (which all have a src) made it into the document.
func noInjectedScript(t *testing.T, doc *goquery.Document) {
	t.Helper()
	doc.Find("script").Each(func(_ int, s *goquery.Selection) {
		if _, ok := s.Attr("src"); !ok {
			t.Errorf("injected script element: %q", s.Text())
		}
	})
}

func hostileRun() RunView {
	return RunView{
		Run: RunHeader{ID: "r1", Agent: xss, Model: xss, Status: "waiting_for_approval", InitiatedBy: xss, Error: xss},
		Steps: []Step{
			{Seq: 1, Kind: "prompt", Text: xss},
			{Seq: 2, Kind: "model_turn", Text: xss, ToolCalls: []ToolCallView{{ID: "c1", Name: xss, ArgsPretty: `{"x": "` + xss + `"}`}}},
			{Seq: 3, Kind: "tool_started", Tool: xss, Write: true},
			{Seq: 4, Kind: "tool_finished", Tool: "read", Result: xss, IsError: true},
			{Seq: 5, Kind: "tool_finished", Tool: "read", Result: strings.Repeat(xss, 100)},
			{Seq: 6, Kind: "suspended", Pending: []ToolCallView{{ID: "c2", Name: "update", ArgsPretty: xss}},
				Previews: []PreviewView{{CallID: "c2", Lines: []string{"+" + xss}}}},
			{Seq: 7, Kind: "decision", Decision: "deny", By: xss, Reason: xss},
			{Seq: 8, Kind: "finished", Text: xss, Totals: xss},
			{Seq: 9, Kind: "failed", Termination: "tool_error", Error: xss},
		},
		LastSeq: 9,
		Card: &ApprovalCard{RunID: "r1", Digest: "d1", CSRF: "tok", CanDecide: true, CanApprove: true, Note: xss, Error: xss,
			Calls: []PendingCall{{ID: "c2", Tool: xss, ArgsPretty: xss, Preview: []string{"-" + xss}}}},
		CanDecide: true, CanCancel: true,
	}
}

func TestEscaping(t *testing.T) {
	l := layout("admin")
	l.Flash = &Flash{Kind: "error", Text: xss}
	l.User.Name = xss
	pages := map[string]templ.Component{
		"run":     RunPage(l, hostileRun()),
		"new run": NewRunPage(l, NewRunView{Agents: []AgentOption{{Name: "a", Title: xss, Description: xss, Examples: []string{xss}}}, Prompt: xss, Error: xss}),
		"inbox": InboxPage(l, InboxView{Items: []InboxItem{{RunID: "r1", Agent: xss, InitiatedBy: xss, Prompt: xss,
			Calls: []InboxCall{{PendingCall: PendingCall{ID: "c1", Tool: xss, ArgsPretty: xss, Preview: []string{xss}}, Short: xss}}}}}),
		"history": HistoryPage(l, HistoryView{Rows: []HistoryRow{{ID: "r1", Prompt: xss, Agent: xss}}, Filter: HistoryFilter{Q: xss}}),
		"users":   UsersPage(l, UsersView{Users: []UserRow{{ID: 1, Name: xss, Role: "admin"}}, Error: xss}),
		"login":   LoginPage(layout(""), LoginView{Name: xss, Error: xss, Next: xss}),
		"error":   ErrorPage(l, ErrorView{Status: 500, Title: xss, Message: xss}),
		"steps": StepsFragment(StepsUpdate{RunID: "r1", Steps: hostileRun().Steps, Header: hostileRun().Run,
			Card: hostileRun().Card, Polling: true}),
		"error fragment": ErrorFragment(ErrorView{Status: 400, Title: xss, Message: xss}),
	}
	for name, c := range pages {
		t.Run(name, func(t *testing.T) {
			doc, raw := render(t, c)
			noInjectedScript(t, doc)
			if strings.Contains(raw, xss) {
				t.Error("raw script tag in output")
			}
			if !strings.Contains(doc.Text(), xss) && name != "login" {
				t.Error("the hostile text is not shown as text")
			}
		})
	}
}

func TestRunPage(t *testing.T) {
	doc, _ := render(t, RunPage(layout("operator"), hostileRun()))
	if got := doc.Find(testid("run-status")).AttrOr("data-status", ""); got != "waiting_for_approval" {
		t.Errorf("run-status = %q", got)
	}
	if count(doc, "#run-header"+testid("run-header")) != 1 {
		t.Error("no run header")
	}
	steps := doc.Find("ol#steps" + testid("steps") + " > li" + testid("step"))
	if steps.Length() != 9 {
		t.Fatalf("%d steps", steps.Length())
	}
	if id, kind := steps.First().AttrOr("id", ""), steps.First().AttrOr("data-kind", ""); id != "step-1" || kind != "prompt" {
		t.Errorf("first step id=%q kind=%q", id, kind)
	}
	if count(doc, testid("write-mark")) != 1 {
		t.Error("approved write not marked")
	}
	// Long results fold; short ones do not; errors are styled.
	if count(doc, "#step-5 details "+testid("tool-result")) != 1 || count(doc, "#step-4 details") != 0 {
		t.Error("long result not folded, or short one folded")
	}
	if !doc.Find("#step-4 " + testid("tool-result")).HasClass("result-error") {
		t.Error("error result not styled")
	}
	cancel := doc.Find("form" + testid("cancel-run"))
	if cancel.AttrOr("action", "") != "/runs/r1/cancel" || cancel.AttrOr("method", "") != "post" ||
		cancel.Find(`input[name="_csrf"]`).AttrOr("value", "") != "tok" {
		t.Error("cancel form wrong")
	}
	if count(doc, "#steps ~ #poller") != 1 || count(doc, "#approval-card"+testid("approval-card")) != 1 {
		t.Error("poller or card missing")
	}

	v := hostileRun()
	v.CanCancel = false
	v.Card = nil
	doc, _ = render(t, RunPage(layout("viewer"), v))
	if count(doc, testid("cancel-run")) != 0 || count(doc, testid("approval-card")) != 0 || count(doc, "section#approval-card") != 1 {
		t.Error("cancel form or card shown")
	}
}

func TestStepOutcomes(t *testing.T) {
	for outcome, label := range map[string]string{"denied": "denied", "not_permitted": "not permitted", "bad_arguments": "bad arguments", "unknown_tool": "unknown tool"} {
		doc, _ := render(t, StepItem(Step{Seq: 1, Kind: "tool_finished", Tool: "x", Outcome: outcome, Result: "r", IsError: true}))
		if got := doc.Find(testid("outcome")).Text(); got != label {
			t.Errorf("outcome %s: label %q", outcome, got)
		}
	}
	doc, _ := render(t, StepItem(Step{Seq: 1, Kind: "tool_finished", Tool: "x", Outcome: "ok", Result: "r"}))
	if count(doc, testid("outcome")) != 0 {
		t.Error("ok has an outcome label")
	}
	doc, _ = render(t, StepItem(Step{Seq: 3, Kind: "suspended", Pending: []ToolCallView{{Name: "a"}, {Name: "b"}}}))
	if !strings.Contains(doc.Text(), "Waiting for approval of 2 calls") {
		t.Errorf("suspended text: %q", doc.Text())
	}
	doc, _ = render(t, StepItem(Step{Seq: 4, Kind: "decision", Decision: "approve", By: "bob", Reason: "fine"}))
	if doc.Find(testid("decision")).AttrOr("data-decision", "") != "approve" || !strings.Contains(doc.Text(), "Approved by bob") {
		t.Errorf("decision text: %q", doc.Text())
	}
}

func TestApprovalCard(t *testing.T) {
	card := ApprovalCard{RunID: "r1", Digest: "d1", CSRF: "tok", CanDecide: true, CanApprove: true,
		Calls: []PendingCall{{ID: "c1", Tool: "update_page", ArgsPretty: "{}", Preview: []string{"--- a", "+++ b", "@@ -1 +1 @@", "-old", "+new", " same"}}}}
	doc, _ := render(t, ApprovalCardOrEmpty(&card))
	sec := doc.Find("section#approval-card" + testid("approval-card"))
	if sec.Length() != 1 {
		t.Fatal("no card")
	}
	form := sec.Find("form")
	if form.AttrOr("method", "") != "post" || form.AttrOr("action", "") != "/tool/resume" ||
		form.AttrOr("hx-post", "") != "/tool/resume" || form.AttrOr("hx-target", "") != "#approval-card" || form.AttrOr("hx-swap", "") != "outerHTML" {
		t.Error("form attributes wrong")
	}
	for name, want := range map[string]string{"run_id": "r1", "digest": "d1", "_csrf": "tok"} {
		if got := form.Find(`input[type="hidden"][name="`+name+`"]`).AttrOr("value", ""); got != want {
			t.Errorf("hidden %s = %q", name, got)
		}
	}
	if ta := form.Find(`textarea[name="reason"]`); ta.AttrOr("maxlength", "") != "2000" {
		t.Error("reason textarea missing")
	}
	approve, deny := form.Find(`button`+testid("approve")), form.Find(`button`+testid("deny"))
	if approve.AttrOr("name", "") != "decision" || approve.AttrOr("value", "") != "approve" || approve.AttrOr("type", "") != "submit" {
		t.Error("approve button wrong")
	}
	if _, disabled := approve.Attr("disabled"); disabled {
		t.Error("approve disabled")
	}
	if deny.AttrOr("name", "") != "decision" || deny.AttrOr("value", "") != "deny" {
		t.Error("deny button wrong")
	}

	// Diff lines are classed by their first character.
	lines := sec.Find(testid("preview") + " > div")
	wantClass := []string{"diff-del", "diff-add", "diff-hunk", "diff-del", "diff-add", ""}
	if lines.Length() != len(wantClass) {
		t.Fatalf("%d preview lines", lines.Length())
	}
	lines.Each(func(i int, s *goquery.Selection) {
		for _, c := range []string{"diff-add", "diff-del", "diff-hunk"} {
			if s.HasClass(c) != (c == wantClass[i]) {
				t.Errorf("line %d %q: class %q", i, s.Text(), s.AttrOr("class", ""))
			}
		}
	})

	// Four-eyes: approve is there but disabled, with the note.
	card.CanApprove = false
	card.Note = "another operator must approve"
	doc, _ = render(t, ApprovalCardOrEmpty(&card))
	if _, disabled := doc.Find(testid("approve")).Attr("disabled"); !disabled {
		t.Error("approve not disabled under four-eyes")
	}
	if doc.Find(testid("card-note")).Text() != card.Note || count(doc, testid("deny")) != 1 {
		t.Error("note or deny missing")
	}

	// Viewers see it read-only.
	card.CanDecide = false
	doc, _ = render(t, ApprovalCardOrEmpty(&card))
	if count(doc, testid("approval-card")) != 1 || count(doc, "form") != 0 || count(doc, "button") != 0 || count(doc, "input") != 0 {
		t.Error("read-only card has a form")
	}

	doc, raw := render(t, ApprovalCardOrEmpty(nil))
	if count(doc, "section#approval-card") != 1 || count(doc, testid("approval-card")) != 0 || strings.Contains(raw, "hx-swap-oob") {
		t.Errorf("empty card: %s", raw)
	}
}

func TestPoller(t *testing.T) {
	doc, _ := render(t, Poller("r 1", 7, true))
	p := doc.Find("#poller" + testid("poller"))
	if p.AttrOr("hx-get", "") != "/runs/r%201/steps?after=7" || p.AttrOr("hx-trigger", "") != "every 1s" || p.AttrOr("hx-swap", "") != "outerHTML" {
		t.Errorf("active poller: hx-get=%q", p.AttrOr("hx-get", ""))
	}
	doc, _ = render(t, Poller("r1", 7, false))
	p = doc.Find("#poller" + testid("poller"))
	if p.Length() != 1 {
		t.Fatal("no poller")
	}
	for _, a := range []string{"hx-get", "hx-trigger", "hx-swap", "hx-swap-oob"} {
		if _, ok := p.Attr(a); ok {
			t.Errorf("inactive poller has %s", a)
		}
	}
}

func TestStepsFragment(t *testing.T) {
	card := &ApprovalCard{RunID: "r1", Digest: "d", CanDecide: true, CanApprove: true, Calls: []PendingCall{{ID: "c", Tool: "t"}}}
	doc, _ := render(t, StepsFragment(StepsUpdate{
		RunID: "r1", After: 3,
		Steps:  []Step{{Seq: 4, Kind: "model_turn", Text: "hi"}, {Seq: 5, Kind: "suspended"}},
		Header: RunHeader{ID: "r1", Status: "waiting_for_approval"},
		Card:   card, Polling: false, InboxCount: 2,
	}))
	oob := doc.Find(`ol[hx-swap-oob="beforeend:#steps"]`)
	if oob.Find("li"+testid("step")).Length() != 2 || oob.Find("li#step-5").Length() != 1 {
		t.Error("steps not appended out of band")
	}
	if doc.Find(`#run-header[hx-swap-oob="outerHTML"]`+" "+testid("run-status")).AttrOr("data-status", "") != "waiting_for_approval" {
		t.Error("header not swapped out of band")
	}
	if count(doc, `#approval-card[hx-swap-oob="outerHTML"]`+testid("approval-card")) != 1 {
		t.Error("card not swapped out of band")
	}
	if doc.Find(`#inbox-badge[hx-swap-oob="outerHTML"]`).Text() != "2" {
		t.Error("badge not swapped out of band")
	}
	p := doc.Find("#poller")
	if p.Length() != 1 {
		t.Fatal("no poller")
	}
	if _, ok := p.Attr("hx-swap-oob"); ok {
		t.Error("poller is out of band; it must be the main content")
	}
	if _, ok := p.Attr("hx-get"); ok {
		t.Error("poller still polls while the run waits")
	}

	// Still running, nothing new: no step wrapper, empty card, polling on from After.
	doc, _ = render(t, StepsFragment(StepsUpdate{RunID: "r1", After: 5, Header: RunHeader{ID: "r1", Status: "running"}, Polling: true}))
	if count(doc, "[hx-swap-oob^=beforeend]") != 0 {
		t.Error("empty step wrapper")
	}
	if count(doc, `section#approval-card[hx-swap-oob="outerHTML"]`) != 1 || count(doc, testid("approval-card")) != 0 {
		t.Error("card not cleared")
	}
	if got := doc.Find("#poller").AttrOr("hx-get", ""); got != "/runs/r1/steps?after=5" {
		t.Errorf("poller hx-get = %q", got)
	}
}

func TestDecisionFragment(t *testing.T) {
	doc, _ := render(t, DecisionFragment("r1", Flash{Kind: "ok", Text: "Approved."}, nil, 6))
	if count(doc, "section#approval-card") != 1 || count(doc, testid("approval-card")) != 0 {
		t.Error("card not emptied")
	}
	if _, ok := doc.Find("section#approval-card").Attr("hx-swap-oob"); ok {
		t.Error("card is out of band; it is the form's target")
	}
	if doc.Find(`#flash[hx-swap-oob="outerHTML"] `+testid("flash")).Text() != "Approved." {
		t.Error("flash not swapped out of band")
	}
	p := doc.Find(`#poller[hx-swap-oob="outerHTML"]`)
	if p.AttrOr("hx-get", "") != "/runs/r1/steps?after=6" || p.AttrOr("hx-trigger", "") != "every 1s" {
		t.Error("polling not restarted")
	}

	card := &ApprovalCard{RunID: "r1", Digest: "d 1", Error: "This turn was already decided.", CanDecide: true}
	doc, _ = render(t, DecisionFragment("r1", Flash{Kind: "error", Text: "Stale."}, card, 6))
	if doc.Find(testid("card-error")).Text() != card.Error {
		t.Error("card error missing")
	}
	// While a card shows, the poll is the slow one that asks about its turn.
	p = doc.Find("#poller")
	if p.AttrOr("hx-get", "") != "/runs/r1/steps?after=6&turn=d+1" || p.AttrOr("hx-trigger", "") != "every 2s" {
		t.Errorf("poller with a card: hx-get=%q trigger=%q", p.AttrOr("hx-get", ""), p.AttrOr("hx-trigger", ""))
	}
}

func TestNav(t *testing.T) {
	tests := []struct {
		role              string
		playground, users bool
	}{
		{"viewer", false, false},
		{"operator", true, false},
		{"admin", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			l := layout(tt.role)
			l.InboxCount = 3
			l.Active = "runs"
			doc, _ := render(t, InboxPage(l, InboxView{}))
			if got := count(doc, testid("nav-playground")) == 1; got != tt.playground {
				t.Errorf("playground shown = %v", got)
			}
			if got := count(doc, testid("nav-users")) == 1; got != tt.users {
				t.Errorf("users shown = %v", got)
			}
			if doc.Find(testid("nav-runs")).AttrOr("aria-current", "") != "page" {
				t.Error("active link not marked")
			}
			b := doc.Find(testid("nav-inbox") + " " + testid("inbox-badge"))
			if b.Text() != "3" || b.AttrOr("hx-get", "") != "/inbox/count" || b.AttrOr("hx-trigger", "") != "every 5s" || b.AttrOr("hx-swap", "") != "outerHTML" {
				t.Error("inbox badge wrong")
			}
			logout := doc.Find("form" + testid("logout"))
			if logout.AttrOr("action", "") != "/logout" || logout.Find(`input[name="_csrf"]`).AttrOr("value", "") != "tok" {
				t.Error("logout form wrong")
			}
			if doc.Find(testid("nav-user")).Text() != "ann" {
				t.Error("user name missing")
			}
		})
	}

	doc, _ := render(t, LoginPage(layout(""), LoginView{Next: "/inbox"}))
	if count(doc, testid("nav-runs")) != 0 || count(doc, testid("logout")) != 0 {
		t.Error("nav links shown signed out")
	}
	form := doc.Find("form" + testid("login-form"))
	if form.AttrOr("action", "") != "/login" || form.Find(`input[name="next"]`).AttrOr("value", "") != "/inbox" ||
		form.Find(`input[name="_csrf"]`).Length() != 1 || form.Find(`input[name="password"][type="password"]`).Length() != 1 {
		t.Error("login form wrong")
	}
}

func TestInboxBadgeAlone(t *testing.T) {
	doc, raw := render(t, InboxBadge(0))
	if doc.Find("#inbox-badge").Text() != "0" || strings.Contains(raw, "hx-swap-oob") {
		t.Errorf("badge: %s", raw)
	}
}

func TestAssetsInLayout(t *testing.T) {
	doc, _ := render(t, InboxPage(layout("viewer"), InboxView{}))
	if count(doc, `script[src="/static/vendor/htmx.min.3.js"]`) != 1 || count(doc, `link[href="/static/app.1.css"]`) != 1 {
		t.Error("asset tags missing")
	}
	l := layout("viewer")
	l.HTMX = ""
	doc, _ = render(t, InboxPage(l, InboxView{}))
	if count(doc, "script") != 1 {
		t.Error("htmx script tag present without htmx")
	}
	if count(doc, "#flash") != 1 {
		t.Error("no flash area")
	}
}

func TestNewRunPage(t *testing.T) {
	v := NewRunView{
		Agents: []AgentOption{{Name: "editor", Title: "Editor", Examples: []string{"Fix the typo", "Add a page"}, SecondApprover: true}, {Name: "reader"}},
		Models: []ModelOption{{Name: "demo"}, {Name: "gpt"}},
		Agent:  "reader", Model: "gpt", Prompt: "hello",
	}
	doc, _ := render(t, NewRunPage(layout("operator"), v))
	form := doc.Find("form" + testid("new-run-form"))
	if form.AttrOr("action", "") != "/runs" || form.Find(`textarea[name="prompt"]`).AttrOr("maxlength", "") != "8000" ||
		form.Find(`textarea[name="prompt"]`).Text() != "hello" || form.Find(testid("start-run")).Length() != 1 {
		t.Error("new run form wrong")
	}
	if form.Find(`select[name="agent"] option[selected]`).AttrOr("value", "") != "reader" ||
		form.Find(`input[type=radio][name="model"][checked]`).AttrOr("value", "") != "gpt" {
		t.Error("selection not kept")
	}
	ex := doc.Find(testid("example"))
	if ex.Length() != 2 {
		t.Fatalf("%d examples", ex.Length())
	}
	f := ex.First().Closest("form")
	for name, want := range map[string]string{"agent": "editor", "model": "gpt", "prompt": "Fix the typo", "_csrf": "tok"} {
		if got := f.Find(`input[name="`+name+`"]`).AttrOr("value", ""); got != want {
			t.Errorf("example %s = %q", name, got)
		}
	}
	if f.AttrOr("method", "") != "post" || f.AttrOr("action", "") != "/runs" {
		t.Error("example does not post")
	}
	if count(doc, testid("second-approver")) != 1 || count(doc, testid("intro")) != 1 {
		t.Error("intro or four-eyes note missing")
	}
}

func TestHistoryPage(t *testing.T) {
	v := HistoryView{
		Rows:     []HistoryRow{{ID: "r1", Status: "completed"}, {ID: "r2", Status: "failed"}},
		Filter:   HistoryFilter{Status: "failed", Q: "typo"},
		Statuses: []string{"completed", "failed"},
		Total:    42, NextURL: "/runs?before=r2",
	}
	doc, _ := render(t, HistoryPage(layout("viewer"), v))
	if doc.Find(testid("match-count")).Text() != "42 runs match" {
		t.Errorf("match count %q", doc.Find(testid("match-count")).Text())
	}
	rows := doc.Find("tr" + testid("run-row"))
	if rows.Length() != 2 || rows.First().Find(`a[href="/runs/r1"]`).Length() != 1 {
		t.Error("rows wrong")
	}
	if doc.Find(testid("next-page")).AttrOr("href", "") != "/runs?before=r2" {
		t.Error("next page link wrong")
	}
	f := doc.Find("form" + testid("history-filter"))
	if f.AttrOr("method", "") != "get" || f.Find(`select[name="status"] option[selected]`).AttrOr("value", "") != "failed" ||
		f.Find(`input[name="q"]`).AttrOr("value", "") != "typo" {
		t.Error("filter form wrong")
	}
	v.NextURL, v.Total = "", 1
	doc, _ = render(t, HistoryPage(layout("viewer"), v))
	if count(doc, testid("next-page")) != 0 || doc.Find(testid("match-count")).Text() != "1 run matches" {
		t.Error("last page wrong")
	}
}

func TestInboxPage(t *testing.T) {
	doc, _ := render(t, InboxPage(layout("operator"), InboxView{}))
	if count(doc, testid("inbox-empty")) != 1 || count(doc, testid("inbox-item")) != 0 {
		t.Error("empty state missing")
	}
	doc, _ = render(t, InboxPage(layout("operator"), InboxView{Items: []InboxItem{{RunID: "a"}, {RunID: "b",
		Calls: []InboxCall{{PendingCall: PendingCall{ID: "c1", Tool: "update_page", Kind: "write"}, Short: "slug=pricing"}}}}}))
	items := doc.Find(testid("inbox-item"))
	if items.Length() != 2 || items.Last().Find(`a[href="/runs/b"]`).Length() != 1 {
		t.Error("items wrong")
	}
}

func TestUsersPage(t *testing.T) {
	doc, _ := render(t, UsersPage(layout("admin"), UsersView{Roles: []string{"viewer", "operator", "admin"}, NewRole: "operator", Users: []UserRow{{ID: 7, Name: "bob", Role: "viewer"}, {ID: 8, Name: "cy", Role: "operator", Disabled: true}}}))
	add := doc.Find("form" + testid("add-user"))
	if add.AttrOr("action", "") != "/users" || add.Find(`input[name="name"]`).Length() != 1 ||
		add.Find(`input[name="password"]`).Length() != 1 || add.Find(`select[name="role"]`).Length() != 1 {
		t.Error("add form wrong")
	}
	rows := doc.Find(testid("user-row"))
	if rows.Length() != 2 {
		t.Fatal("rows")
	}
	if rows.First().Find(`form[action="/users/7/role"] option[selected]`).AttrOr("value", "") != "viewer" ||
		rows.First().Find(`form[action="/users/7/disable"]`).Length() != 1 {
		t.Error("row forms wrong")
	}
	if rows.Last().Find(testid("disable-user")).Length() != 0 || rows.Last().Find(testid("user-disabled")).Length() != 1 {
		t.Error("disabled user can be disabled again")
	}
	doc.Find("form[method=post]").Each(func(_ int, f *goquery.Selection) {
		if f.Find(`input[name="_csrf"]`).AttrOr("value", "") != "tok" {
			t.Errorf("form %s has no _csrf", f.AttrOr("action", ""))
		}
	})
}

func TestErrorViews(t *testing.T) {
	doc, _ := render(t, ErrorPage(layout("viewer"), ErrorView{Status: 404, Title: "Not found", Message: "No such run."}))
	if doc.Find(testid("error-status")).Text() != "404" || doc.Find(testid("error-title")).Text() != "Not found" {
		t.Error("error page wrong")
	}
	doc, _ = render(t, ErrorFragment(ErrorView{Status: 409, Title: "Already decided", Message: "Someone else decided."}))
	e := doc.Find(`#flash[hx-swap-oob="outerHTML"] ` + testid("error"))
	if e.Length() != 1 || !strings.Contains(e.Text(), "Someone else decided.") {
		t.Error("error fragment wrong")
	}
}

func TestBoundedCountsRender(t *testing.T) {
	doc, _ := render(t, HistoryPage(layout("viewer"), HistoryView{Total: 1000, TotalMore: true}))
	if got := strings.TrimSpace(doc.Find(testid("match-count")).Text()); got != "More than 1,000 runs match" {
		t.Fatalf("match count %q", got)
	}
	doc, _ = render(t, HistoryPage(layout("viewer"), HistoryView{Total: 12}))
	if got := strings.TrimSpace(doc.Find(testid("match-count")).Text()); got != "12 runs match" {
		t.Fatalf("match count %q", got)
	}
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "999+"} {
		doc, _ := render(t, InboxBadge(n))
		if got := strings.TrimSpace(doc.Find(testid("inbox-badge")).Text()); got != want {
			t.Fatalf("badge for %d = %q, want %q", n, got, want)
		}
	}
}

// A run cut off at the model's output limit says so in words, in its failed
// step and in the run header; other terminations keep their plain names.
func TestOutputLimitLabel(t *testing.T) {
	const want = "stopped: the model's reply hit its output token limit"
	doc, _ := render(t, StepItem(Step{Seq: 4, Kind: "failed", Termination: "output_limit", Error: "cut off"}))
	if got := strings.TrimSpace(doc.Find(testid("termination")).Text()); got != want {
		t.Errorf("failed step termination %q, want %q", got, want)
	}
	v := hostileRun()
	v.Run.Status, v.Run.Termination = "failed", "output_limit"
	doc, _ = render(t, RunPage(layout("viewer"), v))
	if got := strings.TrimSpace(doc.Find(testid("run-termination")).Text()); got != want {
		t.Errorf("run header termination %q, want %q", got, want)
	}
	doc, _ = render(t, StepItem(Step{Seq: 4, Kind: "failed", Termination: "max_iterations"}))
	if got := strings.TrimSpace(doc.Find(testid("termination")).Text()); got != "max iterations" {
		t.Errorf("max_iterations label %q", got)
	}
}
