package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"countersign/engine"
)

// fakeTime is what the fake current_time returns.
const fakeTime = "2026-03-01T12:00:00Z"

// fakePage is a page of the in-test workspace.
type fakePage struct {
	Slug, Title, Body, Status string
}

// workspace is an in-test stand-in for the tools package: it answers the
// workspace tools in their JSON formats.
type workspace struct {
	pages map[string]*fakePage
}

func seedWorkspace() *workspace {
	w := &workspace{pages: map[string]*fakePage{}}
	for _, p := range []fakePage{
		{"welcome", "Welcome to Acme Notes", "# Welcome\n\nAcme Notes is a shared notebook for small teams.", "published"},
		{"pricing", "Pricing", "# Pricing\n\n- Business: the Business plan costs $25 per seat per month.\n" +
			"- Team: shared folders.\n  The Team plan costs $10 per seat per month.\n\nRefunds within 30 days.", "published"},
		{"about", "About us", "# About us\n\nWe are a remote team of twelve.", "draft"},
		{"faq", "Frequently asked questions", "## How do refunds work?\nAsk for a refund within 30 days.", "published"},
		{"release-notes", "Release notes: version 1.2", "# Release notes\n\n- New: search.\n- Fixed: the editor.", "draft"},
		{"old-announcement", "Holiday support hours (December 2023)", "# Holiday support hours\n\nSupport is slow over the holidays.", "draft"},
	} {
		w.pages[p.Slug] = &p
	}
	return w
}

func (w *workspace) sorted() []*fakePage {
	var out []*fakePage
	for _, p := range w.pages {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *fakePage) int { return strings.Compare(a.Slug, b.Slug) })
	return out
}

func words(body string) int { return len(strings.Fields(body)) }

func encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// exec runs one call against the workspace and returns its result text and
// whether it is an error.
func (w *workspace) exec(c engine.ToolCall) (string, bool) {
	var args struct {
		Slug  string  `json:"slug"`
		Query string  `json:"query"`
		Title *string `json:"title"`
		Body  *string `json:"body"`
	}
	if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
		return "invalid arguments: " + err.Error(), true
	}
	page := func() (*fakePage, string, bool) {
		p, ok := w.pages[args.Slug]
		if !ok {
			return nil, fmt.Sprintf("page %q not found", args.Slug), true
		}
		return p, "", false
	}
	summary := func(p *fakePage) string {
		return encode(map[string]string{"slug": p.Slug, "title": p.Title, "status": p.Status, "updated_at": fakeTime})
	}
	switch c.Name {
	case toolListPages:
		var out []map[string]string
		for _, p := range w.sorted() {
			out = append(out, map[string]string{"slug": p.Slug, "title": p.Title, "status": p.Status, "updated_at": fakeTime})
		}
		return encode(out), false
	case toolGetPage:
		p, msg, bad := page()
		if bad {
			return msg, true
		}
		return encode(map[string]string{"slug": p.Slug, "title": p.Title, "body": p.Body, "status": p.Status, "updated_at": fakeTime}), false
	case toolSearchPages:
		out := []map[string]string{}
		for _, p := range w.sorted() {
			if strings.Contains(strings.ToLower(p.Title+" "+p.Body), strings.ToLower(args.Query)) {
				out = append(out, map[string]string{"slug": p.Slug, "title": p.Title, "snippet": "…" + args.Query + "…"})
			}
		}
		return encode(out), false
	case toolWordCount:
		p, msg, bad := page()
		if bad {
			return msg, true
		}
		return encode(map[string]any{"slug": p.Slug, "words": words(p.Body)}), false
	case toolCurrentTime:
		return encode(map[string]string{"time": fakeTime}), false
	case toolCreatePage:
		if _, ok := w.pages[args.Slug]; ok {
			return fmt.Sprintf("page %q already exists", args.Slug), true
		}
		if args.Title == nil || args.Body == nil {
			return "title and body are required", true
		}
		p := &fakePage{Slug: args.Slug, Title: *args.Title, Body: *args.Body, Status: "draft"}
		w.pages[p.Slug] = p
		return summary(p), false
	case toolUpdatePage:
		p, msg, bad := page()
		if bad {
			return msg, true
		}
		if args.Title != nil {
			p.Title = *args.Title
		}
		if args.Body != nil {
			p.Body = *args.Body
		}
		return summary(p), false
	case toolPublishPage:
		p, msg, bad := page()
		if bad {
			return msg, true
		}
		p.Status = "published"
		return summary(p), false
	case toolDeletePage:
		if _, msg, bad := page(); bad {
			return msg, true
		}
		delete(w.pages, args.Slug)
		return encode(map[string]any{"slug": args.Slug, "deleted": true}), false
	}
	return fmt.Sprintf("unknown tool %q", c.Name), true
}

