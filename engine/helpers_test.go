package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// scriptModel answers with a fixed sequence of responses and keeps every
// request it received.
type scriptModel struct {
	mu        sync.Mutex
	responses []ModelResponse
	requests  []ModelRequest
	err       error
}

func (m *scriptModel) Generate(ctx context.Context, req ModelRequest) (ModelResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, req)
	if m.err != nil {
		return ModelResponse{}, m.err
	}
	if len(m.responses) == 0 {
		return ModelResponse{}, errors.New("script exhausted")
	}
	r := m.responses[0]
	m.responses = m.responses[1:]
	return r, nil
}

func (m *scriptModel) lastRequest() ModelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests[len(m.requests)-1]
}

func calls(cs ...ToolCall) ModelResponse {
	return ModelResponse{Message: Message{ToolCalls: cs}, Usage: Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}}
}

func answer(text string) ModelResponse {
	return ModelResponse{Message: Message{Content: text}, Usage: Usage{PromptTokens: 20, CompletionTokens: 5, TotalTokens: 25}}
}

func call(id, name, args string) ToolCall { return ToolCall{ID: id, Name: name, Arguments: args} }

// fakeTool is a tool whose calls are counted; write tools embed it in
// writeTool, which opts into approval.
type fakeTool struct {
	name   string
	mu     sync.Mutex
	n      int
	args   []string
	result string
	err    error
	panics bool
}

func (t *fakeTool) Name() string            { return t.name }
func (t *fakeTool) Description() string     { return "test tool " + t.name }
func (t *fakeTool) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (t *fakeTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n++
	t.args = append(t.args, string(args))
	if t.panics {
		panic("boom")
	}
	if t.err != nil {
		return "", t.err
	}
	if t.result != "" {
		return t.result, nil
	}
	return fmt.Sprintf(`{"tool":%q,"n":%d}`, t.name, t.n), nil
}

func (t *fakeTool) calls() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

type writeTool struct {
	*fakeTool
	preview      []string
	previewErr   error
	previewPanic bool
}

func (writeTool) RequiresApproval() {}

func (w writeTool) Preview(ctx context.Context, args json.RawMessage) ([]string, error) {
	if w.previewPanic {
		panic("preview boom")
	}
	if w.previewErr != nil {
		return nil, w.previewErr
	}
	if w.preview != nil {
		return w.preview, nil
	}
	return []string{"would write " + string(args)}, nil
}

func newRead(name string) *fakeTool { return &fakeTool{name: name} }
func newWrite(name string) writeTool {
	return writeTool{fakeTool: &fakeTool{name: name}}
}

// events is a Recorder that keeps every event.
type events struct {
	mu  sync.Mutex
	evs []Event
	// failOn makes Record fail for that kind.
	failOn EventKind
}

func (e *events) Record(ctx context.Context, ev Event) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ev.Kind == e.failOn {
		return errors.New("disk full")
	}
	e.evs = append(e.evs, ev)
	return nil
}

func (e *events) kinds() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	ks := make([]string, len(e.evs))
	for i, ev := range e.evs {
		ks[i] = string(ev.Kind)
	}
	return strings.Join(ks, ",")
}

func (e *events) ofKind(k EventKind) []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Event
	for _, ev := range e.evs {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

// mustSuspend asserts that err is a suspension and returns its state.
func mustSuspend(t *testing.T, err error) *SuspendedState {
	t.Helper()
	var are *ApprovalRequiredError
	if !errors.As(err, &are) {
		t.Fatalf("want *ApprovalRequiredError, got %v", err)
	}
	return are.State
}

func approve(s *SuspendedState, by string) Decision {
	return Decision{Verdict: VerdictApprove, Digest: TurnDigest(s.Pending), By: by}
}

func deny(s *SuspendedState, by, reason string) Decision {
	return Decision{Verdict: VerdictDeny, Digest: TurnDigest(s.Pending), By: by, Reason: reason}
}
