package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"countersign/engine/tools"
)

// Preview implements engine.Previewer through the same server, as the
// config's PreviewSpec says: a dry run of the call, or the diff from what
// another tool reads to the content the call would write. A failed preview
// is an error, which the engine shows as a warning line.
func (t previewTool) Preview(ctx context.Context, args json.RawMessage) ([]string, error) {
	if err := t.spec.Validate(); err != nil {
		return nil, fmt.Errorf("the preview of %s is misconfigured: %w", t.name, err)
	}
	if t.srv.current() == nil {
		return nil, fmt.Errorf("MCP server %s is down", t.srv.cfg.Name)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(args, &fields); err != nil {
		return nil, fmt.Errorf("arguments are not a JSON object: %w", err)
	}
	if fields == nil {
		fields = map[string]json.RawMessage{}
	}
	if t.spec.DryRun != "" {
		return t.dryRun(ctx, fields)
	}
	return t.diffAgainst(ctx, fields)
}

// dryRun calls the tool itself with its dry-run argument set to true. A
// tool whose schema has no such boolean argument is not called: a server
// that ignored an unknown argument would write.
func (t previewTool) dryRun(ctx context.Context, fields map[string]json.RawMessage) ([]string, error) {
	if !hasBoolArg(t.schema, t.spec.DryRun) {
		return nil, fmt.Errorf("%s has no boolean argument %q, so it is not dry-run: the server might write", t.name, t.spec.DryRun)
	}
	fields[t.spec.DryRun] = json.RawMessage("true")
	res, err := t.srv.call(ctx, t.name, fields)
	if err != nil {
		return nil, fmt.Errorf("dry run: %w", plainCallError(t.srv.cfg.Name, err))
	}
	text := resultText(res)
	if res.IsError {
		return nil, fmt.Errorf("dry run: %w", resultError(text))
	}
	if lines := unfence(splitLines(text)); len(lines) > 0 {
		return lines, nil
	}
	return []string{"(the dry run said nothing)"}, nil
}

// unfence drops the Markdown code fence that wraps a whole text, as the
// reference filesystem server wraps its diffs ("```diff" … "```"): the card
// shows the preview as code already.
func unfence(lines []string) []string {
	if len(lines) >= 2 && strings.HasPrefix(lines[0], "```") && strings.TrimSpace(lines[len(lines)-1]) == "```" {
		return lines[1 : len(lines)-1]
	}
	return lines
}

// diffAgainst reads what the call would replace with the spec's tool and
// diffs it with the content the call would write.
func (t previewTool) diffAgainst(ctx context.Context, fields map[string]json.RawMessage) ([]string, error) {
	pathArg, contentArg := t.spec.pathArg(), t.spec.contentArg()
	var path, content string
	if err := json.Unmarshal(fields[pathArg], &path); err != nil || path == "" {
		return nil, fmt.Errorf("argument %q is not a non-empty string", pathArg)
	}
	if err := json.Unmarshal(fields[contentArg], &content); err != nil {
		return nil, fmt.Errorf("argument %q is not a string", contentArg)
	}
	if !t.srv.onlyReads(t.spec.DiffAgainst) {
		return nil, fmt.Errorf("MCP server %s lists no read-only tool %s to read %s with", t.srv.cfg.Name, t.spec.DiffAgainst, path)
	}
	res, err := t.srv.call(ctx, t.spec.DiffAgainst, map[string]string{pathArg: path})
	if err != nil {
		return nil, fmt.Errorf("reading %s with %s: %w", path, t.spec.DiffAgainst, plainCallError(t.srv.cfg.Name, err))
	}
	current, head := "", fmt.Sprintf("%s would replace %s:", t.name, path)
	if res.IsError {
		// Most likely there is nothing there yet.
		head = fmt.Sprintf("%s would create %s (new file):", t.name, path)
	} else {
		current = resultText(res)
	}
	return append([]string{head}, tools.LineDiff(current, content)...), nil
}

// hasBoolArg reports whether a JSON Schema declares a property of that
// name that is a boolean (or of no declared type).
func hasBoolArg(schema json.RawMessage, name string) bool {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return false
	}
	p, ok := s.Properties[name]
	if !ok {
		return false
	}
	switch typ := p.Type.(type) {
	case nil:
		return true
	case string:
		return typ == "boolean"
	case []any:
		for _, v := range typ {
			if v == "boolean" {
				return true
			}
		}
	}
	return false
}

// plainCallError says why a call made for a preview failed; nothing is in
// doubt, as a preview writes nothing.
func plainCallError(server string, err error) error {
	var down errDown
	if errors.As(err, &down) {
		return fmt.Errorf("MCP server %s is down", server)
	}
	return err
}

// splitLines splits a text into lines, without a last empty one.
func splitLines(text string) []string {
	text = strings.TrimRight(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}
