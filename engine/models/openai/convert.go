package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"countersign/engine"
	"countersign/engine/models/internal/transcript"
)

// params maps a model request onto a chat completion request. The system
// messages go first as one, joined a blank line apart: the chat templates of
// some compatible servers (Qwen's among them) refuse a second one. Every
// other engine message becomes one chat message; a tool message answers its
// call by tool_call_id. The Chat Completions API has no error flag on a tool
// result, so an error result is sent as its text, which says that it is an
// error (the loop opens it with "error:" or engine.DeniedPrefix).
func (m *Model) params(req engine.ModelRequest) (sdk.ChatCompletionNewParams, error) {
	msgs := make([]sdk.ChatCompletionMessageParamUnion, 0, len(req.Messages))
	if system := transcript.System(req.Messages); system != "" {
		msgs = append(msgs, sdk.SystemMessage(system))
	}
	for i, msg := range req.Messages {
		switch msg.Role {
		case engine.RoleSystem:
			// Sent above.
		case engine.RoleUser:
			msgs = append(msgs, sdk.UserMessage(msg.Content))
		case engine.RoleAssistant:
			msgs = append(msgs, assistantMessage(msg))
		case engine.RoleTool:
			msgs = append(msgs, sdk.ToolMessage(msg.Content, msg.ToolCallID))
		default:
			return sdk.ChatCompletionNewParams{}, fmt.Errorf("message %d has unknown role %q", i, msg.Role)
		}
	}
	// No tools means no tools field: the API refuses an empty list.
	var tools []sdk.ChatCompletionToolUnionParam
	for _, spec := range req.Tools {
		fn := shared.FunctionDefinitionParam{Name: spec.Name}
		if spec.Description != "" {
			fn.Description = sdk.String(spec.Description)
		}
		if len(spec.Parameters) > 0 {
			var schema shared.FunctionParameters
			if err := json.Unmarshal(spec.Parameters, &schema); err != nil {
				return sdk.ChatCompletionNewParams{}, fmt.Errorf("schema of tool %s is not a JSON object: %w", spec.Name, err)
			}
			fn.Parameters = schema
		}
		tools = append(tools, sdk.ChatCompletionFunctionTool(fn))
	}
	params := sdk.ChatCompletionNewParams{Model: m.model, Messages: msgs, Tools: tools}
	switch {
	case m.maxTokens > 0 && m.openAI:
		params.MaxCompletionTokens = sdk.Int(int64(m.maxTokens))
	case m.maxTokens > 0:
		params.MaxTokens = sdk.Int(int64(m.maxTokens))
	}
	if m.temperature != nil {
		params.Temperature = sdk.Float(*m.temperature)
	}
	return params, nil
}

// assistantMessage maps an assistant turn: its text, if any, and its tool
// calls with their arguments as the model produced them, valid or not.
func assistantMessage(msg engine.Message) sdk.ChatCompletionMessageParamUnion {
	var a sdk.ChatCompletionAssistantMessageParam
	if msg.Content != "" || len(msg.ToolCalls) == 0 {
		a.Content.OfString = sdk.String(msg.Content)
	}
	for _, c := range msg.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
				ID:       c.ID,
				Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Arguments},
			},
		})
	}
	return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

// errNoChoices refuses a completion without any choice.
var errNoChoices = errors.New("the response has no choices")

// response maps the first choice of a completion onto an assistant message
// and its usage. A refusal without other text becomes the text. A choice
// that finished for its length was cut off at the output limit (or the
// context window) and is marked truncated.
func (m *Model) response(c *sdk.ChatCompletion) (engine.ModelResponse, error) {
	if c == nil || len(c.Choices) == 0 {
		return engine.ModelResponse{}, errNoChoices
	}
	truncated := c.Choices[0].FinishReason == "length"
	choice := c.Choices[0].Message
	msg := engine.Message{Role: engine.RoleAssistant, Content: choice.Content}
	if strings.TrimSpace(msg.Content) == "" && choice.Refusal != "" {
		msg.Content = choice.Refusal
	}
	for _, tc := range choice.ToolCalls {
		call := engine.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
		if tc.Type == "custom" {
			call.Name, call.Arguments = tc.Custom.Name, tc.Custom.Input
		}
		msg.ToolCalls = append(msg.ToolCalls, call)
	}
	u := engine.Usage{
		PromptTokens:     int(c.Usage.PromptTokens),
		CompletionTokens: int(c.Usage.CompletionTokens),
		TotalTokens:      int(c.Usage.TotalTokens),
	}
	if u.TotalTokens == 0 {
		// Some compatible servers leave the total out.
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return engine.ModelResponse{Message: msg, Usage: u, Truncated: truncated}, nil
}
