package demo

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"countersign/engine"
	"countersign/engine/tools"
)

// The tests in this file run the demo model through the real loop, over the
// real tools and the seeded workspace, with the agent presets, and decide
// each suspension with per-call verdicts through Resume. The model so reads
// the texts the engine really writes (EDITED, ANSWERED, DENIED).

// decider returns the decision on a suspended turn.
type decider func(t *testing.T, st *engine.SuspendedState) engine.Decision

// loopRun is what a run through the loop did.
type loopRun struct {
	ws      *tools.Memory
	res     *engine.Result
	turns   [][]engine.ToolCall // the model's tool-call turns, as proposed
	pending [][]string          // the tools of each suspended turn
}

// runLoop runs prompt with the preset agent and decides each suspension in
// order; the run must then finish.
func runLoop(t *testing.T, agent, prompt string, prepare func(ws *tools.Memory), decide ...decider) loopRun {
	t.Helper()
	now := func() time.Time { return time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC) }
	ws := tools.NewMemory(now, tools.SeedPages()...)
	if prepare != nil {
		prepare(ws)
	}
	a, ok := tools.AgentByName(tools.Agents(ws, now), agent)
	if !ok {
		t.Fatalf("no agent %q", agent)
	}
	loop := engine.NewLoop(a, New(), nil)
	out := loopRun{ws: ws}
	res, err := loop.Run(context.Background(), engine.Request{Prompt: prompt})
	for i, d := range decide {
		var are *engine.ApprovalRequiredError
		if !errors.As(err, &are) {
			t.Fatalf("suspension %d: want one, got %v (answer %q)", i+1, err, answerOf(res))
		}
		// Every suspension survives the codec, as it does in the store.
		blob, cerr := engine.EncodeState(are.State)
		if cerr != nil {
			t.Fatal(cerr)
		}
		st, cerr := engine.DecodeState(blob)
		if cerr != nil {
			t.Fatal(cerr)
		}
		var names []string
		for _, c := range st.Pending {
			names = append(names, c.Name)
		}
		out.pending = append(out.pending, names)
		res, err = loop.Resume(context.Background(), st, d(t, st))
	}
	if err != nil {
		t.Fatalf("run did not finish: %v", err)
	}
	if res.Termination != engine.TermCompleted || strings.TrimSpace(res.Answer) == "" {
		t.Fatalf("result %+v", res)
	}
	out.res = res
	for _, m := range res.Transcript {
		if m.Role == engine.RoleAssistant && len(m.ToolCalls) > 0 {
			out.turns = append(out.turns, m.ToolCalls)
		}
	}
	return out
}

func answerOf(res *engine.Result) string {
	if res == nil {
		return ""
	}
	return res.Answer
}

// verdicts decides each pending call with the verdict of its slug or
// question; by slug, a call without one is approved.
func verdicts(by string, of func(c engine.ToolCall) engine.CallVerdict) decider {
	return func(t *testing.T, st *engine.SuspendedState) engine.Decision {
		d := engine.Decision{Digest: st.Digest(), By: by}
		for _, c := range st.Pending {
			cv := of(c)
			cv.CallID = c.ID
			if cv.Verdict == "" {
				cv.Verdict = engine.VerdictApprove
			}
			d.Calls = append(d.Calls, cv)
		}
		return d
	}
}

// approveAll approves the whole turn.
func approveAll(t *testing.T, st *engine.SuspendedState) engine.Decision {
	return engine.Decision{Verdict: engine.VerdictApprove, Digest: st.Digest(), By: "ann"}
}

// answerWith answers every pending call with text.
func answerWith(text string) decider {
	return verdicts("ann", func(engine.ToolCall) engine.CallVerdict {
		return engine.CallVerdict{Verdict: engine.VerdictAnswer, Text: text}
	})
}

func pageOf(t *testing.T, ws *tools.Memory, slug string) tools.Page {
	t.Helper()
	p, err := ws.GetPage(context.Background(), slug)
	if err != nil {
		t.Fatalf("page %s: %v", slug, err)
	}
	return p
}

func wantStatuses(t *testing.T, ws *tools.Memory, want map[string]string) {
	t.Helper()
	for slug, status := range want {
		if got := pageOf(t, ws, slug).Status; got != status {
			t.Errorf("page %s is %s, want %s", slug, got, status)
		}
	}
}

