package tools

import (
	"context"
	"encoding/json"
	"time"

	"countersign/engine"
)

// tool is a built-in tool: its arguments are decoded against params before
// run sees them.
type tool struct {
	name        string
	description string
	params      []param
	schema      json.RawMessage
	run         func(ctx context.Context, a args) (string, error)
}

func newTool(name, description string, params []param, run func(context.Context, args) (string, error)) *tool {
	return &tool{name: name, description: description, params: params, schema: schema(params), run: run}
}

// Name returns the tool's name.
func (t *tool) Name() string { return t.name }

// Description returns what the tool does, for the model.
func (t *tool) Description() string { return t.description }

// Schema returns the JSON Schema of the tool's arguments.
func (t *tool) Schema() json.RawMessage { return t.schema }

// Call decodes the arguments and runs the tool.
func (t *tool) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	a, err := parseArgs(raw, t.params)
	if err != nil {
		return "", err
	}
	return t.run(ctx, a)
}

// writeTool is a tool with side effects: every call waits for approval and
// can be previewed.
type writeTool struct {
	*tool
	preview func(ctx context.Context, a args) ([]string, error)
}

// RequiresApproval marks the tool's calls as waiting for a person's approval.
func (*writeTool) RequiresApproval() {}

// Preview says what a call would do, reading the workspace and never writing.
func (t *writeTool) Preview(ctx context.Context, raw json.RawMessage) ([]string, error) {
	a, err := parseArgs(raw, t.params)
	if err != nil {
		return nil, err
	}
	return t.preview(ctx, a)
}

var (
	_ engine.Tool             = (*tool)(nil)
	_ engine.RequiresApproval = (*writeTool)(nil)
	_ engine.Previewer        = (*writeTool)(nil)
)

// ReadTools returns the read-only tools over ws: list_pages, get_page,
// search_pages, word_count and current_time. now is the clock of
// current_time; nil means time.Now.
func ReadTools(ws Workspace, now func() time.Time) []engine.Tool {
	if now == nil {
		now = time.Now
	}
	return []engine.Tool{listPages(ws), getPage(ws), searchPages(ws), wordCount(ws), currentTime(now)}
}

// WriteTools returns the tools that change ws: create_page, update_page,
// publish_page and delete_page. Each requires approval and has a preview.
func WriteTools(ws Workspace) []engine.Tool {
	return []engine.Tool{createPage(ws), updatePage(ws), publishPage(ws), deletePage(ws)}
}

// All returns ReadTools followed by WriteTools.
func All(ws Workspace, now func() time.Time) []engine.Tool {
	return append(ReadTools(ws, now), WriteTools(ws)...)
}
