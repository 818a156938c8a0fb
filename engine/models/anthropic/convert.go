package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"countersign/engine"
	"countersign/engine/models/internal/transcript"
)

// emptyInput is the tool_use input sent for arguments that are not a JSON
// object.
var emptyInput = json.RawMessage(`{}`)

// params maps a model request onto a Messages API request. The system
// messages are joined, a blank line apart, into the system parameter. Tool
// messages that follow one another are grouped into one user message of
// tool_result blocks, in the order of the transcript, which is the order of
// the calls: the API wants every tool_use of an assistant turn answered in
// the user message right after it.
func (m *Model) params(req engine.ModelRequest) (sdk.MessageNewParams, error) {
	var msgs []sdk.MessageParam
	var results []sdk.ContentBlockParamUnion
	flush := func() {
		if len(results) > 0 {
			msgs = append(msgs, sdk.NewUserMessage(results...))
			results = nil
		}
	}
	for i, msg := range req.Messages {
		switch msg.Role {
		case engine.RoleSystem:
			// Sent below, as the system parameter.
		case engine.RoleUser:
			flush()
			msgs = append(msgs, sdk.NewUserMessage(sdk.NewTextBlock(msg.Content)))
		case engine.RoleAssistant:
			flush()
			// The API refuses an assistant turn without content; an empty
			// turn says nothing, so it is left out.
			if blocks := assistantBlocks(msg); len(blocks) > 0 {
				msgs = append(msgs, sdk.NewAssistantMessage(blocks...))
			}
		case engine.RoleTool:
			results = append(results, toolResult(msg))
		default:
			return sdk.MessageNewParams{}, fmt.Errorf("message %d has unknown role %q", i, msg.Role)
		}
	}
	flush()

	params := sdk.MessageNewParams{Model: m.model, MaxTokens: int64(m.maxTokens), Messages: msgs}
	if system := transcript.System(req.Messages); system != "" {
		params.System = []sdk.TextBlockParam{{Text: system}}
	}
	for _, spec := range req.Tools {
		schema, err := inputSchema(spec.Parameters)
		if err != nil {
			return sdk.MessageNewParams{}, fmt.Errorf("schema of tool %s: %w", spec.Name, err)
		}
		tool := sdk.ToolParam{Name: spec.Name, InputSchema: schema}
		if spec.Description != "" {
			tool.Description = sdk.String(spec.Description)
		}
		params.Tools = append(params.Tools, sdk.ToolUnionParam{OfTool: &tool})
	}
	return params, nil
}

// assistantBlocks maps an assistant turn: a text block if it has text, then
// a tool_use block per call.
func assistantBlocks(msg engine.Message) []sdk.ContentBlockParamUnion {
	var blocks []sdk.ContentBlockParamUnion
	if msg.Content != "" {
		blocks = append(blocks, sdk.NewTextBlock(msg.Content))
	}
	for _, c := range msg.ToolCalls {
		blocks = append(blocks, sdk.NewToolUseBlock(c.ID, toolInput(c.Arguments), c.Name))
	}
	return blocks
}

// toolInput is the input of a tool_use block for arguments stored in the
// transcript. The API takes only a JSON object there, so arguments that are
// not one (malformed JSON the model produced, which the loop answered with
// an error result) are sent as {}: the tool_result that follows carries the
// error, and the model sees that its call failed.
func toolInput(args string) json.RawMessage {
	s := strings.TrimSpace(args)
	var obj map[string]json.RawMessage
	if s == "" || json.Unmarshal([]byte(s), &obj) != nil || obj == nil {
		return emptyInput
	}
	return json.RawMessage(s)
}

// toolResult maps a tool message onto a tool_result block. An empty result
// has no content block, since the API refuses an empty text block.
func toolResult(msg engine.Message) sdk.ContentBlockParamUnion {
	block := sdk.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
	if msg.Content != "" {
		block.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: msg.Content}}}
	}
	if msg.IsError {
		block.IsError = sdk.Bool(true)
	}
	return sdk.ContentBlockParamUnion{OfToolResult: &block}
}

// inputSchema maps a tool's JSON Schema onto the SDK's input schema, which
// spells out properties and required and carries every other keyword as an
// extra field. The type is always object.
func inputSchema(raw json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	var schema sdk.ToolInputSchemaParam
	if len(raw) == 0 {
		return schema, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return schema, fmt.Errorf("not a JSON object: %w", err)
	}
	for key, value := range fields {
		switch key {
		case "type":
		case "properties":
			schema.Properties = value
		case "required":
			if err := json.Unmarshal(value, &schema.Required); err != nil {
				return schema, fmt.Errorf("required is not a list of names: %w", err)
			}
		default:
			if schema.ExtraFields == nil {
				schema.ExtraFields = map[string]any{}
			}
			schema.ExtraFields[key] = value
		}
	}
	return schema, nil
}

// response maps a reply onto an assistant message and its usage. Its text
// blocks are concatenated; its tool_use blocks become the calls, with their
// input as the arguments. Prompt tokens count the cached prompt tokens too.
// A reply that stopped at max_tokens, or at the end of the context window,
// was cut off and is marked truncated.
func response(msg *sdk.Message) engine.ModelResponse {
	out := engine.Message{Role: engine.RoleAssistant}
	var text strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := string(b.Input)
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			out.ToolCalls = append(out.ToolCalls, engine.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	out.Content = text.String()
	u := msg.Usage
	prompt := int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens)
	completion := int(u.OutputTokens)
	return engine.ModelResponse{
		Message: out,
		Usage: engine.Usage{
			PromptTokens:     prompt,
			CompletionTokens: completion,
			TotalTokens:      prompt + completion,
		},
		Truncated: msg.StopReason == sdk.StopReasonMaxTokens || msg.StopReason == sdk.StopReasonModelContextWindowExceeded,
	}
}
