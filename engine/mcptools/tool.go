package mcptools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"countersign/engine"
)

// tool is an MCP tool of a server as an engine.Tool. A tool whose
// annotations say readOnlyHint: true is a readTool; any other is a
// writeTool, which requires approval, or a previewTool when the config
// says how to preview it.
type tool struct {
	srv    *Server
	name   string
	desc   string
	schema json.RawMessage
	hints  engine.ToolHints
	write  bool
}

// readTool is a tool that only reads: its calls need no approval.
type readTool struct{ *tool }

// writeTool is a tool that may write: its calls wait for a person.
type writeTool struct{ *tool }

// RequiresApproval implements engine.RequiresApproval.
func (writeTool) RequiresApproval() {}

// previewTool is a writeTool the config says how to preview.
type previewTool struct {
	writeTool
	spec PreviewSpec
}

var (
	_ engine.Hinted           = readTool{}
	_ engine.RequiresApproval = writeTool{}
	_ engine.Previewer        = previewTool{}
)

// newTool maps an MCP tool onto an engine.Tool (see the package doc).
func (s *Server) newTool(t *mcp.Tool) engine.Tool {
	schema, err := json.Marshal(t.InputSchema)
	if err != nil || string(schema) == "null" {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	if desc == "" && t.Annotations != nil {
		desc = t.Annotations.Title
	}
	base := &tool{srv: s, name: t.Name, desc: desc, schema: schema, hints: engine.ToolHints{Source: s.source()}}
	a := t.Annotations
	if a != nil && a.ReadOnlyHint {
		return readTool{base}
	}
	base.write = true
	base.hints.External = true
	// Per the MCP spec destructiveHint defaults to true.
	base.hints.Destructive = a == nil || a.DestructiveHint == nil || *a.DestructiveHint
	if spec, ok := s.cfg.Previews[t.Name]; ok {
		return previewTool{writeTool{base}, spec}
	}
	return writeTool{base}
}

// Name implements engine.Tool.
func (t *tool) Name() string { return t.name }

// Description implements engine.Tool.
func (t *tool) Description() string { return t.desc }

// Schema implements engine.Tool.
func (t *tool) Schema() json.RawMessage { return t.schema }

// Hints implements engine.Hinted.
func (t *tool) Hints() engine.ToolHints { return t.hints }

// Call implements engine.Tool: it calls the tool on the server, within
// CallTimeout. A result marked as an error is returned as an error with
// its text. A write whose server goes away during the call returns an
// error wrapping engine.ErrWriteInDoubt.
func (t *tool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	res, err := t.srv.call(ctx, t.name, args)
	if err != nil {
		return "", t.callError(err)
	}
	text := resultText(res)
	if res.IsError {
		return "", resultError(text)
	}
	return text, nil
}

// call calls a tool of the server, within CallTimeout; Close cancels it.
func (s *Server) call(ctx context.Context, name string, args any) (*mcp.CallToolResult, error) {
	sess := s.current()
	if sess == nil {
		return nil, errDown{server: s.cfg.Name}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.callTimeout())
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	return sess.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

// errDown is the error of a call that was not sent because the server is
// down.
type errDown struct{ server string }

func (e errDown) Error() string {
	return fmt.Sprintf("MCP server %s is down: the call was not sent", e.server)
}
