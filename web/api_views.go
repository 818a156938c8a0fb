package web

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"countersign/engine"
)

// The JSON shapes of the API. They are written out here, apart from the
// engine's types, so that the API changes only when it means to; the
// OpenAPI description (openapi.json) describes each of them.

// apiRun is a run as the API gives it.
type apiRun struct {
	ID              string        `json:"id"`
	Agent           string        `json:"agent"`
	Model           string        `json:"model"`
	Prompt          string        `json:"prompt"`
	Status          string        `json:"status"`
	Outcome         apiOutcome    `json:"outcome"`
	InitiatedBy     string        `json:"initiated_by"`
	Totals          apiTotals     `json:"totals"`
	Termination     string        `json:"termination,omitempty"`
	Error           string        `json:"error,omitempty"`
	CancelRequested bool          `json:"cancel_requested"`
	LastSeq         int64         `json:"last_seq"`
	CreatedAt       time.Time     `json:"created_at"`
	StartedAt       *time.Time    `json:"started_at,omitempty"`
	UpdatedAt       time.Time     `json:"updated_at"`
	FinishedAt      *time.Time    `json:"finished_at,omitempty"`
	DeadlineAt      *time.Time    `json:"deadline_at,omitempty"`
	FinalAnswer     *string       `json:"final_answer,omitempty"`
	Pending         *apiTurn      `json:"pending,omitempty"`
	Audit           *apiAuditNote `json:"audit,omitempty"`
}

// apiOutcome is how a run ended or where it stands (see outcome), with the
// counts behind it.
type apiOutcome struct {
	Label        string   `json:"label"`
	Tone         string   `json:"tone"`
	Denied       int      `json:"denied"`
	FailedWrites int      `json:"failed_writes"`
	Expired      int      `json:"expired"`
	Waived       int      `json:"waived"`
	DecidedBy    []string `json:"decided_by"`
}

// apiTotals are a run's counters so far.
type apiTotals struct {
	Iterations       int `json:"iterations"`
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// apiTurn is the turn a run waits on: its digest, which a decision names,
// and its calls.
type apiTurn struct {
	Digest string `json:"digest"`
	// SecondApprover says another operator than the initiator must approve.
	SecondApprover bool `json:"second_approver"`
	// YouMayApprove says whether the caller may approve or edit its calls
	// (anyone may deny or answer).
	YouMayApprove bool      `json:"you_may_approve"`
	Calls         []apiCall `json:"calls"`
	// Error says the turn could not be read; it cannot be decided.
	Error string `json:"error,omitempty"`
}

// apiCall is one pending call of a waiting turn.
type apiCall struct {
	ID   string `json:"id"`
	Tool string `json:"tool"`
	// Kind is read, write, question or unknown.
	Kind string `json:"kind"`
	// NeedsApproval is false for a read held in a turn with writes: it
	// runs once the turn is decided, whatever the verdict on it.
	NeedsApproval bool `json:"needs_approval"`
	// Destructive marks a write whose tool may overwrite or delete (an MCP
	// tool's destructiveHint); Source says where the tool comes from ("MCP
	// server filesystem"), absent for a built-in tool.
	Destructive bool   `json:"destructive,omitempty"`
	Source      string `json:"source,omitempty"`
	// Arguments are the call's arguments: a JSON object as the model gave
	// it, or a string when they are not valid JSON.
	Arguments json.RawMessage `json:"arguments"`
	Preview   *apiPreview     `json:"preview,omitempty"`
}

// apiPreview is what a call would do, as lines of text.
type apiPreview struct {
	Text    string   `json:"text"`
	Lines   []string `json:"lines"`
	Warning bool     `json:"warning"`
}

// apiAuditNote says whether a run's audit record is intact.
type apiAuditNote struct {
	Intact bool `json:"intact"`
	// Head is the hash of the run's last event, to keep elsewhere.
	Head     string            `json:"head"`
	Problems []apiAuditProblem `json:"problems"`
}

// apiAuditProblem is one thing wrong with a run's audit record.
type apiAuditProblem struct {
	Seq    int64  `json:"seq"`
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
}

// apiEvent is a recorded step of a run: its place in the run's stream and
// the event as it was recorded.
type apiEvent struct {
	Seq int64 `json:"seq"`
	engine.Event
}

// timePtr returns t in UTC, or nil when it is zero.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// rawArgs returns arguments as JSON: as they are when valid, else as a
// JSON string.
func rawArgs(args string) json.RawMessage {
	if json.Valid([]byte(args)) {
		return compact(args)
	}
	b, _ := json.Marshal(args)
	return b
}

// compact returns valid JSON without insignificant space.
func compact(s string) json.RawMessage {
	var out json.RawMessage
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return json.RawMessage(s)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return json.RawMessage(s)
	}
	return b
}

