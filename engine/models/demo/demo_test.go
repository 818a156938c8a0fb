package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"countersign/engine"
)

// anyText in the arguments of a wanted call accepts any non-empty string.
type anyText struct{}

type wantCall struct {
	name string
	args map[string]any
}

func c(name string, args map[string]any) wantCall { return wantCall{name, args} }

func slug(s string) map[string]any { return map[string]any{"slug": s} }

func checkTurns(t *testing.T, got [][]engine.ToolCall, want [][]wantCall) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d tool-call turns %v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("turn %d: got calls %v, want %v", i+1, got[i], want[i])
		}
		for j, w := range want[i] {
			g := got[i][j]
			if g.Name != w.name {
				t.Fatalf("turn %d call %d: got %s, want %s", i+1, j+1, g.Name, w.name)
			}
			var args map[string]any
			if err := json.Unmarshal([]byte(g.Arguments), &args); err != nil {
				t.Fatalf("turn %d call %d: arguments %q: %v", i+1, j+1, g.Arguments, err)
			}
			if w.args == nil {
				w.args = map[string]any{}
			}
			if len(args) != len(w.args) {
				t.Fatalf("turn %d call %d %s: got arguments %s, want %v", i+1, j+1, g.Name, g.Arguments, w.args)
			}
			for k, v := range w.args {
				if _, ok := v.(anyText); ok {
					if s, _ := args[k].(string); strings.TrimSpace(s) == "" {
						t.Fatalf("turn %d call %d %s: argument %s should be text, got %s", i+1, j+1, g.Name, k, g.Arguments)
					}
					continue
				}
				if !reflect.DeepEqual(args[k], v) {
					t.Fatalf("turn %d call %d %s: argument %s = %#v, want %#v", i+1, j+1, g.Name, k, args[k], v)
				}
			}
		}
	}
}

func checkText(t *testing.T, text string, contains, excludes []string) {
	t.Helper()
	for _, s := range contains {
		if !strings.Contains(text, s) {
			t.Errorf("final answer lacks %q:\n%s", s, text)
		}
	}
	for _, s := range excludes {
		if strings.Contains(text, s) {
			t.Errorf("final answer should not contain %q:\n%s", s, text)
		}
	}
}

