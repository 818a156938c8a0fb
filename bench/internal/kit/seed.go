package kit

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	_ "github.com/mattn/go-sqlite3" // the store's driver
	"github.com/oklog/ulid/v2"

	"countersign/engine"
	"countersign/store"
)

// Seeder inserts runs and their events straight into a migrated database in
// large transactions: the way to put a million runs in place in seconds
// instead of going through a million CreateRun calls. It writes what the
// store would write (same columns, ULID ids in created_at order, seqs from
// 1), and never runs ANALYZE, so the planner sees what production sees.
type Seeder struct {
	db  *sql.DB
	ent *ulid.MonotonicEntropy
}

// OpenSeeder migrates the database at path through store.Open, then opens
// it alone for seeding, with no journal, no syncs and a large page cache.
// That is for seeding only: Close puts the database back in WAL mode, and
// the servers and benchmarks that use it afterwards open it with the
// store's own settings.
func OpenSeeder(path string) (*Seeder, error) {
	ctx := context.Background()
	db, err := store.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	db.Close()
	raw, err := sql.Open("sqlite3", path+"?_busy_timeout=10000&_foreign_keys=on&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	raw.SetMaxOpenConns(1)
	for _, p := range []string{`PRAGMA journal_mode = OFF`, `PRAGMA synchronous = OFF`, `PRAGMA cache_size = -524288`} {
		if _, err := raw.Exec(p); err != nil {
			raw.Close()
			return nil, fmt.Errorf("seed: %s: %w", p, err)
		}
	}
	return &Seeder{db: raw, ent: ulid.Monotonic(rand.Reader, 0)}, nil
}

// DB is the seeder's connection, for reads of what was seeded.
func (s *Seeder) DB() *sql.DB { return s.db }

// Close puts the database back in WAL mode and closes it.
func (s *Seeder) Close() error {
	_, err := s.db.Exec(`PRAGMA journal_mode = WAL`)
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	return err
}

// Template is the content shared by many seeded runs: what was asked, the
// stored events' payloads and, for a waiting run, its state.
type Template struct {
	Agent, Model, Prompt string
	Kinds                []string
	Payloads             [][]byte
	State                []byte
	Digest               string
	Iterations           int
	Usage                engine.Usage
	Termination, Error   string
}

// Row is one seeded run.
type Row struct {
	T           *Template
	Status      engine.Status
	InitiatedBy string
	CreatedAt   time.Time
	FinishedAt  time.Time // zero for a run that has not ended
	ClaimedBy   string
	LeaseUntil  time.Time // zero for none
}

// Insert inserts n runs, asking gen for each, batch runs per transaction,
// and returns their ids. Rows must come in created_at order.
func (s *Seeder) Insert(n, batch int, gen func(i int) Row) ([]string, error) {
	const qRun = `INSERT INTO agent_run (id, agent, model, prompt, status, initiated_by, iterations,
		prompt_tokens, completion_tokens, total_tokens, termination_reason, error, suspended_state,
		pending_digest, claimed_by, lease_expires_at, attempts, cancel_requested, last_seq,
		created_at, started_at, updated_at, finished_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0, ?, ?, ?, ?, ?)`
	const qEvent = `INSERT INTO agent_run_event (run_id, seq, kind, payload, created_at) VALUES (?, ?, ?, ?, ?)`
	ids := make([]string, 0, n)
	for start := 0; start < n; start += batch {
		tx, err := s.db.Begin()
		if err != nil {
			return nil, err
		}
		runStmt, err := tx.Prepare(qRun)
		if err != nil {
			tx.Rollback()
			return nil, err
		}
		// One statement inserts all the events of a run: far fewer calls
		// into SQLite than one per event. Templates of one size share it.
		evStmts := map[int]*sql.Stmt{}
		evStmt := func(k int) (*sql.Stmt, error) {
			if st, ok := evStmts[k]; ok {
				return st, nil
			}
			q := qEvent + strings.Repeat(", (?, ?, ?, ?, ?)", k-1)
			st, err := tx.Prepare(q)
			evStmts[k] = st
			return st, err
		}
		for i := start; i < min(n, start+batch); i++ {
			r := gen(i)
			id := ulid.MustNew(ulid.Timestamp(r.CreatedAt), s.ent).String()
			ids = append(ids, id)
			created := r.CreatedAt.UnixMilli()
			var finished, lease any
			updated := created
			if !r.FinishedAt.IsZero() {
				finished = r.FinishedAt.UnixMilli()
				updated = r.FinishedAt.UnixMilli()
			}
			if !r.LeaseUntil.IsZero() {
				lease = r.LeaseUntil.UnixMilli()
			}
			var state any
			if r.T.State != nil {
				state = r.T.State
			}
			t := r.T
			if _, err := runStmt.Exec(id, t.Agent, t.Model, t.Prompt, string(r.Status), r.InitiatedBy, t.Iterations,
				t.Usage.PromptTokens, t.Usage.CompletionTokens, t.Usage.TotalTokens, t.Termination, t.Error, state,
				t.Digest, r.ClaimedBy, lease, len(t.Payloads), created, created, updated, finished); err != nil {
				tx.Rollback()
				return nil, fmt.Errorf("insert run: %w", err)
			}
			for from := 0; from < len(t.Payloads); from += 1000 {
				to := min(len(t.Payloads), from+1000)
				st, err := evStmt(to - from)
				if err != nil {
					tx.Rollback()
					return nil, err
				}
				args := make([]any, 0, 5*(to-from))
				for j := from; j < to; j++ {
					args = append(args, id, j+1, t.Kinds[j], t.Payloads[j], created)
				}
				if _, err := st.Exec(args...); err != nil {
					tx.Rollback()
					return nil, fmt.Errorf("insert events: %w", err)
				}
			}
		}
		runStmt.Close()
		for _, st := range evStmts {
			st.Close()
		}
		if err := tx.Commit(); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// NewTemplate makes a template from events, encoding each as the store
// does (the JSON of engine.Event).
func NewTemplate(agent, prompt string, evs []engine.Event) *Template {
	t := &Template{Agent: agent, Model: "demo", Prompt: prompt}
	for _, ev := range evs {
		p, err := json.Marshal(ev)
		if err != nil {
			panic(err)
		}
		t.Kinds = append(t.Kinds, string(ev.Kind))
		t.Payloads = append(t.Payloads, p)
		if ev.Kind == engine.EventModelTurn {
			t.Iterations++
			if ev.Usage != nil {
				t.Usage.PromptTokens += ev.Usage.PromptTokens
				t.Usage.CompletionTokens += ev.Usage.CompletionTokens
				t.Usage.TotalTokens += ev.Usage.TotalTokens
			}
		}
	}
	return t
}

// ReadOnlyRun returns the events of a finished read-only run as the demo
// model makes them ("How many words are on the pricing page?"), ending with
// end (finished or failed).
func ReadOnlyRun(at time.Time, end engine.EventKind, term engine.Termination) []engine.Event {
	call := engine.ToolCall{ID: "call_1_1", Name: "word_count", Arguments: `{"slug":"pricing"}`}
	u1 := &engine.Usage{PromptTokens: 412, CompletionTokens: 18, TotalTokens: 430}
	u2 := &engine.Usage{PromptTokens: 455, CompletionTokens: 9, TotalTokens: 464}
	evs := []engine.Event{
		{Kind: engine.EventPrompt, At: at, Text: "How many words are on the pricing page?", By: "user00"},
		{Kind: engine.EventModelTurn, At: at, Text: "I'll count the words on the page “pricing”.", ToolCalls: []engine.ToolCall{call}, Usage: u1, Iteration: 1, DurationMS: 1},
		{Kind: engine.EventToolStarted, At: at, Call: &call},
		{Kind: engine.EventToolFinished, At: at, Call: &call, Result: `{"slug":"pricing","words":87}`, DurationMS: 1},
		{Kind: engine.EventModelTurn, At: at, Text: "The page “pricing” has 87 words.", Usage: u2, Iteration: 2, DurationMS: 1},
	}
	fin := engine.Event{Kind: end, At: at, Termination: term,
		Totals: &engine.Totals{Iterations: 2, Usage: engine.Usage{PromptTokens: 867, CompletionTokens: 27, TotalTokens: 894}}}
	if end == engine.EventFinished {
		fin.Text = "The page “pricing” has 87 words."
	} else {
		fin.Error = string(term)
	}
	return append(evs, fin)
}

// PollEvent is a plausible step number seq (from 2) of a running read-only
// run: model turns with a tool call, each followed by tool_started and
// tool_finished.
func PollEvent(at time.Time, seq int) engine.Event {
	call := engine.ToolCall{ID: fmt.Sprintf("call_%d_1", seq/3), Name: "word_count", Arguments: `{"slug":"pricing"}`}
	switch seq % 3 {
	case 2:
		return engine.Event{Kind: engine.EventModelTurn, At: at, Text: "I'll count the words on the page “pricing”.",
			ToolCalls: []engine.ToolCall{call}, Usage: &engine.Usage{PromptTokens: 412, CompletionTokens: 18, TotalTokens: 430},
			Iteration: seq / 3, DurationMS: 1}
	case 0:
		return engine.Event{Kind: engine.EventToolStarted, At: at, Call: &call}
	default:
		return engine.Event{Kind: engine.EventToolFinished, At: at, Call: &call, Result: `{"slug":"pricing","words":87}`, DurationMS: 1}
	}
}

// RunningTemplate is a running run with n steps that a worker holds, for
// polling: prompt then PollEvent steps.
func RunningTemplate(at time.Time, n int) *Template {
	evs := []engine.Event{{Kind: engine.EventPrompt, At: at, Text: "How many words are on the pricing page?", By: "bench"}}
	for seq := 2; seq <= n; seq++ {
		evs = append(evs, PollEvent(at, seq))
	}
	return NewTemplate("researcher", "How many words are on the pricing page?", evs)
}

// Initiators of seeded history: user00 … user19.
const Initiators = 20

// SeedHistory puts n ended runs of the read-only agent in a new database at
// path, with their six events each: 85% completed, 10% failed, 5%
// cancelled, started by user00 … user19 in turn, created over the 90 days
// that end two hours before now, in created_at order. It returns how long
// the seeding took.
func SeedHistory(path string, n int) (time.Duration, error) {
	start := time.Now()
	s, err := OpenSeeder(path)
	if err != nil {
		return 0, err
	}
	at := time.Now().UTC().Truncate(time.Second)
	completed := NewTemplate("researcher", "How many words are on the pricing page?", ReadOnlyRun(at, engine.EventFinished, engine.TermCompleted))
	completed.Termination = string(engine.TermCompleted)
	failed := NewTemplate("researcher", "How many words are on the pricing page?", ReadOnlyRun(at, engine.EventFailed, engine.TermModelError))
	failed.Termination, failed.Error = string(engine.TermModelError), "model error"
	cancelled := NewTemplate("researcher", "How many words are on the pricing page?", ReadOnlyRun(at, engine.EventFailed, engine.TermCancelled))
	cancelled.Termination, cancelled.Error = string(engine.TermCancelled), "cancelled"

	end := at.Add(-2 * time.Hour)
	first := end.Add(-90 * 24 * time.Hour)
	step := end.Sub(first) / time.Duration(n)
	_, err = s.Insert(n, 20000, func(i int) Row {
		r := Row{T: completed, Status: engine.StatusCompleted, InitiatedBy: fmt.Sprintf("user%02d", i%Initiators),
			CreatedAt: first.Add(time.Duration(i) * step)}
		switch i % 20 {
		case 3, 9:
			r.T, r.Status = failed, engine.StatusFailed
		case 15:
			r.T, r.Status = cancelled, engine.StatusCancelled
		}
		r.FinishedAt = r.CreatedAt.Add(1500 * time.Millisecond)
		return r
	})
	if err != nil {
		s.Close()
		return 0, err
	}
	if err := s.Close(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// EncodeEvent encodes ev as the store stores it.
func EncodeEvent(ev engine.Event) ([]byte, error) { return json.Marshal(ev) }
