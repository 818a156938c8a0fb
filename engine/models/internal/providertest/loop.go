package providertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"countersign/engine"
)

// Texts that open every transcript the loop of NewLoop sends.
const (
	SystemPrompt = "You are a test agent."
	Instructions = "Answer briefly."
)

// PageSchema is the argument schema of both tools of NewLoop, as a provider
// must offer it.
const PageSchema = `{"type":"object","properties":{"slug":{"type":"string","description":"The page's slug."}},"required":["slug"]}`

// Hello returns the smallest request: one user message and no tools.
func Hello() engine.ModelRequest {
	return engine.ModelRequest{Messages: []engine.Message{{Role: engine.RoleUser, Content: "Hi"}}}
}

// Call returns a tool call.
func Call(id, name, args string) engine.ToolCall {
	return engine.ToolCall{ID: id, Name: name, Arguments: args}
}

// Quote quotes s as a JSON string.
func Quote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// AssertJSON fails unless got and want are the same JSON value.
func AssertJSON(t *testing.T, what string, got []byte, want string) {
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

// Journal lists the tool calls that ran, in order, across tools.
type Journal struct {
	mu  sync.Mutex
	ran []string
}

func (j *Journal) add(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ran = append(j.ran, s)
}

// List returns the calls that ran, each as the tool's name and the slug,
// such as "publish_page about".
func (j *Journal) List() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.ran...)
}

// readTool counts words of a page; it needs no approval.
type readTool struct{ j *Journal }

func (readTool) Name() string            { return "count_words" }
func (readTool) Description() string     { return "Count the words of a page." }
func (readTool) Schema() json.RawMessage { return json.RawMessage(PageSchema) }
func (t readTool) Call(_ context.Context, args json.RawMessage) (string, error) {
	var a struct{ Slug string }
	if err := json.Unmarshal(args, &a); err != nil {
		return "", err
	}
	t.j.add("count_words " + a.Slug)
	return fmt.Sprintf(`{"slug":%q,"words":42}`, a.Slug), nil
}

// publishTool publishes a page; every call waits for approval.
type publishTool struct{ j *Journal }

func (publishTool) Name() string            { return "publish_page" }
func (publishTool) Description() string     { return "Publish a draft page." }
func (publishTool) Schema() json.RawMessage { return json.RawMessage(PageSchema) }
func (publishTool) RequiresApproval()       {}
func (t publishTool) Call(_ context.Context, args json.RawMessage) (string, error) {
	var a struct{ Slug string }
	if err := json.Unmarshal(args, &a); err != nil {
		return "", err
	}
	t.j.add("publish_page " + a.Slug)
	return fmt.Sprintf("published %s", a.Slug), nil
}

// Events is a Recorder that keeps every event.
type Events struct {
	mu  sync.Mutex
	evs []engine.Event
}

// Record keeps ev.
func (e *Events) Record(_ context.Context, ev engine.Event) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
	return nil
}

// Text returns every event as JSON, one a line.
func (e *Events) Text() string {
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

// NewLoop returns a loop over m that opens with SystemPrompt and
// Instructions and offers two tools, in this order: count_words, which needs
// no approval, and publish_page, which does. Both take PageSchema's
// arguments and note each call in j. rec may be nil.
func NewLoop(m engine.Model, j *Journal, rec engine.Recorder) *engine.Loop {
	return &engine.Loop{
		Model:        m,
		Tools:        []engine.Tool{readTool{j}, publishTool{j}},
		SystemPrompt: SystemPrompt,
		Instructions: Instructions,
		Recorder:     rec,
	}
}

// Suspend runs prompt and returns the suspended state, failing unless the
// run suspends.
func Suspend(t *testing.T, l *engine.Loop, prompt string) *engine.SuspendedState {
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

// ToolContents returns the contents of the tool messages of a transcript.
func ToolContents(msgs []engine.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == engine.RoleTool {
			out = append(out, m.Content)
		}
	}
	return out
}

// Denials returns the tool results of a transcript, failing unless there are
// n and each is the engine's denial carrying reason. The denial texts are
// the engine's; a provider's test checks only that it sends them.
func Denials(t *testing.T, transcript []engine.Message, n int, reason string) []string {
	t.Helper()
	denials := ToolContents(transcript)
	if len(denials) != n {
		t.Fatalf("%d tool results in the transcript, want %d", len(denials), n)
	}
	for i, d := range denials {
		if !strings.HasPrefix(d, engine.DeniedPrefix) || !strings.Contains(d, reason) {
			t.Errorf("result %d is not a denial with the reason: %q", i+1, d)
		}
	}
	return denials
}
