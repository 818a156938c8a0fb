package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"countersign/engine"
)

// testKey is a distinctive API key that must never show in an error text or
// an event.
const testKey = "sk-test-COUNTERSIGN-7f3a9c1e5b"

// Texts that open every transcript of these tests.
const (
	systemPrompt = "You are a test agent."
	instructions = "Answer briefly."
)

// reply is one scripted answer of the fake server.
type reply struct {
	status int
	header map[string]string
	body   string
	// hang holds the answer until the request is given up (or 5 s pass).
	hang bool
}

// fakeServer is a Messages API server that answers from a script and
// keeps every request it received.
type fakeServer struct {
	t       *testing.T
	srv     *httptest.Server
	arrived chan struct{}

	mu       sync.Mutex
	replies  []reply
	bodies   [][]byte
	headers  []http.Header
	paths    []string
	answered int
}

func newServer(t *testing.T, replies ...reply) *fakeServer {
	t.Helper()
	f := &fakeServer{t: t, replies: replies, arrived: make(chan struct{}, 16)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	f.paths = append(f.paths, r.Method+" "+r.URL.Path)
	var rep reply
	if f.answered < len(f.replies) {
		rep = f.replies[f.answered]
	} else {
		f.t.Errorf("unexpected request %d: the script has %d replies", f.answered+1, len(f.replies))
		rep = reply{status: http.StatusTeapot, body: `{"error":{"message":"script exhausted","type":"test"}}`}
	}
	f.answered++
	f.mu.Unlock()
	f.arrived <- struct{}{}

	if rep.hang {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	status := rep.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, rep.body)
}

// requests returns how many requests arrived.
func (f *fakeServer) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

// body returns the body of request i (from 0).
func (f *fakeServer) body(i int) []byte {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.bodies) {
		f.t.Fatalf("request %d never arrived (%d did)", i+1, len(f.bodies))
	}
	return f.bodies[i]
}

// header returns the headers of request i.
func (f *fakeServer) header(i int) http.Header {
	f.body(i)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.headers[i]
}

// path returns the method and path of request i.
func (f *fakeServer) path(i int) string {
	f.body(i)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.paths[i]
}

// field returns one top-level field of the body of request i.
func (f *fakeServer) field(i int, name string) json.RawMessage {
	f.t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(f.body(i), &m); err != nil {
		f.t.Fatalf("request %d is not a JSON object: %v", i+1, err)
	}
	return m[name]
}

// config is the configuration of a model served by f; tests adjust it.
func (f *fakeServer) config() Config {
	return Config{APIKey: testKey, BaseURL: f.srv.URL, Model: "claude-sonnet-4-5", MaxRetries: -1, Timeout: 5 * time.Second}
}

func newModel(t *testing.T, cfg Config) *Model {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// message is a Message object as the API reference documents it. content
// is the JSON of its content blocks.
func message(content, stopReason string, input, output int) string {
	return fmt.Sprintf(`{
  "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-5-20250929",
  "content": [%s],
  "stop_reason": %q,
  "stop_sequence": null,
  "usage": {
    "input_tokens": %d,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": %d,
    "service_tier": "standard"
  }
}`, content, stopReason, input, output)
}

// textReply is a final answer.
func textReply(text string, input, output int) reply {
	return reply{body: message(fmt.Sprintf(`{"type": "text", "text": %s}`, q(text)), "end_turn", input, output)}
}

// callsReply is a turn of tool_use blocks after a line of text. The
// arguments of each call are the block's input, as raw JSON.
func callsReply(input, output int, calls ...engine.ToolCall) reply {
	parts := []string{`{"type": "text", "text": "I'll use the tools for that."}`}
	for _, c := range calls {
		parts = append(parts, fmt.Sprintf(`{"type": "tool_use", "id": %s, "name": %s, "input": %s}`, q(c.ID), q(c.Name), c.Arguments))
	}
	return reply{body: message(strings.Join(parts, ", "), "tool_use", input, output)}
}

// errorReply is an error in the API's documented error format.
func errorReply(status int, typ, msg string) reply {
	return reply{status: status, header: map[string]string{"Request-Id": "req_011CSHoEeqs5C35K2UUqR7Fy"},
		body: fmt.Sprintf(`{"type": "error", "error": {"type": %q, "message": %s}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}`, typ, q(msg))}
}

func call(id, name, args string) engine.ToolCall {
	return engine.ToolCall{ID: id, Name: name, Arguments: args}
}

// q quotes s as a JSON string.
func q(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// assertJSON fails unless got and want are the same JSON value.
func assertJSON(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: got invalid JSON: %v\n%s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want is invalid JSON: %v\n%s", what, err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got: %s\nwant: %s", what, indent(got), indent([]byte(want)))
	}
}

