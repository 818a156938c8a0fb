package tools

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"countersign/engine"
)

// clock is the fixed time of the tests.
var clock = time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return clock }

// seeded returns a Memory holding the demo pages and its tools by name.
func seeded(t *testing.T) (*Memory, map[string]engine.Tool) {
	t.Helper()
	ws := NewMemory(fixedNow, SeedPages()...)
	tools := make(map[string]engine.Tool)
	for _, tl := range All(ws, fixedNow) {
		tools[tl.Name()] = tl
	}
	return ws, tools
}

// call runs a tool with args and returns its result text.
func call(t *testing.T, tl engine.Tool, args string) (string, error) {
	t.Helper()
	return tl.Call(context.Background(), json.RawMessage(args))
}

// decode unmarshals a tool result, failing the test if it is not JSON.
func decode[T any](t *testing.T, result string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(result), &v); err != nil {
		t.Fatalf("result %q is not JSON: %v", result, err)
	}
	return v
}

// page returns a page of ws, failing the test if it is missing.
func page(t *testing.T, ws Workspace, slug string) Page {
	t.Helper()
	p, err := ws.GetPage(context.Background(), slug)
	if err != nil {
		t.Fatalf("GetPage(%q): %v", slug, err)
	}
	return p
}
