package demo

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"countersign/engine"
	"countersign/engine/tools"
)

const retryPrompt = "Delete the old announcement page. If you are refused, try again."

// generate asks the model for its next message after msgs.
func generate(t *testing.T, msgs []engine.Message) engine.Message {
	t.Helper()
	resp, err := New().Generate(context.Background(), engine.ModelRequest{Messages: msgs, Tools: specs(allTools)})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Message
}

// answered is msgs with the model's message m and one result per call.
func answered(msgs []engine.Message, m engine.Message, content string, isError bool) []engine.Message {
	msgs = append(msgs, m)
	for _, c := range m.ToolCalls {
		msgs = append(msgs, engine.Message{Role: engine.RoleTool, ToolCallID: c.ID, ToolName: c.Name, Content: content, IsError: isError})
	}
	return msgs
}

// Told to try again when refused, the model repeats a denied call exactly,
// again after the loop breaker refuses it, and goes on once it is let
// through. Without being told, it never retries.
func TestRetryAfterDenial(t *testing.T) {
	msgs := []engine.Message{{Role: engine.RoleUser, Content: retryPrompt}}
	first := generate(t, msgs)
	checkTurns(t, [][]engine.ToolCall{first.ToolCalls}, [][]wantCall{{c(toolDeletePage, slug("old-announcement"))}})

	msgs = answered(msgs, first, denialText("keep it"), true)
	again := generate(t, msgs)
	if len(again.ToolCalls) != 1 || again.ToolCalls[0].Name != toolDeletePage ||
		again.ToolCalls[0].Arguments != first.ToolCalls[0].Arguments || again.ToolCalls[0].ID == first.ToolCalls[0].ID {
		t.Fatalf("after a denial: %+v, want the identical delete with a new id", again)
	}
	if !strings.Contains(again.Content, "try again") {
		t.Errorf("the retry does not say why: %q", again.Content)
	}

	msgs = answered(msgs, again, engine.RepeatDeniedPrefix+": an identical call was denied earlier in this run.", true)
	third := generate(t, msgs)
	if len(third.ToolCalls) != 1 || third.ToolCalls[0].Arguments != first.ToolCalls[0].Arguments {
		t.Fatalf("after the breaker refused: %+v, want the identical delete", third)
	}

	msgs = answered(msgs, third, `{"slug":"old-announcement","deleted":true}`, false)
	final := generate(t, msgs)
	if len(final.ToolCalls) != 0 || final.Content != "I deleted the page “old-announcement”." {
		t.Errorf("once let through: %+v", final)
	}

	plain := []engine.Message{{Role: engine.RoleUser, Content: "Delete the old announcement page."}}
	plain = answered(plain, generate(t, plain), denialText(""), true)
	if m := generate(t, plain); len(m.ToolCalls) != 0 || !strings.Contains(m.Content, "I did not retry") {
		t.Errorf("not told to retry: %+v", m)
	}
}

// Another kind of trouble than a denial ends a retrying run as usual.
func TestRetryStopsOnOtherTrouble(t *testing.T) {
	msgs := []engine.Message{{Role: engine.RoleUser, Content: retryPrompt}}
	first := generate(t, msgs)
	msgs = answered(msgs, first, denialText(""), true)
	again := generate(t, msgs)
	msgs = answered(msgs, again, engine.ExpiredPrefix+": this call waited for a person's decision until its approval deadline passed.", true)
	m := generate(t, msgs)
	checkText(t, m.Content, []string{"No one decided in time", "delete the page “old-announcement” (not run: no one decided before the approval deadline)",
		"I made no further tool calls."}, []string{"I did not retry", "NO DECISION"})
	if len(m.ToolCalls) != 0 {
		t.Errorf("calls after an expiry: %v", m.ToolCalls)
	}
}

// A turn whose approval deadline passed is reported, not retried.
func TestExpiredTurn(t *testing.T) {
	msgs := []engine.Message{{Role: engine.RoleUser, Content: "Publish the about page."}}
	msgs = answered(msgs, generate(t, msgs), engine.ExpiredPrefix+": this call waited until its approval deadline passed.", true)
	m := generate(t, msgs)
	checkText(t, m.Content, []string{"No one decided in time", "publish the page “about” (not run: no one decided before the approval deadline)",
		"I did not retry"}, []string{"tool reported an error"})
}

// Through the real loop: the operator denies the delete, the model asks
// again and again, the loop breaker refuses each repeat without asking
// anyone and ends the run; the page is still there.
func TestRetryMeetsTheLoopBreaker(t *testing.T) {
	now := func() time.Time { return time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC) }
	ws := tools.NewMemory(now, tools.SeedPages()...)
	editor, _ := tools.AgentByName(tools.Agents(ws, now), "editor")
	loop := engine.NewLoop(editor, New(), nil)
	_, err := loop.Run(context.Background(), engine.Request{Prompt: retryPrompt})
	var are *engine.ApprovalRequiredError
	if !errors.As(err, &are) {
		t.Fatalf("want a suspension, got %v", err)
	}
	res, err := loop.Resume(context.Background(), are.State,
		engine.Decision{Verdict: engine.VerdictDeny, Digest: are.State.Digest(), By: "ann", Reason: "keep it"})
	var runErr *engine.RunError
	if !errors.As(err, &runErr) || runErr.Termination != engine.TermRepeatedDenials {
		t.Fatalf("want the run ended by the loop breaker, got %v (%+v)", err, res)
	}
	deletes := 0
	for _, m := range res.Transcript {
		for _, c := range m.ToolCalls {
			if c.Name == toolDeletePage {
				deletes++
			}
		}
	}
	if want := 1 + engine.DefaultMaxRepeatDenials; deletes != want {
		t.Errorf("%d deletes proposed, want %d", deletes, want)
	}
	pageOf(t, ws, "old-announcement")
}
