package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"countersign/engine"
)

// BenchmarkCommitFloor measures the raw floor of the disk under the store's
// own settings: one op is one transaction that inserts one row, through the
// writer connection and its DSN (WAL, synchronous=FULL, BEGIN IMMEDIATE),
// outside the group commit, as store.DB.CommitRate measures it.
// BenchmarkApprovalCycle in engine/ reports what a cycle costs in such
// commits.
func BenchmarkCommitFloor(b *testing.B) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(b.TempDir(), "floor.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.db.ExecContext(ctx, `CREATE TABLE bench_commit (id INTEGER PRIMARY KEY, at INTEGER NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := db.commitOneRow(ctx, i); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}

// BenchmarkAppendEvent measures the store's most frequent write: one op
// appends one model_turn event to a running run (UPDATE … RETURNING of the
// run, which renews its lease, and INSERT of the event, in one transaction
// of the group commit). Compare its ns/op with BenchmarkCommitFloor's.
func BenchmarkAppendEvent(b *testing.B) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(b.TempDir(), "append.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	now := time.Now()
	run, err := db.CreateRun(ctx, engine.NewRun{Agent: "editor", Model: "demo", Prompt: "Publish the about page.", InitiatedBy: "olga"},
		engine.Event{Kind: engine.EventPrompt, Text: "Publish the about page."}, now)
	if err != nil {
		b.Fatal(err)
	}
	lease := now.Add(time.Hour)
	if _, err := db.AcquireRun(ctx, run.ID, "w", now, lease); err != nil {
		b.Fatal(err)
	}
	call := engine.ToolCall{ID: "call_1_1", Name: "publish_page", Arguments: `{"slug":"about"}`}
	ev := engine.Event{Kind: engine.EventModelTurn, At: now, Text: "I'll publish the page “about”.",
		ToolCalls: []engine.ToolCall{call}, Usage: &engine.Usage{PromptTokens: 400, CompletionTokens: 20, TotalTokens: 420}}
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := db.AppendEvent(ctx, run.ID, "w", ev, lease); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}
