package agentsfile

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"countersign/engine"
	"countersign/engine/mcptools"
	"countersign/engine/models/demo"
	"countersign/engine/tools"
)

var fixedNow = func() time.Time { return time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC) }

// dataDir is the DATA_DIR the app gives the built-in file in the tests.
const dataDir = "/var/lib/countersign"

// loadDefault loads the built-in file over ws, with grants when not nil.
func loadDefault(t *testing.T, ws tools.Workspace, grants *allGrants) []engine.Agent {
	t.Helper()
	env := Env{Tools: tools.Catalogue(ws, fixedNow), Models: []string{demo.Name}, Now: fixedNow,
		Vars: map[string]string{"DATA_DIR": dataDir}}
	if grants != nil {
		env.Grants = grants
	}
	agents, err := Load(DefaultName, Default(), env)
	if err != nil {
		t.Fatal(err)
	}
	return agents
}

func toolNames(ts []engine.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name())
	}
	return out
}

// The built-in file holds the presets engine/tools keeps in Go for the
// engine's tests, unchanged, and adds editor-quick and files.
func TestDefaultFile(t *testing.T) {
	ws := tools.NewMemory(fixedNow, tools.SeedPages()...)
	agents := loadDefault(t, ws, nil)
	var names []string
	for _, a := range agents {
		names = append(names, a.Name)
	}
	if want := []string{"editor", "editor-4eyes", "researcher", "editor-quick", "files"}; !slices.Equal(names, want) {
		t.Fatalf("agents %v, want %v", names, want)
	}
	for _, g := range tools.Agents(ws, fixedNow) {
		a, _ := tools.AgentByName(agents, g.Name)
		if a.Title != g.Title || a.Description != g.Description || a.Instructions != g.Instructions ||
			a.SecondApprover != g.SecondApprover || a.MaxIterations != g.MaxIterations || !slices.Equal(a.Examples, g.Examples) ||
			!slices.Equal(toolNames(a.Tools), toolNames(g.Tools)) {
			t.Errorf("%s differs from tools.Agents:\n file %+v\n Go   %+v", g.Name, a, g)
		}
	}
	quick, _ := tools.AgentByName(agents, "editor-quick")
	if quick.ApprovalDeadline != 2*time.Minute || quick.MaxRepeatDenials != 3 || quick.DefaultModel != demo.Name || quick.Policy == nil {
		t.Errorf("editor-quick: %+v", quick)
	}
	if r, _ := tools.AgentByName(agents, "researcher"); r.Policy != nil {
		t.Error("the researcher has a policy without rules or grants")
	}
	if n := len(Servers(agents)); n != 1 {
		t.Errorf("%d MCP servers, want the file assistant's one", n)
	}
}

// The file assistant reaches the sandbox under DATA_DIR through the
// reference filesystem server, with previews of its writes and edits, and
// creates folders without asking.
func TestDefaultFileAssistant(t *testing.T) {
	ws := tools.NewMemory(fixedNow, tools.SeedPages()...)
	agents := loadDefault(t, ws, nil)
	files, ok := tools.AgentByName(agents, "files")
	if !ok {
		t.Fatal("no agent files")
	}
	if want := []string{"ask_operator", "current_time"}; !slices.Equal(toolNames(files.Tools), want) {
		t.Errorf("tools %v, want %v", toolNames(files.Tools), want)
	}
	if len(files.Toolsets) != 1 {
		t.Fatalf("%d toolsets", len(files.Toolsets))
	}
	cfg := Servers(agents)[0].Config()
	want := mcptools.ServerConfig{Agent: "files", Name: "filesystem", Command: "node_modules/.bin/mcp-server-filesystem",
		Args: []string{dataDir + "/sandbox"}, Previews: map[string]mcptools.PreviewSpec{
			"edit_file":  {DryRun: "dryRun"},
			"write_file": {DiffAgainst: "read_text_file", PathArg: "path", ContentArg: "content"},
		}}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("server config\n %+v\nwant\n %+v", cfg, want)
	}
	if files.Policy == nil {
		t.Fatal("no policy")
	}
	res, err := files.Policy.Check(context.Background(), engine.PolicyCall{RunID: "r", Agent: "files", Initiator: "olga", Marked: true,
		Call: engine.ToolCall{Name: "create_directory", Arguments: `{"path":"archive/2026"}`}})
	if err != nil || res != (engine.PolicyResult{Rule: "folders-are-harmless"}) {
		t.Errorf("create_directory: %+v, %v", res, err)
	}
	res, err = files.Policy.Check(context.Background(), engine.PolicyCall{RunID: "r", Agent: "files", Initiator: "olga", Marked: true,
		Call: engine.ToolCall{Name: "write_file", Arguments: `{"path":"a.txt","content":"x"}`}})
	if err != nil || res != (engine.PolicyResult{Person: true}) {
		t.Errorf("write_file: %+v, %v", res, err)
	}
}

