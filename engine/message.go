package engine

import (
	"context"
	"encoding/json"
)

// Role says who wrote a message of the transcript.
type Role string

// The roles of a provider-neutral transcript.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of the transcript. An assistant message carries text
// and/or tool calls; a tool message answers exactly one tool call by its ID.
type Message struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	ToolName   string     `json:"tool_name,omitempty"`
	IsError    bool       `json:"is_error,omitempty"`
}

// ToolCall is a model's request to run one tool. Arguments is the JSON text
// exactly as the model produced it; it may be invalid, and the loop answers
// such a call with an error result instead of running it.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Usage counts the tokens of one model call, or of a whole run.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		TotalTokens:      u.TotalTokens + o.TotalTokens,
	}
}

// ToolSpec describes a tool to a model: its name, what it does and the JSON
// Schema of its arguments.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ModelRequest is what the loop sends to a model: the whole transcript and
// the tools on offer.
type ModelRequest struct {
	Messages []Message
	Tools    []ToolSpec
}

// ModelResponse is one assistant message and the tokens it cost.
type ModelResponse struct {
	Message Message
	Usage   Usage
	// Truncated says the provider cut the reply off at its output token
	// limit (finish_reason "length", stop_reason "max_tokens"): the text may
	// end mid-sentence and tool arguments may be incomplete, so the loop
	// neither takes it as the answer nor runs its calls.
	Truncated bool
}

// Model is a language model provider. Generate returns one assistant
// message (text and/or tool calls); the loop sets its role.
type Model interface {
	Generate(ctx context.Context, req ModelRequest) (ModelResponse, error)
}

// ModelFunc adapts a function to the Model interface.
type ModelFunc func(ctx context.Context, req ModelRequest) (ModelResponse, error)

// Generate calls f.
func (f ModelFunc) Generate(ctx context.Context, req ModelRequest) (ModelResponse, error) {
	return f(ctx, req)
}
