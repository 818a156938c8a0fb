package views

import (
	"strings"
	"testing"
)

// TestTurnIntro: the card counts each kind of call for what it is; a read
// held in a turn with a write is no "call that changes something".
func TestTurnIntro(t *testing.T) {
	call := func(kind string) PendingCall { return PendingCall{ID: kind, Kind: kind} }
	for _, tc := range []struct {
		calls     []PendingCall
		canDecide bool
		want      string
	}{
		{[]PendingCall{call("write")}, true, "1 call that changes something waits for you."},
		{[]PendingCall{call("write"), call("read")}, true, "2 calls in one turn: 1 write waits for you, 1 read held with it."},
		{[]PendingCall{call("write"), call("write"), call("read")}, true, "3 calls in one turn: 2 writes wait for you, 1 read held with them."},
		{[]PendingCall{call("write"), call("read")}, false, "2 calls in one turn: 1 write waits for an operator, 1 read held with it."},
		{[]PendingCall{call("question")}, false, "The agent asks a question. It waits for an operator's answer"},
	} {
		got := turnIntro(ApprovalCard{Calls: tc.calls, CanDecide: tc.canDecide})
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%v (decide %v): %q, want it to start %q", tc.calls, tc.canDecide, got, tc.want)
		}
	}
	doc, _ := render(t, pendingCall(PendingCall{ID: "c1", Tool: "word_count", Kind: "read", Held: true}, true, false, ""))
	if got := doc.Find(testid("call-kind")).Text(); got != "reads only · held with the turn" {
		t.Errorf("held read tagged %q", got)
	}
}

// TestArgList: string arguments show as text with their line breaks, other
// values as compact JSON, and nothing as HTML.
func TestArgList(t *testing.T) {
	doc, raw := render(t, argList([]ArgView{{Key: "body", Value: "line 1\nline 2 " + xss, Text: true}, {Key: "n", Value: `{"a":1}`}}, "", "args"))
	if strings.Contains(raw, xss) {
		t.Error("raw script tag")
	}
	if got := doc.Find(`[data-arg="body"] dd.arg-text`).Text(); got != "line 1\nline 2 "+xss {
		t.Errorf("text argument %q", got)
	}
	if got := doc.Find(`[data-arg="n"] dd.arg-json code`).Text(); got != `{"a":1}` {
		t.Errorf("JSON argument %q", got)
	}
	doc, _ = render(t, argList(nil, "[1, 2]", "args"))
	if doc.Find("pre.args").Text() != "[1, 2]" {
		t.Error("arguments that are no object are not shown as they came")
	}
}
