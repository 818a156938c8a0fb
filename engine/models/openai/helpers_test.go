package openai

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"countersign/engine"
	"countersign/engine/models/internal/providertest"
)

// provider is what the checks of providertest need of this package.
var provider = providertest.Provider{
	Name:  "openai",
	Model: "gpt-4o-mini",
	New: func(t *testing.T, srv *providertest.Server, s providertest.Settings) engine.Model {
		cfg := config(srv)
		cfg.MaxRetries, cfg.Timeout = s.MaxRetries, s.Timeout
		return newModel(t, cfg)
	},
}

// config is the configuration of a model served by srv; tests adjust it.
func config(srv *providertest.Server) Config {
	return Config{APIKey: providertest.Key, BaseURL: srv.URL() + "/v1", Model: "gpt-4o-mini", MaxRetries: -1, Timeout: 5 * time.Second}
}

// redirect returns a client that sends every request to srv, whatever its
// URL, so that a test can act as OpenAI's own API.
func redirect(srv *providertest.Server) *http.Client {
	target, err := url.Parse(srv.URL())
	if err != nil {
		panic(err)
	}
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host = target.Scheme, target.Host
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func ptr[T any](v T) *T { return &v }

func newModel(t *testing.T, cfg Config) *Model {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// completion is a chat.completion object as the API reference documents
// it. message is the JSON of the assistant message.
func completion(message, finish string, prompt, completionTokens int) string {
	return fmt.Sprintf(`{
  "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
  "object": "chat.completion",
  "created": 1741570283,
  "model": "gpt-4o-mini-2024-07-18",
  "choices": [
    {
      "index": 0,
      "message": %s,
      "logprobs": null,
      "finish_reason": %q
    }
  ],
  "usage": {
    "prompt_tokens": %d,
    "completion_tokens": %d,
    "total_tokens": %d,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
  },
  "service_tier": "default",
  "system_fingerprint": "fp_06737a9306"
}`, message, finish, prompt, completionTokens, prompt+completionTokens)
}

// textReply is a final answer.
func textReply(text string, prompt, completionTokens int) providertest.Reply {
	msg := fmt.Sprintf(`{"role": "assistant", "content": %s, "refusal": null, "annotations": []}`, providertest.Quote(text))
	return providertest.Reply{Body: completion(msg, "stop", prompt, completionTokens)}
}

// callsReply is a turn of tool calls, each given as id, name and arguments.
func callsReply(prompt, completionTokens int, calls ...engine.ToolCall) providertest.Reply {
	var parts []string
	for _, c := range calls {
		parts = append(parts, fmt.Sprintf(`{"id": %s, "type": "function", "function": {"name": %s, "arguments": %s}}`,
			providertest.Quote(c.ID), providertest.Quote(c.Name), providertest.Quote(c.Arguments)))
	}
	msg := fmt.Sprintf(`{"role": "assistant", "content": null, "tool_calls": [%s], "refusal": null, "annotations": []}`,
		strings.Join(parts, ", "))
	return providertest.Reply{Body: completion(msg, "tool_calls", prompt, completionTokens)}
}

// errorReply is an error in the API's documented error format.
func errorReply(status int, message, typ, code string) providertest.Reply {
	return providertest.Reply{Status: status,
		Body: fmt.Sprintf(`{"error": {"message": %s, "type": %q, "param": null, "code": %q}}`, providertest.Quote(message), typ, code)}
}

// toolsJSON is how the two tools of providertest.NewLoop must be offered.
const toolsJSON = `[
  {"type": "function", "function": {"name": "count_words", "description": "Count the words of a page.", "parameters": ` + providertest.PageSchema + `}},
  {"type": "function", "function": {"name": "publish_page", "description": "Publish a draft page.", "parameters": ` + providertest.PageSchema + `}}
]`

// openingJSON is the JSON of the messages every run opens with: one system
// message of the system prompt and the agent's instructions, joined, then
// the prompt.
func openingJSON(prompt string) string {
	return fmt.Sprintf(`{"role": "system", "content": %s}, {"role": "user", "content": %s}`,
		providertest.Quote(providertest.SystemPrompt+"\n\n"+providertest.Instructions), providertest.Quote(prompt))
}
