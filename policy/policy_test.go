package policy

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"countersign/engine"
)

var t0 = time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)

// grants is a GrantStore over a fixed list.
type grants struct {
	list  []engine.Grant
	err   error
	asked int
}

func (g *grants) ActiveGrant(_ context.Context, agent, runID, tool string, now time.Time) (engine.Grant, bool, error) {
	g.asked++
	if g.err != nil {
		return engine.Grant{}, false, g.err
	}
	for _, gr := range g.list {
		if gr.Agent == agent && gr.Tool == tool && (gr.Scope == engine.GrantAgent || gr.RunID == runID) && gr.Active(now) {
			return gr, true, nil
		}
	}
	return engine.Grant{}, false, nil
}

// editorRules show every kind of rule: a condition on the arguments, one
// on the initiator, an unconditional never and always, and the order.
var editorRules = []Rule{
	{Name: "prices-ask", Tool: "create_page", Approval: Always, When: `args.body.contains("$")`},
	{Name: "drafts", Tool: "create_page", Approval: Never},
	{Name: "release-notes", Tool: "publish_page", Approval: Never, When: `args.slug.startsWith("release-")`},
	{Name: "admin-publishes", Tool: "publish_page", Approval: Never, When: `initiator == "admin" && run != ""`},
	{Name: "deletes", Tool: "delete_page", Approval: Always},
	{Name: "searches", Tool: "search_pages", Approval: Always, When: `size(args.query) > 3`},
	{Name: "own-agent", Tool: "update_page", Approval: Never, When: `agent == "editor" && tool == "update_page" && has(args.title) && args.title.lowerAscii() == "typo"`},
}

func call(tool, args string, marked bool) engine.PolicyCall {
	return engine.PolicyCall{RunID: "run-1", Agent: "editor", Initiator: "olga", Marked: marked,
		Call: engine.ToolCall{ID: "c1", Name: tool, Arguments: args}}
}

func TestCheck(t *testing.T) {
	store := &grants{list: []engine.Grant{
		{ID: 7, Agent: "editor", Tool: "publish_page", Scope: engine.GrantAgent, ExpiresAt: t0.Add(time.Hour)},
		{ID: 8, Agent: "editor", Tool: "delete_page", Scope: engine.GrantAgent, ExpiresAt: t0.Add(time.Hour)},
		{ID: 9, Agent: "editor", RunID: "run-1", Tool: "update_page", Scope: engine.GrantRun, ExpiresAt: t0.Add(time.Hour)},
		{ID: 10, Agent: "editor", Tool: "get_page", Scope: engine.GrantAgent, ExpiresAt: t0.Add(time.Hour)},
		{ID: 11, Agent: "editor", Tool: "rename_page", Scope: engine.GrantAgent, ExpiresAt: t0.Add(-time.Minute)},
	}}
	tests := []struct {
		name     string
		call     engine.PolicyCall
		noGrants bool
		want     engine.PolicyResult
	}{
		{"a condition that holds asks", call("create_page", `{"slug":"sale","title":"Sale","body":"now $12"}`, true),
			false, engine.PolicyResult{Person: true, Rule: "prices-ask"}},
		{"the next rule applies when the first does not", call("create_page", `{"slug":"sale","title":"Sale","body":"soon"}`, true),
			false, engine.PolicyResult{Rule: "drafts"}},
		{"never on a marked tool, by a condition on args", call("publish_page", `{"slug":"release-notes"}`, true),
			false, engine.PolicyResult{Rule: "release-notes"}},
		{"a condition on the initiator and run", func() engine.PolicyCall {
			c := call("publish_page", `{"slug":"about"}`, true)
			c.Initiator = "admin"
			return c
		}(), false, engine.PolicyResult{Rule: "admin-publishes"}},
		{"no rule applies: marked, a grant spares the person", call("publish_page", `{"slug":"about"}`, true),
			false, engine.PolicyResult{Grant: "7"}},
		{"no rule applies: marked, no grants accepted", call("publish_page", `{"slug":"about"}`, true),
			true, engine.PolicyResult{Person: true}},
		{"always is not overridden by a grant", call("delete_page", `{"slug":"about"}`, true),
			false, engine.PolicyResult{Person: true, Rule: "deletes"}},
		{"a run grant", call("update_page", `{"slug":"about","body":"x"}`, true),
			false, engine.PolicyResult{Grant: "9"}},
		{"a run grant of another run does not count", func() engine.PolicyCall {
			c := call("update_page", `{"slug":"about","body":"x"}`, true)
			c.RunID = "run-2"
			return c
		}(), false, engine.PolicyResult{Person: true}},
		{"conditions read agent, tool and optional args", call("update_page", `{"slug":"about","title":"TYPO"}`, true),
			false, engine.PolicyResult{Rule: "own-agent"}},
		{"a read tool made to ask", call("search_pages", `{"query":"refund"}`, false),
			false, engine.PolicyResult{Person: true, Rule: "searches"}},
		{"a read tool whose rule does not apply runs", call("search_pages", `{"query":"tax"}`, false),
			false, engine.PolicyResult{}},
		{"a read tool never looks for a grant", call("get_page", `{"slug":"about"}`, false),
			false, engine.PolicyResult{}},
		{"an expired grant does not count", call("rename_page", `{"slug":"x"}`, true),
			false, engine.PolicyResult{Person: true}},
		{"a missing key asks a person", call("publish_page", `{}`, true),
			false, engine.PolicyResult{Person: true, Rule: "release-notes"}},
		{"a wrong type: asks a person", call("publish_page", `{"slug":12}`, true),
			false, engine.PolicyResult{Person: true, Rule: "release-notes"}},
		{"arguments that are not an object: asks a person", call("publish_page", `[1]`, true),
			false, engine.PolicyResult{Person: true, Rule: "release-notes"}},
		{"a question is the loop's business: not marked, no rule", call("ask_operator", `{"question":"which?"}`, false),
			false, engine.PolicyResult{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			cfg := Config{Agent: "editor", Rules: editorRules, AcceptsGrants: !tt.noGrants, Grants: store,
				Now: func() time.Time { return t0 }, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Check(context.Background(), tt.call)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Check = %+v, want %+v", got, tt.want)
			}
			if failed := strings.Contains(tt.name, "asks a person"); failed != strings.Contains(logs.String(), "policy condition failed") {
				t.Errorf("log %q", logs.String())
			}
		})
	}
}

