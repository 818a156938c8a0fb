package agentsfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"countersign/engine"
	"countersign/engine/tools"
)

// env is the environment of the table tests: the built-in tools, two
// models.
func env() Env {
	return Env{Tools: tools.Catalogue(tools.NewMemory(nil), nil), Models: []string{"demo", "openai:gpt-4o-mini"}}
}

// agent is a valid agent at line 2 of a file, followed by extra lines (at
// line 5 on), each indented as a key of the agent.
func agent(extra ...string) string {
	s := "agents:\n  - name: a\n    title: A\n    instructions: Do it.\n"
	for _, l := range extra {
		s += "    " + l + "\n"
	}
	return s
}

// Each mistake is reported at its line, all of them at once.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []string // "line: part of the message", in order
	}{
		{"empty file", "", []string{"1: the file is empty"}},
		{"only comments", "# nothing\n", []string{"1: the file is empty"}},
		{"syntax error", "agents:\n  - name: a\n   title: b\n", []string{"2: did not find expected '-' indicator"}},
		{"scanner error", "agents:\n  - name: a\n    title: b: c\n", []string{"3: mapping values are not allowed in this context"}},
		{"tab", "agents:\n\t- name: a\n", []string{"2: found character that cannot start any token"}},
		{"not a mapping", "- a\n- b\n", []string{"1: the file: want keys and values, got a list"}},
		{"unknown top key", "agent:\n  - name: a\n", []string{`1: the file: unknown key "agent" (the keys are agents)`, "1: missing key agents"}},
		{"agents not a list", "agents: editor\n", []string{`1: agents: want a list, got "editor"`}},
		{"no agents", "agents: []\n", []string{"1: agents: the list is empty"}},
		{"two documents", agent() + "---\nagents: []\n", []string{"5: a second YAML document"}},
		{"missing name, title, instructions", "agents:\n  - description: x\n", []string{"2: missing key name", "2: missing key title", "2: missing key instructions"}},
		{"bad name", "agents:\n  - name: Editor One\n    title: A\n    instructions: x\n", []string{`2: name: want lower-case letters, digits and dashes, as in editor-4eyes, got "Editor One"`}},
		{"empty title", "agents:\n  - name: a\n    title: \"  \"\n    instructions: x\n", []string{"3: title: is empty"}},
		{"null title", "agents:\n  - name: a\n    title:\n    instructions: x\n", []string{"3: title: want a value, got nothing"}},
		{"title is a list", "agents:\n  - name: a\n    title: [x]\n    instructions: x\n", []string{"3: title: want a value, got a list"}},
		{"unknown key", agent("titel: A"), []string{`5: an agent: unknown key "titel" (the keys are name, title, description`}},
		{"key twice", agent("title: B"), []string{"5: an agent: the key title is given twice (the first at line 3)"}},
		{"duplicate agent", agent() + "  - name: a\n    title: B\n    instructions: x\n", []string{`5: two agents are named "a" (the first at line 2)`}},
		{"unknown tool", agent("tools: [get_page, fetch_url]"), []string{`5: tools: unknown tool "fetch_url" (the tools are ask_operator, create_page`}},
		{"tool twice", agent("tools:", "  - get_page", "  - get_page"), []string{`7: tools: "get_page" is listed twice`}},
		{"tools not a list", agent("tools: get_page"), []string{`5: tools: want a list, got "get_page"`}},
		{"unknown model", agent("default_model: gpt-5"), []string{`5: default_model: "gpt-5" is not offered on this server (it offers demo, openai:gpt-4o-mini)`}},
		{"bad duration", agent("approval_deadline: 2 minutes"), []string{`5: approval_deadline: want a duration such as 2m or 1h30m, got "2 minutes"`}},
		{"deadline too short", agent("approval_deadline: 5s"), []string{"5: approval_deadline: want 0 (no deadline) or from 10s to 720h, got 5s"}},
		{"deadline too long", agent("approval_deadline: 1000h"), []string{"5: approval_deadline: want 0 (no deadline) or from 10s to 720h, got 1000h"}},
		{"bad bool", agent("second_approver: yes"), []string{`5: second_approver: want true or false, got "yes"`}},
		{"repeat denials zero", agent("max_repeat_denials: 0"), []string{`5: max_repeat_denials: want a whole number from 1 to 100, got "0"`}},
		{"iterations text", agent("max_iterations: many"), []string{`5: max_iterations: want a whole number from 1 to 100, got "many"`}},
		{"iterations float", agent("max_iterations: 2.5"), []string{`5: max_iterations: want a whole number from 1 to 100, got "2.5"`}},
		{"empty example", agent("examples:", "  - Publish the about page.", `  - ""`), []string{"7: examples: an example is empty"}},
		{"null example", agent("examples:", "  -"), []string{"6: examples: want a value, got nothing"}},
		{"example twice", agent("examples: [Go., Go.]"), []string{`5: examples: "Go." is given twice`}},
		{"rule for a tool not offered", agent("tools: [get_page]", "rules:", "  - name: r", "    tool: delete_page", "    approval: always"),
			[]string{`8: rule "r": the agent "a" does not offer the tool "delete_page": add it to its tools or to an MCP server's tools, or drop the rule`}},
		{"rule for an unknown tool", agent("tools: [get_page]", "rules:", "  - name: r", "    tool: rm", "    approval: always"),
			[]string{`8: rule "r": unknown tool "rm"`}},
		{"rule for a question", agent("tools: [ask_operator]", "rules:", "  - name: r", "    tool: ask_operator", "    approval: never"),
			[]string{`8: rule "r": ask_operator asks the operator a question, which always waits for an answer`}},
		{"rule without name, tool, approval", agent("tools: [get_page]", "rules:", "  - when: 'true'"),
			[]string{"7: rule 1: name: a rule needs a name", "7: rule 1: tool: a rule needs a tool", "7: rule 1: approval: a rule needs an approval: always or never"}},
		{"bad approval", agent("tools: [get_page]", "rules:", "  - name: r", "    tool: get_page", "    approval: sometimes"),
			[]string{`9: rule "r": approval: want always or never, got "sometimes"`}},
		{"unknown rule key", agent("tools: [get_page]", "rules:", "  - name: r", "    tool: get_page", "    approval: always", "    if: 'true'"),
			[]string{`10: a rule: unknown key "if" (the keys are name, tool, approval, when)`}},
		{"two rules of one name", agent("tools: [get_page]", "rules:", "  - {name: r, tool: get_page, approval: always}", "  - {name: r, tool: get_page, approval: never}"),
			[]string{`8: rule "r": name: two rules are named "r"`}},
		{"CEL syntax error", agent("tools: [get_page]", "rules:", "  - name: r", "    tool: get_page", "    approval: always", `    when: args.slug ==`),
			[]string{`10: rule "r": when: Syntax error`}},
		{"CEL undeclared name", agent("tools: [get_page]", "rules:", "  - name: r", "    tool: get_page", "    approval: always", `    when: user == "olga"`),
			[]string{`10: rule "r": when: undeclared reference to 'user' (at 1:1 of the condition)`}},
		{"CEL error on the second line of a block", agent("tools: [get_page]", "rules:", "  - name: r", "    tool: get_page", "    approval: always",
			"    when: |", `      args.slug == "a" ||`, "        slug == \"b\""),
			[]string{`12: rule "r": when: undeclared reference to 'slug' (at 2:3 of the condition)`}},
		{"CEL not a bool", agent("tools: [get_page]", "rules:", "  - name: r", "    tool: get_page", "    approval: always", `    when: args.slug`),
			[]string{`10: rule "r": when: the condition must be true or false, but it is a dyn`}},
		{"CEL type error", agent("tools: [get_page]", "rules:", "  - name: r", "    tool: get_page", "    approval: always", `    when: initiator + 1 == 2`),
			[]string{`10: rule "r": when: found no matching overload for '_+_'`}},
		{"many mistakes, in line order", agent("titel: x", "tools: [nope]", "approval_deadline: soon") + "  - name: a\n",
			[]string{`5: an agent: unknown key "titel"`, `6: tools: unknown tool "nope"`, `7: approval_deadline: want a duration`,
				"8: missing key title", "8: missing key instructions", `8: two agents are named "a" (the first at line 2)`}},
		{"merge of an unknown alias", "agents:\n  - <<: *base\n", []string{`2: unknown anchor 'base' referenced`}},
		{"merge of a value", "agents:\n  - <<: 3\n    name: a\n    title: A\n    instructions: x\n", []string{`2: an agent: << merges a mapping or a list of them, got "3"`}},
		{"merge of itself", "agents:\n  - <<: &x [*x]\n", []string{`2: an agent: << merges a mapping or a list of them, got a list`,
			"2: missing key name", "2: missing key title", "2: missing key instructions"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agents, err := Load("agents.yaml", []byte(tt.file), env())
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("Load = %v, %v; want an ErrorList", agents, err)
			}
			if agents != nil {
				t.Errorf("agents %v with mistakes", agents)
			}
			var got []string
			for _, e := range list {
				if e.File != "agents.yaml" {
					t.Errorf("file %q", e.File)
				}
				got = append(got, fmt.Sprintf("%d: %s", e.Line, e.Msg))
			}
			if len(got) != len(tt.want) {
				t.Fatalf("mistakes:\n%s\nwant %d:\n%s", strings.Join(got, "\n"), len(tt.want), strings.Join(tt.want, "\n"))
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("mistake %d = %q, want %q", i+1, got[i], w)
				}
			}
			if !strings.HasPrefix(err.Error(), "agents.yaml:") && !strings.Contains(err.Error(), "mistakes:\nagents.yaml:") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

// Merges that aliases multiply are cut short, not followed for ever.
func TestLoadExponentialMerges(t *testing.T) {
	file := "agents:\n  - &a {name: a}\n"
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		file += "  - &" + n + n + " {<<: [" + strings.Repeat("*"+n+", ", 9) + "*" + n + "]}\n"
		file = strings.Replace(file, "&"+n+n, "&"+string(rune(n[0]+1)), 1)
	}
	_, err := Load("a.yaml", []byte(file), env())
	if err == nil || !strings.Contains(err.Error(), "more than 1000 merges in the file") {
		t.Fatalf("error %v", err)
	}
}

