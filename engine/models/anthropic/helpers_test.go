package anthropic

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"countersign/engine"
	"countersign/engine/models/internal/providertest"
)

// provider is what the checks of providertest need of this package.
var provider = providertest.Provider{
	Name:  "anthropic",
	Model: "claude-sonnet-4-5",
	New: func(t *testing.T, srv *providertest.Server, s providertest.Settings) engine.Model {
		cfg := config(srv)
		cfg.MaxRetries, cfg.Timeout = s.MaxRetries, s.Timeout
		return newModel(t, cfg)
	},
}

// config is the configuration of a model served by srv; tests adjust it.
func config(srv *providertest.Server) Config {
	return Config{APIKey: providertest.Key, BaseURL: srv.URL(), Model: "claude-sonnet-4-5", MaxRetries: -1, Timeout: 5 * time.Second}
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
func textReply(text string, input, output int) providertest.Reply {
	return providertest.Reply{Body: message(fmt.Sprintf(`{"type": "text", "text": %s}`, providertest.Quote(text)), "end_turn", input, output)}
}

// callsReply is a turn of tool_use blocks after a line of text. The
// arguments of each call are the block's input, as raw JSON.
func callsReply(input, output int, calls ...engine.ToolCall) providertest.Reply {
	parts := []string{`{"type": "text", "text": "I'll use the tools for that."}`}
	for _, c := range calls {
		parts = append(parts, fmt.Sprintf(`{"type": "tool_use", "id": %s, "name": %s, "input": %s}`,
			providertest.Quote(c.ID), providertest.Quote(c.Name), c.Arguments))
	}
	return providertest.Reply{Body: message(strings.Join(parts, ", "), "tool_use", input, output)}
}

// errorReply is an error in the API's documented error format.
func errorReply(status int, typ, msg string) providertest.Reply {
	return providertest.Reply{Status: status, Header: map[string]string{"Request-Id": "req_011CSHoEeqs5C35K2UUqR7Fy"},
		Body: fmt.Sprintf(`{"type": "error", "error": {"type": %q, "message": %s}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}`, typ, providertest.Quote(msg))}
}

// toolsJSON is how the two tools of providertest.NewLoop must be offered.
const toolsJSON = `[
  {"name": "count_words", "description": "Count the words of a page.", "input_schema": ` + providertest.PageSchema + `},
  {"name": "publish_page", "description": "Publish a draft page.", "input_schema": ` + providertest.PageSchema + `}
]`

// systemJSON is the system parameter of every request: the system prompt
// and the agent's instructions, joined.
var systemJSON = `[{"type": "text", "text": ` + providertest.Quote(providertest.SystemPrompt+"\n\n"+providertest.Instructions) + `}]`

// promptJSON is the JSON of the user message every run opens with.
func promptJSON(prompt string) string {
	return fmt.Sprintf(`{"role": "user", "content": [{"type": "text", "text": %s}]}`, providertest.Quote(prompt))
}

// requestJSON is the JSON of a whole request with these messages.
func requestJSON(messages ...string) string {
	return `{"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": ` + systemJSON +
		`, "messages": [` + strings.Join(messages, ", ") + `], "tools": ` + toolsJSON + `}`
}