// A store that fails asks a person and says why; an agent that takes no
// grants, or a policy without a store, never asks one.
func TestCheckGrantStore(t *testing.T) {
	broken := &grants{err: errors.New("database is locked")}
	p, err := New(Config{Agent: "editor", AcceptsGrants: true, Grants: broken})
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Check(context.Background(), call("publish_page", `{"slug":"about"}`, true))
	if err == nil || !strings.Contains(err.Error(), "database is locked") || got != (engine.PolicyResult{Person: true}) {
		t.Errorf("Check = %+v, %v", got, err)
	}

	for _, cfg := range []Config{
		{Agent: "editor-4eyes", AcceptsGrants: false, Grants: broken},
		{Agent: "editor", AcceptsGrants: true},
	} {
		broken.asked = 0
		p, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Check(context.Background(), call("publish_page", `{"slug":"about"}`, true))
		if err != nil || got != (engine.PolicyResult{Person: true}) || broken.asked != 0 {
			t.Errorf("%+v: Check = %+v, %v, store asked %d times", cfg, got, err, broken.asked)
		}
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name  string
		rules []Rule
		want  []string // one per error, in order
	}{
		{"no name, no tool, bad approval", []Rule{{Approval: "sometimes"}},
			[]string{`rule 1: name: a rule needs a name`, `rule 1: tool: a rule needs a tool`, `rule 1: approval: want always or never, got "sometimes"`}},
		{"duplicate name", []Rule{{Name: "a", Tool: "x", Approval: Never}, {Name: "a", Tool: "y", Approval: Always}},
			[]string{`rule "a": name: two rules are named "a"`}},
		{"syntax error", []Rule{{Name: "a", Tool: "x", Approval: Never, When: `args.slug ==`}},
			[]string{`rule "a": when: Syntax error`}},
		{"undeclared variable", []Rule{{Name: "a", Tool: "x", Approval: Never, When: `user == "olga"`}},
			[]string{`rule "a": when: undeclared reference to 'user'`, "(at 1:1 of the condition)"}},
		{"not a bool", []Rule{{Name: "a", Tool: "x", Approval: Never, When: `initiator + "x"`}},
			[]string{`rule "a": when: the condition must be true or false, but it is a string`}},
		{"dyn is not a bool", []Rule{{Name: "a", Tool: "x", Approval: Never, When: `args.draft`}},
			[]string{`but it is a dyn: compare it, as in args.draft == true`}},
		{"type error", []Rule{{Name: "a", Tool: "x", Approval: Never, When: `initiator > 3`}},
			[]string{`rule "a": when: found no matching overload for '_>_'`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Config{Agent: "a", Rules: tt.rules})
			var errs RuleErrors
			if !errors.As(err, &errs) {
				t.Fatalf("error %v, want RuleErrors", err)
			}
			if len(tt.want) > 1 && strings.HasPrefix(tt.want[1], "(") {
				if len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.want[0]) || !strings.Contains(errs[0].Error(), tt.want[1]) {
					t.Errorf("errors %q, want one with %q", errs, tt.want)
				}
				return
			}
			if len(errs) != len(tt.want) {
				t.Fatalf("errors %q, want %d", errs, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want %q", i, errs[i], w)
				}
				if errs[i].Index != len(tt.rules)-1 && tt.name == "duplicate name" {
					t.Errorf("duplicate reported on rule %d", errs[i].Index)
				}
			}
		})
	}
}

// Check may run for many runs at once.
func TestCheckConcurrent(t *testing.T) {
	p, err := New(Config{Agent: "editor", Rules: editorRules})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan engine.PolicyResult)
	for range 8 {
		go func() {
			r, _ := p.Check(context.Background(), call("publish_page", `{"slug":"release-notes"}`, true))
			done <- r
		}()
	}
	for range 8 {
		if r := <-done; r != (engine.PolicyResult{Rule: "release-notes"}) {
			t.Errorf("Check = %+v", r)
		}
	}
}
