package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"countersign/engine"
	"countersign/engine/models/demo"
	"countersign/engine/tools"
)

// step is what the operator does at a suspension: approve, or deny with a
// reason. want lists the tools of the pending turn.
type step struct {
	want    []string
	approve bool
	reason  string
}

func TestDemoScenariosEndToEnd(t *testing.T) {
	cases := []struct {
		name       string
		agent      string
		prompt     string
		steps      []step
		writes     int
		answerHas  []string
		check      func(t *testing.T, ws *tools.Memory)
		iterations int
	}{
		{name: "read-only question", agent: "editor", prompt: "How many words are on the pricing page?",
			answerHas: []string{"pricing"}, iterations: 2},
		{name: "one write approved", agent: "editor", prompt: "Publish the about page.",
			steps: []step{{want: []string{"publish_page"}, approve: true}}, writes: 1, iterations: 2,
			check: func(t *testing.T, ws *tools.Memory) { wantStatus(t, ws, "about", tools.StatusPublished) }},
		{name: "mixed turn waits whole", agent: "editor", prompt: "Check the word count of the release notes and publish them.",
			steps: []step{{want: []string{"word_count", "publish_page"}, approve: true}}, writes: 1, iterations: 2,
			check: func(t *testing.T, ws *tools.Memory) { wantStatus(t, ws, "release-notes", tools.StatusPublished) }},
		{name: "suspends twice", agent: "editor", prompt: "Create a page announcing the winter sale, then publish it.",
			steps:  []step{{want: []string{"create_page"}, approve: true}, {want: []string{"publish_page"}, approve: true}},
			writes: 2, iterations: 3,
			check: func(t *testing.T, ws *tools.Memory) { wantStatus(t, ws, "winter-sale", tools.StatusPublished) }},
		{name: "several writes in one turn", agent: "editor", prompt: "Publish all draft pages.",
			steps: []step{{want: []string{"publish_page", "publish_page", "publish_page"}, approve: true}}, writes: 3, iterations: 3,
			check: func(t *testing.T, ws *tools.Memory) {
				for _, s := range []string{"about", "release-notes", "old-announcement"} {
					wantStatus(t, ws, s, tools.StatusPublished)
				}
			}},
		{name: "update with diff", agent: "editor", prompt: "Update the pricing page to say the Team plan now costs $12 per seat.",
			steps: []step{{want: []string{"update_page"}, approve: true}}, writes: 1, iterations: 3,
			check: func(t *testing.T, ws *tools.Memory) {
				p, _ := ws.GetPage(context.Background(), "pricing")
				if !strings.Contains(p.Body, "$12 per seat") || strings.Contains(p.Body, "$10 per seat") {
					t.Fatalf("pricing body not updated: %q", p.Body)
				}
			}},
		{name: "denied write acknowledged", agent: "editor", prompt: "Delete the old announcement page.",
			steps: []step{{want: []string{"delete_page"}, approve: false, reason: "legal wants it kept"}}, writes: 0, iterations: 2,
			answerHas: []string{"legal wants it kept"},
			check:     func(t *testing.T, ws *tools.Memory) { wantStatus(t, ws, "old-announcement", tools.StatusDraft) }},
		{name: "denied create does not go on to publish", agent: "editor", prompt: "Create a page announcing the winter sale, then publish it.",
			steps: []step{{want: []string{"create_page"}, approve: false, reason: "sale is cancelled"}}, writes: 0, iterations: 2,
			answerHas: []string{"sale is cancelled"}},
		{name: "four-eyes agent suspends the same", agent: "editor-4eyes", prompt: "Publish the about page.",
			steps: []step{{want: []string{"publish_page"}, approve: true}}, writes: 1, iterations: 2},
		{name: "researcher cannot write", agent: "researcher", prompt: "Publish the about page.", writes: 0, iterations: 1},
		{name: "unknown prompt", agent: "editor", prompt: "Write me a sonnet about the sea.", writes: 0, iterations: 1,
			answerHas: []string{"demo"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := func() time.Time { return time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC) }
			ws := tools.NewMemory(now, tools.SeedPages()...)
			agent, ok := tools.AgentByName(tools.Agents(ws, now), tc.agent)
			if !ok {
				t.Fatalf("no agent %q", tc.agent)
			}
			var evs []engine.Event
			rec := engine.RecorderFunc(func(ctx context.Context, ev engine.Event) error { evs = append(evs, ev); return nil })
			loop := engine.NewLoop(agent, demo.New(), rec)

			res, err := loop.Run(context.Background(), engine.Request{Prompt: tc.prompt})
			for i, st := range tc.steps {
				var are *engine.ApprovalRequiredError
				if !errors.As(err, &are) {
					t.Fatalf("step %d: want a suspension, got %v", i, err)
				}
				var names []string
				for _, c := range are.State.Pending {
					names = append(names, c.Name)
				}
				if strings.Join(names, ",") != strings.Join(st.want, ",") {
					t.Fatalf("step %d: pending %v, want %v", i, names, st.want)
				}
				if ws.Writes() != i {
					t.Fatalf("step %d: %d writes ran before approval", i, ws.Writes())
				}
				// Every suspension survives the codec, as it would in the store.
				blob, err2 := engine.EncodeState(are.State)
				if err2 != nil {
					t.Fatal(err2)
				}
				state, err2 := engine.DecodeState(blob)
				if err2 != nil {
					t.Fatal(err2)
				}
				res, err = loop.Resume(context.Background(), state, engine.Decision{
					Verdict: verdictOf(st.approve), Digest: state.Digest(), By: "ann", Reason: st.reason})
			}
			if err != nil {
				t.Fatalf("run did not finish: %v", err)
			}
			if res.Termination != engine.TermCompleted || res.Answer == "" {
				t.Fatalf("result %+v", res)
			}
			if res.Iterations != tc.iterations {
				t.Fatalf("iterations %d, want %d", res.Iterations, tc.iterations)
			}
			if res.Usage.TotalTokens <= 0 || res.Usage.TotalTokens != res.Usage.PromptTokens+res.Usage.CompletionTokens {
				t.Fatalf("usage %+v", res.Usage)
			}
			if ws.Writes() != tc.writes {
				t.Fatalf("writes %d, want %d", ws.Writes(), tc.writes)
			}
			for _, s := range tc.answerHas {
				if !strings.Contains(strings.ToLower(res.Answer), strings.ToLower(s)) {
					t.Fatalf("answer %q lacks %q", res.Answer, s)
				}
			}
			// The event stream holds every step: one model turn per
			// iteration and one finished event with the run's totals.
			turns, finished := 0, 0
			for _, ev := range evs {
				switch ev.Kind {
				case engine.EventModelTurn:
					turns++
				case engine.EventFinished:
					finished++
					if ev.Totals.Iterations != res.Iterations || ev.Totals.Usage != res.Usage {
						t.Fatalf("finished totals %+v, result %d %+v", ev.Totals, res.Iterations, res.Usage)
					}
				}
			}
			if turns != res.Iterations || finished != 1 {
				t.Fatalf("events: %d model turns, %d finished", turns, finished)
			}
			if tc.check != nil {
				tc.check(t, ws)
			}
		})
	}
}