func TestScenarios(t *testing.T) {
	seed := seedWorkspace()
	pricing := seed.pages["pricing"].Body
	updated := strings.Replace(pricing, "$10 per seat", "$12 per seat", 1)
	wordsOf := func(s string) string { return fmt.Sprintf("%d words", words(seed.pages[s].Body)) }

	tests := []struct {
		name     string
		prompt   string
		prepare  func(w *workspace)
		turns    [][]wantCall
		contains []string
		excludes []string
		check    func(t *testing.T, w *workspace)
	}{
		{
			name:     "word count",
			prompt:   "How many words are on the pricing page?",
			turns:    [][]wantCall{{c(toolWordCount, slug("pricing"))}},
			contains: []string{"“pricing”", wordsOf("pricing")},
		},
		{
			name:     "word count of the release notes",
			prompt:   "how many words are in the release notes",
			turns:    [][]wantCall{{c(toolWordCount, slug("release-notes"))}},
			contains: []string{wordsOf("release-notes")},
		},
		{
			name:     "word count by slug",
			prompt:   "Word count of old-announcement, please",
			turns:    [][]wantCall{{c(toolWordCount, slug("old-announcement"))}},
			contains: []string{wordsOf("old-announcement")},
		},
		{
			name:     "search",
			prompt:   "Search the pages for refund.",
			turns:    [][]wantCall{{c(toolSearchPages, map[string]any{"query": "refund"})}},
			contains: []string{"2 pages", "“refund”", "Pricing (pricing)", "Frequently asked questions (faq)"},
		},
		{
			name:     "search by mention",
			prompt:   "Which pages mention “holidays”?",
			turns:    [][]wantCall{{c(toolSearchPages, map[string]any{"query": "holidays"})}},
			contains: []string{"1 page mentions", "(old-announcement)"},
		},
		{
			name:     "search without hits",
			prompt:   "Search for kangaroo",
			turns:    [][]wantCall{{c(toolSearchPages, map[string]any{"query": "kangaroo"})}},
			contains: []string{"No page mentions “kangaroo”"},
		},
		{
			name:     "time",
			prompt:   "What time is it?",
			turns:    [][]wantCall{{c(toolCurrentTime, nil)}},
			contains: []string{fakeTime},
		},
		{
			name:     "list",
			prompt:   "List all pages.",
			turns:    [][]wantCall{{c(toolListPages, nil)}},
			contains: []string{"6 pages", "About us (about), draft", "Pricing (pricing), published"},
		},
		{
			name:     "publish one page",
			prompt:   "Publish the about page.",
			turns:    [][]wantCall{{c(toolPublishPage, slug("about"))}},
			contains: []string{"published the page “about”"},
			check: func(t *testing.T, w *workspace) {
				if got := w.pages["about"].Status; got != "published" {
					t.Errorf("about is %s, want published", got)
				}
			},
		},
		{
			name:     "word count and publish in one turn",
			prompt:   "Check the word count of the release notes and publish them.",
			turns:    [][]wantCall{{c(toolWordCount, slug("release-notes")), c(toolPublishPage, slug("release-notes"))}},
			contains: []string{wordsOf("release-notes"), "published"},
		},
		{
			name:   "create then publish",
			prompt: "Create a page announcing the winter sale, then publish it.",
			turns: [][]wantCall{
				{c(toolCreatePage, map[string]any{"slug": "winter-sale", "title": "Winter sale", "body": anyText{}})},
				{c(toolPublishPage, slug("winter-sale"))},
			},
			contains: []string{"created the page “winter-sale”", "published it"},
			check: func(t *testing.T, w *workspace) {
				p := w.pages["winter-sale"]
				if p == nil || p.Status != "published" || !strings.Contains(p.Body, "winter sale") || !strings.Contains(p.Body, "\n") {
					t.Errorf("winter-sale = %+v, want a published page of a few lines about the winter sale", p)
				}
			},
		},
		{
			name:   "create without publishing",
			prompt: "Create a new page called team offsite",
			turns: [][]wantCall{
				{c(toolCreatePage, map[string]any{"slug": "team-offsite", "title": "Team offsite", "body": anyText{}})},
			},
			contains: []string{"created the page “team-offsite”", "draft"},
		},
		{
			name:   "publish all drafts",
			prompt: "Publish all draft pages.",
			turns: [][]wantCall{
				{c(toolListPages, nil)},
				{c(toolPublishPage, slug("about")), c(toolPublishPage, slug("old-announcement")), c(toolPublishPage, slug("release-notes"))},
			},
			contains: []string{"published 3 draft pages", "“about”, “old-announcement” and “release-notes”"},
			check: func(t *testing.T, w *workspace) {
				for _, p := range w.pages {
					if p.Status != "published" {
						t.Errorf("%s is still %s", p.Slug, p.Status)
					}
				}
			},
		},
		{
			name:   "publish all drafts when there are none",
			prompt: "Publish every draft",
			prepare: func(w *workspace) {
				for _, p := range w.pages {
					p.Status = "published"
				}
			},
			turns:    [][]wantCall{{c(toolListPages, nil)}},
			contains: []string{"no draft pages"},
		},
		{
			name:   "update the price",
			prompt: "Update the pricing page to say the Team plan now costs $12 per seat.",
			turns: [][]wantCall{
				{c(toolGetPage, slug("pricing"))},
				{c(toolUpdatePage, map[string]any{"slug": "pricing", "body": updated})},
			},
			contains: []string{"updated the page “pricing”", "Team plan now costs $12 per seat"},
			check: func(t *testing.T, w *workspace) {
				if b := w.pages["pricing"].Body; !strings.Contains(b, "Team plan costs $12 per seat") || !strings.Contains(b, "$25 per seat") {
					t.Errorf("pricing body:\n%s", b)
				}
			},
		},
		{
			name:     "update to the same price",
			prompt:   "Change the price on the pricing page: the Team plan costs $10 per seat.",
			turns:    [][]wantCall{{c(toolGetPage, slug("pricing"))}},
			contains: []string{"already says $10 per seat"},
		},
		{
			name:     "delete",
			prompt:   "Delete the old announcement page.",
			turns:    [][]wantCall{{c(toolDeletePage, slug("old-announcement"))}},
			contains: []string{"deleted the page “old-announcement”"},
			check: func(t *testing.T, w *workspace) {
				if _, ok := w.pages["old-announcement"]; ok {
					t.Error("old-announcement still exists")
				}
			},
		},
		{
			name:     "tool error",
			prompt:   "How many words are on the 'nope' page?",
			turns:    [][]wantCall{{c(toolWordCount, slug("nope"))}},
			contains: []string{`page "nope" not found`, "I did not retry"},
		},
		{
			name:     "publishing a missing page",
			prompt:   "Publish the missing page",
			turns:    [][]wantCall{{c(toolPublishPage, slug("missing"))}},
			contains: []string{`page "missing" not found`, "publish the page “missing” (failed"},
		},
		{
			name:    "create fails and publish is not attempted",
			prompt:  "Create a page announcing the winter sale, then publish it.",
			prepare: func(w *workspace) { w.pages["winter-sale"] = &fakePage{"winter-sale", "Old", "x", "draft"} },
			turns: [][]wantCall{
				{c(toolCreatePage, map[string]any{"slug": "winter-sale", "title": "Winter sale", "body": anyText{}})},
			},
			contains: []string{"already exists", "publish the page “winter-sale” (not attempted)"},
		},
		{
			name:     "update a page without a price",
			prompt:   "Update the about page to say we cost $5 per seat",
			turns:    [][]wantCall{{c(toolGetPage, slug("about"))}},
			contains: []string{"does not state a price per seat"},
		},
		{
			name:     "a page operation without a page",
			prompt:   "Delete it.",
			contains: []string{"Which page should I delete?"},
		},
		{
			name:     "unknown prompt",
			prompt:   "Tell me a joke about penguins.",
			contains: append([]string{"scripted", "not a language model"}, Examples()...),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := seedWorkspace()
			if tt.prepare != nil {
				tt.prepare(ws)
			}
			s := &session{ws: ws}
			got := s.run(t, nil, tt.prompt)
			checkTurns(t, got.turns, tt.turns)
			checkText(t, got.final, tt.contains, tt.excludes)
			if tt.check != nil {
				tt.check(t, ws)
			}
		})
	}
}