// Without DATA_DIR the built-in file does not load: the sandbox would be
// a folder nobody chose.
func TestDefaultFileNeedsDataDir(t *testing.T) {
	ws := tools.NewMemory(fixedNow, tools.SeedPages()...)
	_, err := Load(DefaultName, Default(), Env{Tools: tools.Catalogue(ws, fixedNow), Models: []string{demo.Name}})
	if err == nil || !strings.Contains(err.Error(), `MCP server "filesystem": args: ${DATA_DIR} is not set`) {
		t.Fatalf("error %v", err)
	}
}

// Every example of every preset is one the demo model plans, with the
// agent's tools. The tools of an MCP server are known once it runs: the
// file assistant's examples are planned with the names of the tools the
// reference filesystem server lists (its tests plan them against the
// server itself).
func TestDefaultExamplesArePlanned(t *testing.T) {
	ws := tools.NewMemory(fixedNow, tools.SeedPages()...)
	fsTools := []string{"read_text_file", "read_multiple_files", "write_file", "edit_file", "create_directory",
		"list_directory", "directory_tree", "move_file", "search_files", "get_file_info"}
	for _, a := range loadDefault(t, ws, nil) {
		var specs []engine.ToolSpec
		for _, tl := range a.Tools {
			specs = append(specs, engine.ToolSpec{Name: tl.Name(), Description: tl.Description(), Parameters: tl.Schema()})
		}
		known := demo.Examples()
		if len(a.Toolsets) > 0 {
			for _, name := range fsTools {
				specs = append(specs, engine.ToolSpec{Name: name, Parameters: json.RawMessage(`{"type":"object"}`)})
			}
			known = demo.FileExamples()
		}
		for _, e := range a.Examples {
			resp, err := demo.New().Generate(context.Background(), engine.ModelRequest{
				Messages: []engine.Message{{Role: engine.RoleUser, Content: e}}, Tools: specs})
			if err != nil {
				t.Fatalf("%s: %q: %v", a.Name, e, err)
			}
			if len(resp.Message.ToolCalls) == 0 {
				t.Errorf("%s: %q is not planned: %s", a.Name, e, resp.Message.Content)
			}
			if !slices.Contains(known, e) {
				t.Errorf("%s: %q is not among the demo model's examples", a.Name, e)
			}
		}
	}
}

// run is a run of an agent through the real loop with the demo model, up
// to its first suspension or its end.
type run struct {
	ws      *tools.Memory
	loop    *engine.Loop
	res     *engine.Result
	err     error
	pending []string          // the calls of the first suspended turn: tool slug
	waived  map[string]string // "tool slug" → what let it run without a person
}

func runAgent(t *testing.T, name, prompt string) run {
	t.Helper()
	ws := tools.NewMemory(fixedNow, tools.SeedPages()...)
	a, ok := tools.AgentByName(loadDefault(t, ws, nil), name)
	if !ok {
		t.Fatalf("no agent %s", name)
	}
	r := run{ws: ws, waived: map[string]string{}}
	rec := engine.RecorderFunc(func(_ context.Context, ev engine.Event) error {
		if ev.Kind == engine.EventToolStarted && ev.WaivedBy != "" {
			r.waived[callName(*ev.Call)] = ev.WaivedBy
		}
		return nil
	})
	r.loop = engine.NewLoop(a, demo.New(), rec)
	r.loop.Initiator = "olga"
	r.res, r.err = r.loop.Run(context.Background(), engine.Request{Prompt: prompt})
	var are *engine.ApprovalRequiredError
	if errors.As(r.err, &are) {
		for _, c := range are.State.Pending {
			r.pending = append(r.pending, callName(c))
		}
	}
	return r
}

// callName is "tool slug", or the tool alone for a call without a slug.
func callName(c engine.ToolCall) string {
	var args struct{ Slug string }
	_ = json.Unmarshal([]byte(c.Arguments), &args)
	if args.Slug == "" {
		return c.Name
	}
	return c.Name + " " + args.Slug
}