func wantStatus(t *testing.T, ws *tools.Memory, slug, status string) {
	t.Helper()
	p, err := ws.GetPage(context.Background(), slug)
	if err != nil {
		t.Fatalf("page %s: %v", slug, err)
	}
	if p.Status != status {
		t.Fatalf("page %s is %s, want %s", slug, p.Status, status)
	}
}

func TestUpdatePreviewShowsDiff(t *testing.T) {
	now := time.Now
	ws := tools.NewMemory(now, tools.SeedPages()...)
	agent, _ := tools.AgentByName(tools.Agents(ws, now), "editor")
	loop := engine.NewLoop(agent, demo.New(), nil)
	_, err := loop.Run(context.Background(), engine.Request{Prompt: "Update the pricing page to say the Team plan now costs $12 per seat."})
	var are *engine.ApprovalRequiredError
	if !errors.As(err, &are) || len(are.State.Previews) != 1 {
		t.Fatalf("want one preview, got %v", err)
	}
	lines := strings.Join(are.State.Previews[0].Lines, "\n")
	if !strings.Contains(lines, "- ") || !strings.Contains(lines, "$10 per seat") || !strings.Contains(lines, "+ ") || !strings.Contains(lines, "$12 per seat") {
		t.Fatalf("preview is not a diff of the change:\n%s", lines)
	}
}

func verdictOf(approve bool) engine.Verdict {
	if approve {
		return engine.VerdictApprove
	}
	return engine.VerdictDeny
}