func wantPending(t *testing.T, got [][]string, want ...[]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("suspended turns %v, want %v", got, want)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("suspended turns %v, want %v", got, want)
		}
	}
}

// The operator approves two of the three publications of one turn and
// denies the third: the answer says which were published, which not and
// why, and nothing is retried.
func TestPartialApproval(t *testing.T) {
	t.Run("one reason", func(t *testing.T) {
		r := runLoop(t, "editor", "Publish all draft pages.", nil,
			verdicts("ann", func(c engine.ToolCall) engine.CallVerdict {
				if slugOf(c) == "old-announcement" {
					return engine.CallVerdict{Verdict: engine.VerdictDeny, Text: "It is out of date; delete it instead."}
				}
				return engine.CallVerdict{}
			}))
		checkTurns(t, r.turns, [][]wantCall{
			{c(toolListPages, nil)},
			{c(toolPublishPage, slug("about")), c(toolPublishPage, slug("old-announcement")), c(toolPublishPage, slug("release-notes"))},
		})
		wantPending(t, r.pending, []string{toolPublishPage, toolPublishPage, toolPublishPage})
		checkText(t, r.res.Answer, []string{
			"The operator approved part of the request and denied the rest, so I did only what was approved and stopped.",
			"Reason given: “It is out of date; delete it instead”.",
			"Done:\n- listed the pages\n- published the page “about”\n- published the page “release-notes”\n",
			"Not done:\n- publish the page “old-announcement” (denied by the operator)\n",
			"I did not retry anything",
		}, []string{engine.DeniedPrefix, "Do not retry", "published the page “old-announcement”"})
		wantStatuses(t, r.ws, map[string]string{"about": "published", "release-notes": "published", "old-announcement": "draft"})
		if r.res.Iterations != 3 {
			t.Errorf("%d iterations, want 3", r.res.Iterations)
		}
	})
	t.Run("a reason each", func(t *testing.T) {
		r := runLoop(t, "editor", "Publish all draft pages.", nil,
			verdicts("ann", func(c engine.ToolCall) engine.CallVerdict {
				switch slugOf(c) {
				case "about":
					return engine.CallVerdict{Verdict: engine.VerdictDeny, Text: "The team photo is missing."}
				case "old-announcement":
					return engine.CallVerdict{Verdict: engine.VerdictDeny, Text: "It is out of date."}
				}
				return engine.CallVerdict{}
			}))
		checkText(t, r.res.Answer, []string{
			"approved part of the request and denied the rest",
			"The reasons are below.",
			"Done:\n- listed the pages\n- published the page “release-notes”\n",
			"- publish the page “about” (denied by the operator: “The team photo is missing”)",
			"- publish the page “old-announcement” (denied by the operator: “It is out of date”)",
		}, []string{"Reason given"})
		wantStatuses(t, r.ws, map[string]string{"about": "draft", "release-notes": "published", "old-announcement": "draft"})
	})
	t.Run("denied without reasons", func(t *testing.T) {
		r := runLoop(t, "editor", "Publish all draft pages.", nil,
			verdicts("ann", func(c engine.ToolCall) engine.CallVerdict {
				if slugOf(c) != "about" {
					return engine.CallVerdict{Verdict: engine.VerdictDeny}
				}
				return engine.CallVerdict{}
			}))
		checkText(t, r.res.Answer, []string{
			"denied the rest without giving a reason, so I did only what was approved",
			"published the page “about”",
			"- publish the page “old-announcement” (denied by the operator)\n- publish the page “release-notes” (denied by the operator)",
		}, []string{"no reason given"})
	})
}

