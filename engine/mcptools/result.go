package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"countersign/engine"
)

// resultText renders a tool result as the text the model sees: its text
// contents joined by newlines, or the JSON of its structured content when
// it has no text; other contents are named in a short line each.
func resultText(res *mcp.CallToolResult) string {
	var lines []string
	hasText := false
	for _, c := range res.Content {
		if _, ok := c.(*mcp.TextContent); ok {
			hasText = true
		}
	}
	if !hasText && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			lines = append(lines, string(b))
		}
	}
	for _, c := range res.Content {
		lines = append(lines, contentText(c))
	}
	return strings.Join(lines, "\n")
}

// contentText renders one content of a result.
func contentText(c mcp.Content) string {
	switch c := c.(type) {
	case *mcp.TextContent:
		return c.Text
	case *mcp.ImageContent:
		return fmt.Sprintf("[image %s, %d bytes not shown]", c.MIMEType, len(c.Data))
	case *mcp.AudioContent:
		return fmt.Sprintf("[audio %s, %d bytes not shown]", c.MIMEType, len(c.Data))
	case *mcp.ResourceLink:
		return fmt.Sprintf("[resource link %s %s]", c.URI, or(c.Title, c.Name))
	case *mcp.EmbeddedResource:
		r := c.Resource
		switch {
		case r == nil:
			return "[empty embedded resource]"
		case r.Text != "":
			return fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text)
		default:
			return fmt.Sprintf("[resource %s %s, %d bytes not shown]", r.URI, r.MIMEType, len(r.Blob))
		}
	}
	return fmt.Sprintf("[%T content not shown]", c)
}

// resultError is the error of a result marked as an error.
func resultError(text string) error {
	if strings.TrimSpace(text) == "" {
		text = "the tool reported an error without saying why"
	}
	return errors.New(text)
}

// callError classifies the error of a call the server did not answer with
// a result. The server answered with an error response: the call failed,
// nothing more. The call was never sent: the server is down. Anything else
// (the connection broke, the server died, the call timed out or was
// cancelled) leaves a write in doubt.
func (t *tool) callError(err error) error {
	server := t.srv.cfg.Name
	var werr *jsonrpc.Error
	var down errDown
	switch {
	case errors.As(err, &werr):
		return fmt.Errorf("MCP server %s refused the call: %s", server, werr.Message)
	case errors.As(err, &down):
		return down
	case errors.Is(err, mcp.ErrConnectionClosed):
		// The SDK refuses to send on a connection that is closing.
		return fmt.Errorf("MCP server %s is down: the call was not sent (%v)", server, err)
	case t.write && errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("MCP server %s did not answer the call in time (%w), so the write may or may not have happened: %w", server, err, engine.ErrWriteInDoubt)
	case t.write:
		return fmt.Errorf("MCP server %s went away during the call (%w), so the write may or may not have happened: %w", server, err, engine.ErrWriteInDoubt)
	}
	return fmt.Errorf("MCP server %s: the call failed: %w", server, err)
}