func TestDenials(t *testing.T) {
	const reason = "not before the launch on Monday"
	tests := []struct {
		name     string
		prompt   string
		denyTurn int
		turns    [][]wantCall
		contains []string
		unchange func(t *testing.T, w *workspace)
	}{
		{
			name:     "publish",
			prompt:   "Publish the about page.",
			denyTurn: 1,
			turns:    [][]wantCall{{c(toolPublishPage, slug("about"))}},
			contains: []string{"publish the page “about” (denied by the operator)"},
			unchange: func(t *testing.T, w *workspace) {
				if w.pages["about"].Status != "draft" {
					t.Error("about was published")
				}
			},
		},
		{
			name:     "mixed read and write turn",
			prompt:   "Check the word count of the release notes and publish them.",
			denyTurn: 1,
			turns:    [][]wantCall{{c(toolWordCount, slug("release-notes")), c(toolPublishPage, slug("release-notes"))}},
			contains: []string{"publish the page “release-notes” (denied by the operator)", "count the words of the page “release-notes” (denied"},
		},
		{
			name:     "create, so publish is never attempted",
			prompt:   "Create a page announcing the winter sale, then publish it.",
			denyTurn: 1,
			turns:    [][]wantCall{{c(toolCreatePage, map[string]any{"slug": "winter-sale", "title": "Winter sale", "body": anyText{}})}},
			contains: []string{"create the page “winter-sale” (denied by the operator)", "publish the page “winter-sale” (not attempted)"},
			unchange: func(t *testing.T, w *workspace) {
				if _, ok := w.pages["winter-sale"]; ok {
					t.Error("winter-sale was created")
				}
			},
		},
		{
			name:     "publish after an approved create",
			prompt:   "Create a page announcing the winter sale, then publish it.",
			denyTurn: 2,
			turns: [][]wantCall{
				{c(toolCreatePage, map[string]any{"slug": "winter-sale", "title": "Winter sale", "body": anyText{}})},
				{c(toolPublishPage, slug("winter-sale"))},
			},
			contains: []string{"Done:\n- created the page “winter-sale”", "publish the page “winter-sale” (denied by the operator)"},
			unchange: func(t *testing.T, w *workspace) {
				if p := w.pages["winter-sale"]; p == nil || p.Status != "draft" {
					t.Errorf("winter-sale = %+v, want a draft", p)
				}
			},
		},
		{
			name:     "publish all drafts",
			prompt:   "Publish all draft pages.",
			denyTurn: 1,
			turns: [][]wantCall{
				{c(toolListPages, nil)},
				{c(toolPublishPage, slug("about")), c(toolPublishPage, slug("old-announcement")), c(toolPublishPage, slug("release-notes"))},
			},
			contains: []string{"listed the pages", "publish the page “about” (denied", "publish the page “release-notes” (denied"},
		},
		{
			name:     "update",
			prompt:   "Update the pricing page to say the Team plan now costs $12 per seat.",
			denyTurn: 1,
			turns: [][]wantCall{
				{c(toolGetPage, slug("pricing"))},
				{c(toolUpdatePage, map[string]any{"slug": "pricing", "body": anyText{}})},
			},
			contains: []string{"update the page “pricing” (denied by the operator)"},
			unchange: func(t *testing.T, w *workspace) {
				if !strings.Contains(w.pages["pricing"].Body, "$10 per seat") {
					t.Error("pricing was changed")
				}
			},
		},
		{
			name:     "delete",
			prompt:   "Delete the old announcement page.",
			denyTurn: 1,
			turns:    [][]wantCall{{c(toolDeletePage, slug("old-announcement"))}},
			contains: []string{"delete the page “old-announcement” (denied by the operator)"},
			unchange: func(t *testing.T, w *workspace) {
				if _, ok := w.pages["old-announcement"]; !ok {
					t.Error("old-announcement was deleted")
				}
			},
		},
	}
	for _, tt := range tests {
		for _, why := range []string{reason, ""} {
			t.Run(fmt.Sprintf("%s/reason=%q", tt.name, why), func(t *testing.T) {
				ws := seedWorkspace()
				s := &session{ws: ws, denyTurn: tt.denyTurn, reason: why}
				got := s.run(t, nil, tt.prompt)
				// The run ends with the denied turn: no retry, no further call.
				checkTurns(t, got.turns, tt.turns)
				contains := append([]string{"denied", "I did not retry"}, tt.contains...)
				excludes := []string{"DENIED by the operator", "Do not retry"}
				if why != "" {
					contains = append(contains, "Reason given: “"+why+"”")
				} else {
					contains = append(contains, "without giving a reason")
					excludes = append(excludes, "no reason given")
				}
				checkText(t, got.final, contains, excludes)
				if tt.unchange != nil {
					tt.unchange(t, ws)
				}
			})
		}
	}
}