// The operator edits a call before it runs: the answer tells what ran, not
// what the model proposed.
func TestEditedCall(t *testing.T) {
	edit := func(from, to string) decider {
		return verdicts("ann", func(c engine.ToolCall) engine.CallVerdict {
			if c.Name != toolUpdatePage {
				return engine.CallVerdict{}
			}
			return engine.CallVerdict{Verdict: engine.VerdictEdit, Arguments: strings.Replace(c.Arguments, from, to, 1)}
		})
	}
	t.Run("the price", func(t *testing.T) {
		r := runLoop(t, "editor", "Set the price on the pricing page to $12.", nil, edit("$12 per seat", "$14 per seat"))
		checkTurns(t, r.turns, [][]wantCall{
			{c(toolGetPage, slug("pricing"))},
			{c(toolUpdatePage, map[string]any{"slug": "pricing", "body": anyText{}})},
		})
		if !strings.Contains(r.turns[1][0].Arguments, "$12 per seat") {
			t.Fatalf("the model proposed %s", r.turns[1][0].Arguments)
		}
		checkText(t, r.res.Answer, []string{
			"The operator edited my update before it ran: on the page “pricing”, the price is now $14 per seat, not the $12 I proposed.",
		}, []string{"is now $12", "I updated", engine.EditedPrefix})
		if b := pageOf(t, r.ws, "pricing").Body; !strings.Contains(b, "$14 per seat") {
			t.Errorf("pricing body:\n%s", b)
		}
	})
	t.Run("the plan's price", func(t *testing.T) {
		r := runLoop(t, "editor-4eyes", "Update the pricing page to say the Team plan now costs $12 per seat.", nil,
			func(t *testing.T, st *engine.SuspendedState) engine.Decision {
				d := edit("$12 per seat", "$15 per seat")(t, st)
				d.By = "bob" // four-eyes: not the initiator
				return d
			})
		checkText(t, r.res.Answer, []string{"on the page “pricing”, the Team plan now costs $15 per seat, not the $12 I proposed."}, nil)
	})
	t.Run("kept the price", func(t *testing.T) {
		r := runLoop(t, "editor", "Set the price on the pricing page to $12.", nil,
			edit("Prices are in US dollars", "Prices are in US dollars (USD)"))
		checkText(t, r.res.Answer, []string{"I updated the page “pricing”: the price is now $12 per seat. The operator edited my update before it ran but kept that price."}, nil)
	})
	t.Run("another page", func(t *testing.T) {
		r := runLoop(t, "editor", "Publish the about page.", nil,
			verdicts("ann", func(engine.ToolCall) engine.CallVerdict {
				return engine.CallVerdict{Verdict: engine.VerdictEdit, Arguments: `{"slug":"release-notes"}`}
			}))
		checkText(t, r.res.Answer, []string{
			"I published the page “release-notes”.",
			"The operator edited my call to publish the page “about” before it ran, so it published the page “release-notes” instead.",
		}, []string{"published the page “about”"})
		wantStatuses(t, r.ws, map[string]string{"about": "draft", "release-notes": "published"})
	})
	t.Run("the created page is the one published", func(t *testing.T) {
		r := runLoop(t, "editor", "Create a page announcing the winter sale, then publish it.", nil,
			verdicts("ann", func(c engine.ToolCall) engine.CallVerdict {
				return engine.CallVerdict{Verdict: engine.VerdictEdit, Arguments: strings.Replace(c.Arguments, `"winter-sale"`, `"winter-deals"`, 1)}
			}),
			approveAll)
		checkTurns(t, r.turns, [][]wantCall{
			{c(toolCreatePage, map[string]any{"slug": "winter-sale", "title": "Winter sale", "body": anyText{}})},
			{c(toolPublishPage, slug("winter-deals"))},
		})
		checkText(t, r.res.Answer, []string{"I created the page “winter-deals” titled “Winter sale” and published it.",
			"The operator edited my call to create the page “winter-sale” before it ran, so it created the page “winter-deals” instead."}, nil)
		wantStatuses(t, r.ws, map[string]string{"winter-deals": "published"})
	})
	t.Run("in a turn with a denial", func(t *testing.T) {
		r := runLoop(t, "editor", "Publish all draft pages.", nil,
			verdicts("ann", func(c engine.ToolCall) engine.CallVerdict {
				switch slugOf(c) {
				case "about":
					return engine.CallVerdict{Verdict: engine.VerdictEdit, Arguments: `{"slug":"faq"}`}
				case "release-notes":
					return engine.CallVerdict{Verdict: engine.VerdictDeny, Text: "Not before Monday."}
				}
				return engine.CallVerdict{}
			}))
		checkText(t, r.res.Answer, []string{
			"- published the page “faq” (as the operator edited it before it ran)",
			"- published the page “old-announcement”\n",
			"- publish the page “release-notes” (denied by the operator)",
			"Reason given: “Not before Monday”",
		}, nil)
	})
}