// apiRunOf is run as the API lists it, without what takes more reads
// (final answer, pending turn).
func apiRunOf(run engine.Run) apiRun {
	o := outcome(run)
	decidedBy := run.Tally.DecidedBy
	if decidedBy == nil {
		decidedBy = []string{}
	}
	return apiRun{ID: run.ID, Agent: run.Agent, Model: run.Model, Prompt: run.Prompt, Status: string(run.Status),
		Outcome: apiOutcome{Label: o.Label, Tone: o.Tone, Denied: run.Tally.Denied, FailedWrites: run.Tally.FailedWrites,
			Expired: run.Tally.Expired, Waived: run.Tally.Waived, DecidedBy: decidedBy},
		InitiatedBy: run.InitiatedBy,
		Totals: apiTotals{Iterations: run.Iterations, PromptTokens: run.Usage.PromptTokens,
			CompletionTokens: run.Usage.CompletionTokens, TotalTokens: run.Usage.TotalTokens},
		Termination: string(run.Termination), Error: run.Error, CancelRequested: run.CancelRequested, LastSeq: run.LastSeq,
		CreatedAt: run.CreatedAt.UTC(), StartedAt: timePtr(run.StartedAt), UpdatedAt: run.UpdatedAt.UTC(),
		FinishedAt: timePtr(run.FinishedAt), DeadlineAt: timePtr(run.DeadlineAt)}
}

// apiRunFull is run with its final answer, when it finished, and the turn
// it waits on, for user.
func (s *server) apiRunFull(ctx context.Context, run engine.Run, user string) (apiRun, error) {
	v := apiRunOf(run)
	if run.Status.Terminal() && run.LastSeq > 0 {
		evs, err := s.db.Events(ctx, run.ID, run.LastSeq-1, 1)
		if err != nil {
			return v, err
		}
		if len(evs) == 1 && evs[0].Event.Kind == engine.EventFinished {
			text := evs[0].Event.Text
			v.FinalAnswer = &text
		}
	}
	if run.Status == engine.StatusWaiting {
		v.Pending = s.apiTurnOf(ctx, run, user)
	}
	return v, nil
}

// apiTurnOf is the turn a waiting run waits on, with what each call would
// do. A state that cannot be read gives a turn that says so.
func (s *server) apiTurnOf(ctx context.Context, run engine.Run, user string) *apiTurn {
	t := &apiTurn{Digest: run.PendingDigest, SecondApprover: s.rt.NeedsSecondApprover(run.Agent),
		YouMayApprove: s.rt.MayApprove(run, user), Calls: []apiCall{}}
	st, problem := s.pendingState(ctx, run)
	if st == nil {
		t.Error = problem
		return t
	}
	for _, call := range turnCalls(st, s.callInfo(run.Agent)) {
		ac := apiCall{ID: call.ID, Tool: call.Name, Kind: string(call.Kind), Arguments: rawArgs(call.Arguments),
			NeedsApproval: !call.Held, Destructive: call.Kind == engine.CallWrite && call.Hints.Destructive, Source: call.Hints.Source}
		if call.HasPreview {
			lines := call.Preview.Lines
			if lines == nil {
				lines = []string{}
			}
			ac.Preview = &apiPreview{Text: strings.Join(lines, "\n"), Lines: lines, Warning: call.Preview.Warning}
		}
		t.Calls = append(t.Calls, ac)
	}
	return t
}