func TestNotPermittedCallIsReportedBesideTheDoneOne(t *testing.T) {
	ws := seedWorkspace()
	s := &session{ws: ws, notPermitted: []string{toolPublishPage}}
	got := s.run(t, nil, "Check the word count of the release notes and publish them.")
	checkTurns(t, got.turns, [][]wantCall{{c(toolWordCount, slug("release-notes")), c(toolPublishPage, slug("release-notes"))}})
	n := words(ws.pages["release-notes"].Body)
	checkText(t, got.final, []string{
		fmt.Sprintf("Done:\n- counted the words of the page “release-notes”: %d words", n),
		"publish the page “release-notes” (not run: the tool is no longer permitted",
	}, nil)
}

func TestToolsNotOffered(t *testing.T) {
	tests := []struct {
		prompt  string
		missing string
	}{
		{"Publish the about page.", toolPublishPage},
		{"Publish all draft pages.", toolPublishPage},
		{"Check the word count of the release notes and publish them.", toolPublishPage},
		{"Delete the old announcement page.", toolDeletePage},
		{"Create a page announcing the winter sale, then publish it.", toolCreatePage},
		{"Update the pricing page to say the Team plan now costs $12 per seat.", toolUpdatePage},
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			s := &session{ws: seedWorkspace(), tools: readTools}
			got := s.run(t, nil, tt.prompt)
			checkTurns(t, got.turns, nil)
			checkText(t, got.final, []string{"This agent cannot", tt.missing, "not offered", "changed nothing"}, nil)
		})
	}
	t.Run("no tools at all", func(t *testing.T) {
		s := &session{ws: seedWorkspace(), tools: []string{}}
		got := s.run(t, nil, "What time is it?")
		checkTurns(t, got.turns, nil)
		checkText(t, got.final, []string{"cannot tell the time", "current_time", "no tools at all"}, nil)
	})
}