// Each example of editor-quick shows one of its rules at work in the real
// loop: what runs without anyone asked, naming its rule, and what waits.
func TestQuickEditorExamples(t *testing.T) {
	tests := []struct {
		prompt  string
		pending []string // the first suspended turn; nil when the run ends without one
		waived  map[string]string
	}{
		{"Create a page announcing the winter sale, then publish it.",
			[]string{"publish_page winter-sale"}, map[string]string{"create_page winter-sale": "rule new-pages-are-drafts"}},
		{"Create a page announcing the Team plan at $12 per seat.",
			[]string{"create_page team-plan-at-12-per-seat"}, nil},
		{"Check the word count of the release notes and publish them.",
			nil, map[string]string{"publish_page release-notes": "rule release-notes-publish-freely"}},
		{"Publish all draft pages.",
			[]string{"publish_page about", "publish_page old-announcement", "publish_page release-notes"}, nil},
		{"Search the pages for refund.", []string{"search_pages"}, nil},
		{"Publish the about page.", []string{"publish_page about"}, nil},
		{"Delete the old announcement page. If you are refused, try again.", []string{"delete_page old-announcement"}, nil},
	}
	ws := tools.NewMemory(fixedNow, tools.SeedPages()...)
	quick, _ := tools.AgentByName(loadDefault(t, ws, nil), "editor-quick")
	if len(quick.Examples) != len(tests) {
		t.Fatalf("editor-quick has %d examples, the test %d", len(quick.Examples), len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			if quick.Examples[i] != tt.prompt {
				t.Fatalf("example %d is %q", i, quick.Examples[i])
			}
			r := runAgent(t, "editor-quick", tt.prompt)
			if tt.pending == nil {
				if r.err != nil || r.res.Termination != engine.TermCompleted {
					t.Fatalf("want the run completed without asking, got %v", r.err)
				}
			} else if !slices.Equal(r.pending, tt.pending) {
				t.Fatalf("pending %v (%v), want %v", r.pending, r.err, tt.pending)
			}
			if len(r.waived) != len(tt.waived) {
				t.Errorf("waived %v, want %v", r.waived, tt.waived)
			}
			for call, why := range tt.waived {
				if r.waived[call] != why {
					t.Errorf("%s: waived by %q, want %q", call, r.waived[call], why)
				}
			}
		})
	}
}

// Denied, the retrying delete meets the loop breaker after
// max_repeat_denials turns, and the page stays.
func TestQuickEditorLoopBreaker(t *testing.T) {
	r := runAgent(t, "editor-quick", "Delete the old announcement page. If you are refused, try again.")
	var are *engine.ApprovalRequiredError
	if !errors.As(r.err, &are) {
		t.Fatal(r.err)
	}
	res, err := r.loop.Resume(context.Background(), are.State,
		engine.Decision{Verdict: engine.VerdictDeny, Digest: are.State.Digest(), By: "ann"})
	var runErr *engine.RunError
	if !errors.As(err, &runErr) || runErr.Termination != engine.TermRepeatedDenials {
		t.Fatalf("want the loop breaker, got %v (%+v)", err, res)
	}
	if _, err := r.ws.GetPage(context.Background(), "old-announcement"); err != nil {
		t.Errorf("the page is gone: %v", err)
	}
}

// allGrants is a grant store that grants every tool to every agent.
type allGrants struct{ asked []string }

func (g *allGrants) ActiveGrant(_ context.Context, agent, _, tool string, now time.Time) (engine.Grant, bool, error) {
	g.asked = append(g.asked, agent+" "+tool)
	return engine.Grant{ID: 5, Agent: agent, Tool: tool, Scope: engine.GrantAgent, ExpiresAt: now.Add(time.Hour)}, true, nil
}

// Grants spare a person a write of the editor, but never a delete (its
// rule says always), and never anything of the four-eyes editor.
func TestDefaultGrants(t *testing.T) {
	ws := tools.NewMemory(fixedNow, tools.SeedPages()...)
	grants := &allGrants{}
	agents := loadDefault(t, ws, grants)
	check := func(agent, tool string) engine.PolicyResult {
		a, _ := tools.AgentByName(agents, agent)
		if a.Policy == nil {
			t.Fatalf("%s has no policy", agent)
		}
		res, err := a.Policy.Check(context.Background(), engine.PolicyCall{RunID: "r1", Agent: agent, Initiator: "olga", Marked: true,
			Call: engine.ToolCall{ID: "c1", Name: tool, Arguments: `{"slug":"about"}`}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if got := check("editor", "publish_page"); got != (engine.PolicyResult{Grant: "5"}) {
		t.Errorf("editor publish_page: %+v", got)
	}
	if got := check("editor", "delete_page"); got != (engine.PolicyResult{Person: true, Rule: "deletes-always-ask"}) {
		t.Errorf("editor delete_page: %+v", got)
	}
	grants.asked = nil
	if got := check("editor-4eyes", "publish_page"); got != (engine.PolicyResult{Person: true}) || len(grants.asked) != 0 {
		t.Errorf("editor-4eyes publish_page: %+v, grants asked %v", got, grants.asked)
	}

	// With four-eyes for every agent, no agent takes grants.
	agents, err := Load(DefaultName, Default(), Env{Tools: tools.Catalogue(ws, fixedNow), Models: []string{demo.Name},
		Grants: grants, FourEyes: true, Vars: map[string]string{"DATA_DIR": dataDir}})
	if err != nil {
		t.Fatal(err)
	}
	editor, _ := tools.AgentByName(agents, "editor")
	res, err := editor.Policy.Check(context.Background(), engine.PolicyCall{Agent: "editor", Marked: true,
		Call: engine.ToolCall{Name: "publish_page", Arguments: `{"slug":"about"}`}})
	if err != nil || res != (engine.PolicyResult{Person: true}) {
		t.Errorf("four-eyes editor publish_page: %+v, %v", res, err)
	}
}
