package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestDenialTextPunctuatesTheReasonOnce(t *testing.T) {
	cases := []struct{ reason, want string }{
		{"kept.", "Reason: kept. This call was not executed."},
		{"kept", "Reason: kept. This call was not executed."},
		{"  why not?  ", "Reason: why not? This call was not executed."},
		{"never!", "Reason: never! This call was not executed."},
		{"", "Reason: no reason given. This call was not executed."},
		{"zu spät…", "Reason: zu spät…. This call was not executed."},
	}
	for _, tc := range cases {
		got := denialText(tc.reason)
		if !strings.HasPrefix(got, DeniedPrefix) || !strings.Contains(got, tc.want) {
			t.Errorf("denialText(%q) = %q, want it to contain %q", tc.reason, got, tc.want)
		}
		if strings.Contains(got, "..") {
			t.Errorf("denialText(%q) = %q has a double full stop", tc.reason, got)
		}
	}
}

func TestReplyCutOffByTheOutputLimitEndsTheRun(t *testing.T) {
	write := newWrite("save")
	cut := calls(call("c1", "save", `{"text":"the beginning of`))
	cut.Truncated = true
	for name, resp := range map[string]ModelResponse{
		"text":       {Message: Message{Content: "The answer is"}, Usage: Usage{TotalTokens: 7}, Truncated: true},
		"tool calls": cut,
	} {
		t.Run(name, func(t *testing.T) {
			rec := &events{}
			loop := &Loop{Model: &scriptModel{responses: []ModelResponse{resp}}, Tools: []Tool{write}, Recorder: rec}
			res, err := loop.Run(context.Background(), Request{Prompt: "go"})
			var re *RunError
			if !errors.As(err, &re) || re.Termination != TermOutputLimit {
				t.Fatalf("err = %v, want a run error with termination output_limit", err)
			}
			if res == nil || res.Answer != "" || res.Iterations != 1 {
				t.Fatalf("result %+v: a cut-off reply must not be the answer", res)
			}
			if got := rec.kinds(); got != "model_turn,failed" {
				t.Fatalf("events %s", got)
			}
			if write.calls() != 0 {
				t.Fatal("a call of a cut-off reply ran")
			}
			failed := rec.ofKind(EventFailed)[0]
			if failed.Termination != TermOutputLimit || !strings.Contains(failed.Error, "output token limit") ||
				failed.Totals == nil || failed.Totals.Iterations != 1 {
				t.Fatalf("failed event %+v", failed)
			}
		})
	}
}
