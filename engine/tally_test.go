package engine

import (
	"slices"
	"testing"
)

func TestTallyCount(t *testing.T) {
	call := &ToolCall{ID: "c1", Name: "publish_page"}
	evs := []Event{
		{Kind: EventPrompt, Text: "hi"},
		{Kind: EventToolStarted, Call: call, Write: true, WaivedBy: "rule drafts"},
		{Kind: EventToolFinished, Call: call, Write: true, IsError: true, Outcome: OutcomeToolError},
		{Kind: EventToolFinished, Call: call, Write: false, IsError: true, Outcome: OutcomeToolError},
		{Kind: EventToolFinished, Call: call, Write: true, IsError: true, Outcome: OutcomeDenied},
		{Kind: EventToolFinished, Call: call, IsError: true, Outcome: OutcomeRepeatDenied},
		{Kind: EventToolFinished, Call: call, Write: true, IsError: true, Outcome: OutcomeExpired},
		{Kind: EventToolFinished, Call: call, Write: true, Outcome: OutcomeOK},
		{Kind: EventDecision, Decision: VerdictApprove, By: "bob"},
		{Kind: EventDecision, Decision: VerdictDeny, By: "alice"},
		{Kind: EventDecision, By: "bob"},
		{Kind: EventDecision, Decision: VerdictExpire, By: "deadline"},
	}
	var got Tally
	for _, ev := range evs {
		got.Count(ev)
	}
	want := Tally{Denied: 2, FailedWrites: 1, Expired: 1, Waived: 1, DecidedBy: []string{"bob", "alice"}}
	if got.Denied != want.Denied || got.FailedWrites != want.FailedWrites || got.Expired != want.Expired ||
		got.Waived != want.Waived || !slices.Equal(got.DecidedBy, want.DecidedBy) {
		t.Fatalf("tally = %+v, want %+v", got, want)
	}
	if got.IsZero() || !(Tally{}).IsZero() {
		t.Fatal("IsZero is wrong")
	}
}
