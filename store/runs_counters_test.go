package store

import (
	"context"
	"testing"
	"time"

	"countersign/engine"
)

func TestModelTurnsMoveTheRunCounters(t *testing.T) {
	db := newTestDB(t)
	ctx := context.Background()
	now := time.Now()
	run, err := db.CreateRun(ctx, engine.NewRun{Agent: "a", Model: "m", Prompt: "p"}, engine.Event{Kind: engine.EventPrompt}, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.AcquireRun(ctx, run.ID, "w", now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	evs := []engine.Event{
		{Kind: engine.EventModelTurn, Usage: &engine.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}},
		{Kind: engine.EventToolFinished, Call: &engine.ToolCall{ID: "c", Name: "t"}},
		{Kind: engine.EventModelTurn, Usage: &engine.Usage{PromptTokens: 20, CompletionTokens: 5, TotalTokens: 25}},
	}
	for _, ev := range evs {
		if _, _, err := db.AppendEvent(ctx, run.ID, "w", ev, now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.Run(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := engine.Usage{PromptTokens: 30, CompletionTokens: 7, TotalTokens: 37}
	if got.Iterations != 2 || got.Usage != want {
		t.Fatalf("counters %d %+v, want 2 %+v", got.Iterations, got.Usage, want)
	}
}