var (
	readTools  = []string{toolListPages, toolGetPage, toolSearchPages, toolWordCount, toolCurrentTime}
	writeTools = []string{toolCreatePage, toolUpdatePage, toolPublishPage, toolDeletePage}
	allTools   = append(slices.Clone(readTools), writeTools...)
)

func specs(names []string) []engine.ToolSpec {
	out := make([]engine.ToolSpec, len(names))
	for i, n := range names {
		out[i] = engine.ToolSpec{Name: n, Description: "The " + n + " tool of the demo workspace.", Parameters: json.RawMessage(`{"type":"object"}`)}
	}
	return out
}

// denialText mirrors the result the loop gives a denied call.
func denialText(reason string) string {
	if reason == "" {
		reason = "no reason given"
	}
	return engine.DeniedPrefix + ". Reason: " + reason + ". This call was not executed. " +
		"Do not retry it or try to reach the same effect another way; tell the user it was not done."
}

// session drives the model like the loop does, against a workspace.
type session struct {
	ws    *workspace
	tools []string
	// denyTurn, when positive, denies the denyTurn-th turn that holds a
	// write (all its calls), with reason.
	denyTurn int
	reason   string
	// notPermitted answers calls of these tools with a refusal.
	notPermitted []string
}

// outcome of a session: the tool-call turns and the final answer.
type transcriptRun struct {
	turns    [][]engine.ToolCall
	final    string
	messages []engine.Message
}

var reCallID = regexp.MustCompile(`^call_(\d+)_(\d+)$`)

// run sends prompt after the messages so far and loops until the model
// answers with text, checking on every step what must always hold.
func (s *session) run(t *testing.T, msgs []engine.Message, prompt string) transcriptRun {
	t.Helper()
	if s.tools == nil {
		s.tools = allTools
	}
	if len(msgs) == 0 {
		msgs = []engine.Message{{Role: engine.RoleSystem, Content: "You are an agent running inside countersign."}}
	}
	msgs = append(msgs, engine.Message{Role: engine.RoleUser, Content: prompt})
	seen := map[string]bool{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			seen[c.ID] = true
		}
	}
	var out transcriptRun
	writeTurns := 0
	m := New()
	for step := 0; step < 8; step++ {
		req := engine.ModelRequest{Messages: slices.Clone(msgs), Tools: specs(s.tools)}
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		again, err := m.Generate(context.Background(), req)
		if err != nil || !reflect.DeepEqual(resp, again) {
			t.Fatalf("Generate is not deterministic:\n%+v\n%+v (%v)", resp, again, err)
		}
		u := resp.Usage
		if u.PromptTokens <= 0 || u.CompletionTokens <= 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
			t.Fatalf("usage %+v: want positive counts with total = prompt + completion", u)
		}
		msg := resp.Message
		if msg.Role != engine.RoleAssistant {
			t.Fatalf("role %q, want assistant", msg.Role)
		}
		iteration := 1
		for _, m := range msgs {
			if m.Role == engine.RoleAssistant {
				iteration++
			}
		}
		for i, c := range msg.ToolCalls {
			if want := fmt.Sprintf("call_%d_%d", iteration, i+1); c.ID != want || !reCallID.MatchString(c.ID) || seen[c.ID] {
				t.Fatalf("call ID %q: want %q, unique in the transcript", c.ID, want)
			}
			seen[c.ID] = true
			if !slices.Contains(s.tools, c.Name) {
				t.Fatalf("called %s, which is not offered", c.Name)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, []byte(c.Arguments)); err != nil || compact.String() != c.Arguments {
				t.Fatalf("arguments %q are not compact JSON (%v)", c.Arguments, err)
			}
		}
		msgs = append(msgs, msg)
		if len(msg.ToolCalls) == 0 {
			if strings.TrimSpace(msg.Content) == "" {
				t.Fatal("final answer is empty")
			}
			out.final, out.messages = msg.Content, msgs
			return out
		}
		out.turns = append(out.turns, msg.ToolCalls)

		deny := false
		if slices.ContainsFunc(msg.ToolCalls, func(c engine.ToolCall) bool { return slices.Contains(writeTools, c.Name) }) {
			writeTurns++
			deny = writeTurns == s.denyTurn
		}
		for _, c := range msg.ToolCalls {
			res := engine.Message{Role: engine.RoleTool, ToolCallID: c.ID, ToolName: c.Name}
			switch {
			case deny:
				res.Content, res.IsError = denialText(s.reason), true
			case slices.Contains(s.notPermitted, c.Name):
				res.Content, res.IsError = engine.NotPermittedPrefix+": "+c.Name+" is not offered any more, so it did not run.", true
			default:
				res.Content, res.IsError = s.ws.exec(c)
			}
			msgs = append(msgs, res)
		}
	}
	t.Fatalf("no final answer after 8 model calls; turns: %v", out.turns)
	return out
}