// The operator answers a write call in its place: the tool does not run,
// and the answer passes the operator's words on.
func TestAnswerInPlaceOfACall(t *testing.T) {
	const frozen = "Not now, the page is frozen until Monday."
	t.Run("publish", func(t *testing.T) {
		r := runLoop(t, "editor", "Publish the about page.", nil, answerWith(frozen))
		checkText(t, r.res.Answer, []string{
			"Instead of letting me publish the page “about”, the operator answered: “" + frozen + "”\n",
			"Not done:\n- publish the page “about” (not run: the operator answered instead)",
			"I did not retry anything",
		}, []string{engine.AnsweredPrefix, "Done:", "denied"})
		wantStatuses(t, r.ws, map[string]string{"about": "draft"})
		if r.res.Iterations != 2 || r.ws.Writes() != 0 {
			t.Errorf("%d iterations and %d writes, want 2 and 0", r.res.Iterations, r.ws.Writes())
		}
	})
	t.Run("the first of two steps", func(t *testing.T) {
		r := runLoop(t, "editor", "Create a page announcing the winter sale, then publish it.", nil,
			answerWith("The sale is not approved yet.\nAsk marketing."))
		checkTurns(t, r.turns, [][]wantCall{{c(toolCreatePage, map[string]any{"slug": "winter-sale", "title": "Winter sale", "body": anyText{}})}})
		checkText(t, r.res.Answer, []string{
			"the operator answered: “The sale is not approved yet. Ask marketing.”",
			"- create the page “winter-sale” (not run: the operator answered instead)\n- publish the page “winter-sale” (not attempted)",
		}, nil)
	})
	t.Run("one of several", func(t *testing.T) {
		r := runLoop(t, "editor", "Check the word count of the release notes and publish them.", nil,
			verdicts("ann", func(c engine.ToolCall) engine.CallVerdict {
				if c.Name == toolPublishPage {
					return engine.CallVerdict{Verdict: engine.VerdictAnswer, Text: frozen}
				}
				return engine.CallVerdict{}
			}))
		checkText(t, r.res.Answer, []string{
			"Instead of letting me publish the page “release-notes”, the operator answered",
			"Done:\n- counted the words of the page “release-notes”: ",
		}, nil)
		wantStatuses(t, r.ws, map[string]string{"release-notes": "draft"})
	})
}