func TestExamplesArePlanned(t *testing.T) {
	for _, e := range Examples() {
		resp, err := New().Generate(context.Background(), engine.ModelRequest{
			Messages: []engine.Message{{Role: engine.RoleUser, Content: e}},
			Tools:    specs(append(slices.Clone(allTools), toolAskOperator)),
		})
		if err != nil {
			t.Fatalf("%q: %v", e, err)
		}
		if len(resp.Message.ToolCalls) == 0 {
			t.Errorf("%q is not planned: %s", e, resp.Message.Content)
		}
	}
}

func TestLaterPromptStartsAfresh(t *testing.T) {
	ws := seedWorkspace()
	s := &session{ws: ws}
	first := s.run(t, nil, "How many words are on the pricing page?")
	second := s.run(t, first.messages, "Publish the about page.")
	checkTurns(t, second.turns, [][]wantCall{{c(toolPublishPage, slug("about"))}})
	if id := second.turns[0][0].ID; id != "call_3_1" {
		t.Errorf("first call of the second prompt has ID %q, want call_3_1", id)
	}
	checkText(t, second.final, []string{"published the page “about”"}, []string{"words"})
}

func TestGenerateErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := engine.ModelRequest{Messages: []engine.Message{{Role: engine.RoleUser, Content: "What time is it?"}}, Tools: specs(allTools)}
	if _, err := New().Generate(ctx, req); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: got %v, want context.Canceled", err)
	}
	noPrompt := engine.ModelRequest{Messages: []engine.Message{{Role: engine.RoleSystem, Content: "system"}}}
	if _, err := New().Generate(context.Background(), noPrompt); err == nil {
		t.Error("transcript without a user message: want an error")
	}
}

func TestUsage(t *testing.T) {
	req := engine.ModelRequest{
		Messages: []engine.Message{
			{Role: engine.RoleSystem, Content: strings.Repeat("s", 400)},
			{Role: engine.RoleUser, Content: "What time is it?"},
		},
		Tools: specs(allTools),
	}
	resp, err := New().Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	chars := 400 + len("What time is it?")
	for _, s := range req.Tools {
		chars += len(s.Name) + len(s.Description) + len(s.Parameters)
	}
	out := len(resp.Message.Content)
	for _, c := range resp.Message.ToolCalls {
		out += len(c.Name) + len(c.Arguments)
	}
	want := engine.Usage{PromptTokens: chars / 4, CompletionTokens: out / 4}
	want.TotalTokens = want.PromptTokens + want.CompletionTokens
	if resp.Usage != want {
		t.Errorf("usage %+v, want %+v", resp.Usage, want)
	}
}

