package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"countersign/engine"
)

// kindsServer has a read tool, an additive write tool and a tool without
// annotations.
func kindsServer() *memServer {
	no := false
	return newMemServer(func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "look", Description: "Looks.", InputSchema: object("path"),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return textResult("seen"), nil
			})
		s.AddTool(&mcp.Tool{Name: "append", Title: "Append a line", InputSchema: object("line"),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: &no}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil })
		s.AddTool(&mcp.Tool{Name: "wipe", Description: "Wipes.", InputSchema: object()},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return textResult("gone"), nil
			})
	})
}

func TestAnnotationsMapToApproval(t *testing.T) {
	s := start(t, kindsServer(), ServerConfig{Name: "files"}, nil)
	if st := s.Status(); st.State != StateUp {
		t.Fatalf("state after Start = %s (%s), want up", st.State, st.Err)
	}
	cases := []struct {
		tool        string
		kind        engine.CallKind
		desc        string
		destructive bool
		external    bool
	}{
		{"look", engine.CallRead, "Looks.", false, false},
		{"append", engine.CallWrite, "Append a line", false, true},
		{"wipe", engine.CallWrite, "Wipes.", true, true},
	}
	for _, c := range cases {
		tl := toolNamed(t, s, c.tool)
		if got := engine.KindOf(tl); got != c.kind {
			t.Errorf("%s: kind %v, want %v", c.tool, got, c.kind)
		}
		if got := engine.NeedsApproval(tl); got != (c.kind == engine.CallWrite) {
			t.Errorf("%s: needs approval %v", c.tool, got)
		}
		if tl.Description() != c.desc {
			t.Errorf("%s: description %q, want %q", c.tool, tl.Description(), c.desc)
		}
		h := engine.HintsOf(tl)
		want := engine.ToolHints{Source: "MCP server files", Destructive: c.destructive, External: c.external}
		if h != want {
			t.Errorf("%s: hints %+v, want %+v", c.tool, h, want)
		}
		if _, ok := tl.(engine.Previewer); ok {
			t.Errorf("%s previews without a preview spec", c.tool)
		}
	}
}

func TestSchemaPassesThrough(t *testing.T) {
	schema := `{"type":"object","properties":{"n":{"type":"integer","minimum":3,"description":"How many."}},"required":["n"],"additionalProperties":false}`
	m := newMemServer(func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "count", InputSchema: json.RawMessage(schema)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("1"), nil })
	})
	s := start(t, m, ServerConfig{}, nil)
	var got, want any
	if err := json.Unmarshal(toolNamed(t, s, "count").Schema(), &got); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal([]byte(schema), &want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("schema = %s, want %s", toolNamed(t, s, "count").Schema(), schema)
	}
}

// resultsServer answers with each kind of result.
func resultsServer() *memServer {
	return newMemServer(func(s *mcp.Server) {
		read := &mcp.ToolAnnotations{ReadOnlyHint: true}
		add := func(name string, write bool, h mcp.ToolHandler) {
			tl := &mcp.Tool{Name: name, InputSchema: object("x")}
			if !write {
				tl.Annotations = read
			}
			s.AddTool(tl, h)
		}
		add("echo", false, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x is"}, &mcp.TextContent{Text: argsOf(req)["x"].(string)}}}, nil
		})
		add("structured", false, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"total": 3}}, nil
		})
		add("picture", false, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a plot"},
				&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 42)},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a.txt", Text: "inside"}}}}, nil
		})
		add("fails", true, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such row"}}}, nil
		})
		add("refuses", true, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("quota exceeded")
		})
	})
}

func TestCallResults(t *testing.T) {
	s := start(t, resultsServer(), ServerConfig{}, nil)
	ctx := context.Background()
	cases := []struct{ tool, args, want string }{
		{"echo", `{"x":"42"}`, "x is\n42"},
		{"structured", `{}`, `{"total":3}`},
		{"picture", `{}`, "a plot\n[image image/png, 42 bytes not shown]\n[resource file:///a.txt]\ninside"},
	}
	for _, c := range cases {
		out, err := toolNamed(t, s, c.tool).Call(ctx, json.RawMessage(c.args))
		if err != nil || out != c.want {
			t.Errorf("%s = %q, %v; want %q", c.tool, out, err, c.want)
		}
	}
}

func TestErrorResultFailsTheCall(t *testing.T) {
	s := start(t, resultsServer(), ServerConfig{}, nil)
	_, err := toolNamed(t, s, "fails").Call(context.Background(), json.RawMessage(`{}`))
	if err == nil || err.Error() != "no such row" {
		t.Fatalf("err = %v, want the result's text", err)
	}
	if isInDoubt(err) {
		t.Fatal("an error result left the write in doubt")
	}
}

func TestJSONRPCErrorIsNotInDoubt(t *testing.T) {
	s := start(t, resultsServer(), ServerConfig{}, nil)
	_, err := toolNamed(t, s, "refuses").Call(context.Background(), json.RawMessage(`{}`))
	if err == nil || !strings.Contains(err.Error(), "quota exceeded") {
		t.Fatalf("err = %v, want the server's error", err)
	}
	if isInDoubt(err) {
		t.Fatalf("a server that answered with an error left the write in doubt: %v", err)
	}
	if st := s.Status(); st.State != StateUp {
		t.Fatalf("state %s after an error response, want up", st.State)
	}
}

func TestAllowlistHidesTools(t *testing.T) {
	s := start(t, kindsServer(), ServerConfig{Tools: []string{"wipe", "look", "teleport"}}, nil)
	if got := names(s.Tools()); !reflect.DeepEqual(got, []string{"look", "wipe"}) {
		t.Fatalf("offered %v, want look and wipe", got)
	}
	st := s.Status()
	if !reflect.DeepEqual(st.Tools, []string{"look", "wipe"}) || !reflect.DeepEqual(st.Hidden, []string{"append"}) ||
		!reflect.DeepEqual(st.Missing, []string{"teleport"}) {
		t.Fatalf("status tools %v hidden %v missing %v", st.Tools, st.Hidden, st.Missing)
	}
}

func TestToolListChangedRelists(t *testing.T) {
	m := kindsServer()
	s := start(t, m, ServerConfig{}, nil)
	m.srv.AddTool(&mcp.Tool{Name: "fresh", InputSchema: object(), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("new"), nil
		})
	waitFor(t, "the new tool", func() bool { return len(s.Tools()) == 4 })
	if out, err := toolNamed(t, s, "fresh").Call(context.Background(), json.RawMessage(`{}`)); err != nil || out != "new" {
		t.Fatalf("fresh = %q, %v", out, err)
	}
	m.srv.RemoveTools("wipe", "append")
	waitFor(t, "the removed tools to go", func() bool { return len(s.Tools()) == 2 })
	if got := s.Status().Tools; !reflect.DeepEqual(got, []string{"fresh", "look"}) && !reflect.DeepEqual(got, []string{"look", "fresh"}) {
		t.Fatalf("status tools %v", got)
	}
}