// A prompt that names a page the workspace lacks, or no page, makes the
// model ask the operator; it goes on with the page the answer names.
func TestQuestionToTheOperator(t *testing.T) {
	allSlugs := []any{"about", "faq", "old-announcement", "pricing", "release-notes", "welcome"}
	t.Run("a page that does not exist", func(t *testing.T) {
		r := runLoop(t, "editor", "Set the price on the offers page to $12.", nil, answerWith("The pricing page."), approveAll)
		checkTurns(t, r.turns, [][]wantCall{
			{c(toolListPages, nil)},
			{c(toolAskOperator, map[string]any{"question": "There is no page “offers”. Which page should I update?", "options": allSlugs})},
			{c(toolGetPage, slug("pricing"))},
			{c(toolUpdatePage, map[string]any{"slug": "pricing", "body": anyText{}})},
		})
		wantPending(t, r.pending, []string{toolAskOperator}, []string{toolUpdatePage})
		checkText(t, r.res.Answer, []string{
			"There is no page “offers”, so I asked the operator, who named “pricing”. I updated the page “pricing”: the price is now $12 per seat.",
		}, nil)
		if b := pageOf(t, r.ws, "pricing").Body; !strings.Contains(b, "$12 per seat") {
			t.Errorf("pricing body:\n%s", b)
		}
	})
	t.Run("no page named", func(t *testing.T) {
		r := runLoop(t, "editor-4eyes", "Publish a draft page.", nil, answerWith("release-notes"),
			func(t *testing.T, st *engine.SuspendedState) engine.Decision {
				return engine.Decision{Verdict: engine.VerdictApprove, Digest: st.Digest(), By: "bob"}
			})
		checkTurns(t, r.turns, [][]wantCall{
			{c(toolListPages, nil)},
			{c(toolAskOperator, map[string]any{"question": "Which page should I publish?", "options": []any{"about", "old-announcement", "release-notes"}})},
			{c(toolPublishPage, slug("release-notes"))},
		})
		checkText(t, r.res.Answer, []string{"I asked the operator which page to publish, and they named “release-notes”. I published the page “release-notes”."}, nil)
		wantStatuses(t, r.ws, map[string]string{"release-notes": "published", "about": "draft"})
	})
	t.Run("the answer names no page", func(t *testing.T) {
		r := runLoop(t, "editor", "Delete the offers page.", nil, answerWith("Never mind."))
		checkTurns(t, r.turns, [][]wantCall{
			{c(toolListPages, nil)},
			{c(toolAskOperator, map[string]any{"question": "There is no page “offers”. Which page should I delete?", "options": allSlugs})},
		})
		checkText(t, r.res.Answer, []string{"I asked the operator which page to delete; they answered “Never mind.”, which names none of the pages", "I changed nothing"}, nil)
		if r.ws.Writes() != 0 {
			t.Errorf("%d writes", r.ws.Writes())
		}
	})
	t.Run("the change after the answer is denied", func(t *testing.T) {
		r := runLoop(t, "editor", "Set the price on the offers page to $12.", nil, answerWith("pricing"),
			func(t *testing.T, st *engine.SuspendedState) engine.Decision {
				return engine.Decision{Verdict: engine.VerdictDeny, Digest: st.Digest(), By: "ann", Reason: "Prices change in January."}
			})
		checkText(t, r.res.Answer, []string{
			"The operator denied the request, so I stopped. Reason given: “Prices change in January”.",
			"Done:\n- listed the pages\n- asked the operator “There is no page “offers”. Which page should I update?”; they answered “pricing”\n- read the page “pricing”\n",
			"Not done:\n- update the page “pricing” (denied by the operator)",
		}, nil)
	})
	t.Run("the page exists after all", func(t *testing.T) {
		r := runLoop(t, "editor", "Set the price on the offers page to $12.", func(ws *tools.Memory) {
			if _, err := ws.CreatePage(context.Background(), tools.Page{Slug: "offers", Title: "Offers", Body: "Seats cost $9 per seat."}); err != nil {
				t.Fatal(err)
			}
		}, approveAll)
		checkTurns(t, r.turns, [][]wantCall{
			{c(toolListPages, nil)},
			{c(toolGetPage, slug("offers"))},
			{c(toolUpdatePage, map[string]any{"slug": "offers", "body": "Seats cost $12 per seat."})},
		})
		checkText(t, r.res.Answer, []string{"I updated the page “offers”: the price is now $12 per seat."}, []string{"asked"})
	})
	t.Run("an agent that cannot ask tries the page", func(t *testing.T) {
		r := runLoop(t, "researcher", "How many words are on the offers page?", nil)
		checkTurns(t, r.turns, [][]wantCall{{c(toolWordCount, slug("offers"))}})
		checkText(t, r.res.Answer, []string{`page "offers" not found`}, nil)
	})
}

// Every example of the editor presets is planned with the editor's tools:
// the two that name no known page start by listing the pages.
func TestEditorExamplesArePlanned(t *testing.T) {
	ws := tools.NewMemory(nil, tools.SeedPages()...)
	editor, _ := tools.AgentByName(tools.Agents(ws, nil), "editor")
	var specs []engine.ToolSpec
	for _, tl := range editor.Tools {
		specs = append(specs, engine.ToolSpec{Name: tl.Name(), Description: tl.Description(), Parameters: tl.Schema()})
	}
	for _, e := range editor.Examples {
		if !slices.Contains(Examples(), e) {
			t.Errorf("%q is not among the demo model's examples", e)
		}
		resp, err := New().Generate(context.Background(), engine.ModelRequest{
			Messages: []engine.Message{{Role: engine.RoleUser, Content: e}}, Tools: specs})
		if err != nil {
			t.Fatalf("%q: %v", e, err)
		}
		calls := resp.Message.ToolCalls
		if len(calls) == 0 {
			t.Errorf("%q is not planned: %s", e, resp.Message.Content)
			continue
		}
		if asks := strings.Contains(e, "offers") || strings.Contains(e, "a draft page"); asks && calls[0].Name != toolListPages {
			t.Errorf("%q starts with %s, want %s", e, calls[0].Name, toolListPages)
		}
	}
}