// A valid file: anchors, aliases and merge keys, the smallest agent, and
// the values of every key.
func TestLoad(t *testing.T) {
	file := `
agents:
  - &one
    name: one
    title: One
    instructions: x
    tools: [get_page, publish_page]
  - <<: *one
    name: two
    description: Two's own.
    default_model: openai:gpt-4o-mini
    second_approver: true
    approval_deadline: 90s
    max_repeat_denials: 5
    max_iterations: 20
    rules:
      - name: freely
        tool: publish_page
        approval: never
        when: args.slug.startsWith("draft-") && initiator != "" && agent == "two" && tool == "publish_page" && run != ""
    examples: [Publish draft-x.]
  - <<: *one
    name: three
    title: Three
    approval_deadline: 0
  - name: four
    title: Four
    instructions: y
`
	agents, err := Load("a.yaml", []byte(file), env())
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) != 4 {
		t.Fatalf("%d agents", len(agents))
	}
	one, two, three, four := agents[0], agents[1], agents[2], agents[3]
	if one.Name != "one" || one.Title != "One" || one.Instructions != "x" || len(one.Tools) != 2 || one.Policy != nil {
		t.Errorf("one: %+v", one)
	}
	if two.Name != "two" || two.Title != "One" || two.Instructions != "x" || two.Description != "Two's own." ||
		two.DefaultModel != "openai:gpt-4o-mini" || !two.SecondApprover || two.ApprovalDeadline != 90*time.Second ||
		two.MaxRepeatDenials != 5 || two.MaxIterations != 20 || len(two.Examples) != 1 || two.Policy == nil ||
		len(two.Tools) != 2 || two.Tools[1].Name() != "publish_page" {
		t.Errorf("two: %+v", two)
	}
	res, err := two.Policy.Check(context.Background(), engine.PolicyCall{RunID: "r", Initiator: "olga", Marked: true,
		Call: engine.ToolCall{Name: "publish_page", Arguments: `{"slug":"draft-x"}`}})
	if err != nil || res != (engine.PolicyResult{Rule: "freely"}) {
		t.Errorf("two's rule: %+v, %v", res, err)
	}
	if three.Name != "three" || three.Title != "Three" || three.ApprovalDeadline != 0 || three.Policy != nil || len(three.Tools) != 2 {
		t.Errorf("three: %+v", three)
	}
	if four.Tools != nil || four.Examples != nil || four.MaxRepeatDenials != 0 || four.MaxIterations != 0 {
		t.Errorf("four: %+v", four)
	}
}