func indent(b []byte) string {
	var buf bytes.Buffer
	if json.Indent(&buf, b, "      ", "  ") != nil {
		return string(b)
	}
	return buf.String()
}

// pageSchema is the argument schema of both fake tools.
const pageSchema = `{"type":"object","properties":{"slug":{"type":"string","description":"The page's slug."}},"required":["slug"]}`

// journal lists the tool calls that ran, in order, across tools.
type journal struct {
	mu  sync.Mutex
	ran []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ran = append(j.ran, s)
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.ran...)
}

// readTool counts words of a page; it needs no approval.
type readTool struct{ j *journal }

func (readTool) Name() string            { return "count_words" }
func (readTool) Description() string     { return "Count the words of a page." }
func (readTool) Schema() json.RawMessage { return json.RawMessage(pageSchema) }
func (t readTool) Call(_ context.Context, args json.RawMessage) (string, error) {
	var a struct{ Slug string }
	if err := json.Unmarshal(args, &a); err != nil {
		return "", err
	}
	t.j.add("count_words " + a.Slug)
	return fmt.Sprintf(`{"slug":%q,"words":42}`, a.Slug), nil
}

// publishTool publishes a page; every call waits for approval.
type publishTool struct{ j *journal }

func (publishTool) Name() string            { return "publish_page" }
func (publishTool) Description() string     { return "Publish a draft page." }
func (publishTool) Schema() json.RawMessage { return json.RawMessage(pageSchema) }
func (publishTool) RequiresApproval()       {}
func (t publishTool) Call(_ context.Context, args json.RawMessage) (string, error) {
	var a struct{ Slug string }
	if err := json.Unmarshal(args, &a); err != nil {
		return "", err
	}
	t.j.add("publish_page " + a.Slug)
	return fmt.Sprintf("published %s", a.Slug), nil
}

// toolsJSON is how the two fake tools must be offered.
const toolsJSON = `[
  {"name": "count_words", "description": "Count the words of a page.", "input_schema": ` + pageSchema + `},
  {"name": "publish_page", "description": "Publish a draft page.", "input_schema": ` + pageSchema + `}
]`

// systemJSON is the system parameter of every request: the system prompt
// and the agent's instructions, joined.
var systemJSON = `[{"type": "text", "text": ` + q(systemPrompt+"\n\n"+instructions) + `}]`

// events is a Recorder that keeps every event.
type events struct {
	mu  sync.Mutex
	evs []engine.Event
}

func (e *events) Record(_ context.Context, ev engine.Event) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
	return nil
}

// text returns every event as JSON, one a line.
func (e *events) text() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b strings.Builder
	for _, ev := range e.evs {
		j, _ := json.Marshal(ev)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// newLoop returns a loop over m offering both fake tools.
func newLoop(m engine.Model, j *journal, rec engine.Recorder) *engine.Loop {
	return &engine.Loop{
		Model:        m,
		Tools:        []engine.Tool{readTool{j}, publishTool{j}},
		SystemPrompt: systemPrompt,
		Instructions: instructions,
		Recorder:     rec,
	}
}

// promptJSON is the JSON of the user message every run opens with.
func promptJSON(prompt string) string {
	return fmt.Sprintf(`{"role": "user", "content": [{"type": "text", "text": %s}]}`, q(prompt))
}

// requestJSON is the JSON of a whole request with these messages.
func requestJSON(messages ...string) string {
	return `{"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": ` + systemJSON +
		`, "messages": [` + strings.Join(messages, ", ") + `], "tools": ` + toolsJSON + `}`
}

// suspend runs prompt and returns the suspended state, failing unless the run
// suspends.
func suspend(t *testing.T, l *engine.Loop, prompt string) *engine.SuspendedState {
	t.Helper()
	_, err := l.Run(context.Background(), engine.Request{Prompt: prompt})
	var ar *engine.ApprovalRequiredError
	if !errors.As(err, &ar) {
		t.Fatalf("Run: want *engine.ApprovalRequiredError, got %v", err)
	}
	// Store and load the state, as a restart between suspension and decision would.
	blob, err := engine.EncodeState(ar.State)
	if err != nil {
		t.Fatalf("EncodeState: %v", err)
	}
	state, err := engine.DecodeState(blob)
	if err != nil {
		t.Fatalf("DecodeState: %v", err)
	}
	return state
}