func TestDenialReason(t *testing.T) {
	tests := []struct{ content, want string }{
		{denialText("too risky"), "too risky"},
		{denialText("wait. Legal has not signed off."), "wait. Legal has not signed off"},
		{denialText(""), ""},
		{engine.DeniedPrefix + ": not today", "not today"},
		{engine.DeniedPrefix + " (reason: “ask Sam”). Do not retry.", "(reason: “ask Sam”)"},
		{engine.DeniedPrefix, ""},
	}
	for _, tt := range tests {
		if got := denialReason(tt.content); got != tt.want {
			t.Errorf("denialReason(%q) = %q, want %q", tt.content, got, tt.want)
		}
	}
}

func TestPageIn(t *testing.T) {
	tests := []struct{ prompt, want string }{
		{"How many words are on the pricing page?", "pricing"},
		{"publish the release notes", "release-notes"},
		{"publish the release-notes page", "release-notes"},
		{"Delete the old announcement page.", "old-announcement"},
		{"Publish the about page.", "about"},
		{"publish the About Us page", "about"},
		{"how long is the FAQ?", "faq"},
		{"word count of the welcome page and the pricing page", "welcome"},
		{"publish `winter-sale`", "winter-sale"},
		{"publish the winter sale page", "winter-sale"},
		{"publish it", ""},
		{"Set the price on the offers page to $12.", "offers"},
		{"update the text of the team offsite page", "team-offsite"},
		{"Publish a draft page.", ""},
	}
	for _, tt := range tests {
		if got := pageIn(normalise(tt.prompt)); got != tt.want {
			t.Errorf("pageIn(%q) = %q, want %q", tt.prompt, got, tt.want)
		}
	}
}

func TestDescription(t *testing.T) {
	if Name != "demo" {
		t.Errorf("Name = %q", Name)
	}
	if !strings.Contains(Description, "scripted demo model") || !strings.Contains(Description, "not a language model") {
		t.Errorf("Description = %q", Description)
	}
	var _ engine.Model = New()
}

// TestKeptPlansAnswerAsFresh checks the scripts a Model keeps: one Model
// asked by many runs at once, with and without the file tools, answers each
// as a new Model would, and keeps at most maxPlans scripts.
func TestKeptPlansAnswerAsFresh(t *testing.T) {
	workspace := specs(append(slices.Clone(allTools), toolAskOperator))
	withFiles := specs(append(slices.Clone(allTools), toolAskOperator, toolReadTextFile, toolListDirectory, toolWriteFile))
	prompts := append(append(Examples(), FileExamples()...), "Publish the about page. If you are refused, try again.")
	shared := New()
	generate := func(m *Model, prompt string, tools []engine.ToolSpec) (engine.Message, error) {
		resp, err := m.Generate(context.Background(), engine.ModelRequest{
			Messages: []engine.Message{{Role: engine.RoleUser, Content: prompt}}, Tools: tools})
		return resp.Message, err
	}
	errs := make(chan error, 4*len(prompts))
	for range 2 {
		for _, p := range prompts {
			for _, tools := range [][]engine.ToolSpec{workspace, withFiles} {
				go func() {
					got, err := generate(shared, p, tools)
					if err != nil {
						errs <- err
						return
					}
					want, err := generate(New(), p, tools)
					if err != nil {
						errs <- err
						return
					}
					if !reflect.DeepEqual(got, want) {
						errs <- fmt.Errorf("%q: kept plan gave %+v, a new model %+v", p, got, want)
						return
					}
					errs <- nil
				}()
			}
		}
	}
	for range 4 * len(prompts) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := len(shared.plans); n != 2*len(prompts) {
		t.Errorf("%d plans kept for %d prompts with two tool sets", n, len(prompts))
	}
	for i := range maxPlans + 10 {
		if _, err := generate(shared, fmt.Sprintf("Delete page %d.", i), workspace); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(shared.plans); n > maxPlans {
		t.Errorf("%d plans kept, more than %d", n, maxPlans)
	}
}