// The documented example is a valid file.
func TestExampleFile(t *testing.T) {
	data, err := os.ReadFile("../docs/agents.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := mcpEnv()
	agents, err := Load("docs/agents.example.yaml", data, e)
	if err != nil {
		t.Fatal(err)
	}
	var servers []string
	for _, s := range Servers(agents) {
		c := s.Config()
		servers = append(servers, fmt.Sprintf("%s/%s %s %v %s %v", c.Agent, c.Name, c.Command, c.Args, c.URL, c.Headers))
	}
	if want := []string{"files/filesystem node_modules/.bin/mcp-server-filesystem [/data/sandbox]  map[]",
		"crm/acme-crm  [] https://mcp.acme.example/mcp map[Authorization:Bearer s3cret]"}; !slices.Equal(servers, want) {
		t.Errorf("servers\n%s\nwant\n%s", strings.Join(servers, "\n"), strings.Join(want, "\n"))
	}
	if _, err := Load("docs/agents.example.yaml", data, env()); err == nil || !strings.Contains(err.Error(), "${ACME_MCP_TOKEN} is not set") {
		t.Errorf("without the token: %v", err)
	}
	a, ok := tools.AgentByName(agents, "support-editor")
	if !ok || a.ApprovalDeadline != 15*time.Minute || a.MaxIterations != 12 || a.DefaultModel != "demo" {
		t.Fatalf("support-editor: %+v", a)
	}
	for _, tt := range []struct {
		tool, args, initiator string
		marked                bool
		want                  engine.PolicyResult
	}{
		{"delete_page", `{"slug":"faq"}`, "olga", true, engine.PolicyResult{Person: true, Rule: "deletes-always-ask"}},
		{"update_page", `{"slug":"faq","body":"x"}`, "olga", true, engine.PolicyResult{Rule: "support-pages-edit-freely"}},
		{"update_page", `{"slug":"pricing","body":"x"}`, "olga", true, engine.PolicyResult{Person: true}},
		{"publish_page", `{"slug":"release-notes"}`, "sam", true, engine.PolicyResult{Rule: "lead-publishes"}},
		{"publish_page", `{"slug":"release-notes"}`, "olga", true, engine.PolicyResult{Person: true}},
		{"search_pages", `{"query":"ann@acme.example"}`, "olga", false, engine.PolicyResult{Person: true, Rule: "searches-for-addresses-ask"}},
		{"search_pages", `{"query":"refund"}`, "olga", false, engine.PolicyResult{}},
	} {
		res, err := a.Policy.Check(context.Background(), engine.PolicyCall{RunID: "r", Initiator: tt.initiator, Marked: tt.marked,
			Call: engine.ToolCall{Name: tt.tool, Arguments: tt.args}})
		if err != nil || res != tt.want {
			t.Errorf("%s %s by %s: %+v, %v; want %+v", tt.tool, tt.args, tt.initiator, res, err, tt.want)
		}
	}
}

func FuzzLoad(f *testing.F) {
	f.Add(Default())
	f.Add([]byte(agent("rules:", "  - {name: r, tool: get_page, approval: always, when: 'args.x == 1'}", "tools: [get_page]")))
	f.Add([]byte("agents:\n  - <<: [*a]\n"))
	f.Add([]byte(agent("mcp_servers:", "  - {name: fs, command: '${TOOLS}/x', args: ['$$${DATA_DIR}'], previews: [{tool: w, diff_against: r}]}",
		"  - {name: h, url: 'https://${ACME_HOST}/mcp', headers: {Authorization: 'Bearer ${ACME_MCP_TOKEN}'}}")))
	e := mcpEnv()
	f.Fuzz(func(t *testing.T, data []byte) {
		agents, err := Load("f.yaml", data, e)
		if err == nil {
			if len(agents) == 0 {
				t.Fatal("no error and no agents")
			}
			return
		}
		var list ErrorList
		if !errors.As(err, &list) || len(list) == 0 {
			t.Fatalf("error %v is not an ErrorList", err)
		}
	})
}
