package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"countersign/engine"
	"countersign/engine/tools"
)

// An in-test sandbox stands in for the MCP filesystem server: it answers
// with the texts of @modelcontextprotocol/server-filesystem (dist/index.js
// and lib.js), checked against the real server.

// sandboxDir is where the in-test server says its allowed directory is.
const sandboxDir = "/data/sandbox"

// sandbox is an in-memory stand-in for the filesystem server over the
// seeded sandbox: files by slash-separated path relative to it.
type sandbox struct {
	files map[string]string
	// calls counts the calls that reached the server, by tool.
	calls map[string]int
}

func seedSandbox() *sandbox {
	sb := &sandbox{files: map[string]string{}, calls: map[string]int{}}
	for name, content := range tools.SandboxFiles() {
		sb.files[name] = content
	}
	return sb
}

// resolve turns a path of a call into one relative to the sandbox, as
// validatePath does, or fails as the server does outside it.
func (sb *sandbox) resolve(p string) (string, error) {
	abs := p
	if !path.IsAbs(p) {
		abs = path.Join(sandboxDir, p)
	}
	abs = path.Clean(abs)
	if abs == sandboxDir {
		return ".", nil
	}
	if !strings.HasPrefix(abs, sandboxDir+"/") {
		return "", fmt.Errorf("Access denied - path outside allowed directories: %s not in %s", abs, sandboxDir)
	}
	return strings.TrimPrefix(abs, sandboxDir+"/"), nil
}

func abs(rel string) string {
	if rel == "." {
		return sandboxDir
	}
	return sandboxDir + "/" + rel
}

// isDir reports whether rel is a folder: the sandbox, or a prefix of a file.
func (sb *sandbox) isDir(rel string) bool {
	if rel == "." {
		return true
	}
	for name := range sb.files {
		if strings.HasPrefix(name, rel+"/") {
			return true
		}
	}
	return false
}

// entries returns the names directly in folder rel, sorted as the server's
// readdir returns them, and which are folders.
func (sb *sandbox) entries(rel string) ([]string, map[string]bool) {
	prefix := rel + "/"
	if rel == "." {
		prefix = ""
	}
	var names []string
	dirs := map[string]bool{}
	for name := range sb.files {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		first, _, deeper := strings.Cut(rest, "/")
		if !slices.Contains(names, first) {
			names = append(names, first)
		}
		dirs[first] = dirs[first] || deeper
	}
	slices.Sort(names)
	return names, dirs
}

// treeNode is an entry of directory_tree; a folder always has children.
type treeNode struct {
	Name     string      `json:"name"`
	Type     string      `json:"type"`
	Children *[]treeNode `json:"children,omitempty"`
}

func (sb *sandbox) tree(rel string) []treeNode {
	names, dirs := sb.entries(rel)
	out := []treeNode{}
	for _, n := range names {
		if !dirs[n] {
			out = append(out, treeNode{Name: n, Type: "file"})
			continue
		}
		sub := n
		if rel != "." {
			sub = rel + "/" + n
		}
		children := sb.tree(sub)
		out = append(out, treeNode{Name: n, Type: "directory", Children: &children})
	}
	return out
}

// diff renders the server's edit_file result for a file changed from
// before to after: one hunk over the whole file, in a diff fence.
func diff(rel, before, after string) string {
	old := strings.Split(strings.TrimSuffix(before, "\n"), "\n")
	cur := strings.Split(strings.TrimSuffix(after, "\n"), "\n")
	var b strings.Builder
	fmt.Fprintf(&b, "Index: %s\n%s\n--- %s\toriginal\n+++ %s\tmodified\n@@ -1,%d +1,%d @@\n",
		abs(rel), strings.Repeat("=", 67), abs(rel), abs(rel), len(old), len(cur))
	i, j := 0, 0
	for i < len(old) || j < len(cur) {
		switch {
		case i < len(old) && j < len(cur) && old[i] == cur[j]:
			b.WriteString(" " + old[i] + "\n")
			i, j = i+1, j+1
		case i < len(old) && !slices.Contains(cur[j:], old[i]):
			b.WriteString("-" + old[i] + "\n")
			i++
		default:
			b.WriteString("+" + cur[j] + "\n")
			j++
		}
	}
	return "```diff\n" + b.String() + "```\n\n"
}

// exec answers a call as the server does: the text of its result, or the
// message of the error it throws (then the result is an error).
func (sb *sandbox) exec(name string, raw json.RawMessage) (string, error) {
	sb.calls[name]++
	var a struct {
		Path, Content, Source, Destination string
		Edits                              []fileEdit
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", err
	}
	switch name {
	case toolListDirectory:
		rel, err := sb.resolve(a.Path)
		if err != nil {
			return "", err
		}
		if !sb.isDir(rel) {
			return "", fmt.Errorf("ENOENT: no such file or directory, scandir '%s'", abs(rel))
		}
		names, dirs := sb.entries(rel)
		lines := make([]string, len(names))
		for i, n := range names {
			lines[i] = "[FILE] " + n
			if dirs[n] {
				lines[i] = "[DIR] " + n
			}
		}
		return strings.Join(lines, "\n"), nil
	case toolDirectoryTree:
		rel, err := sb.resolve(a.Path)
		if err != nil {
			return "", err
		}
		if !sb.isDir(rel) {
			return "", fmt.Errorf("ENOENT: no such file or directory, scandir '%s'", abs(rel))
		}
		out, err := json.MarshalIndent(sb.tree(rel), "", "  ")
		return string(out), err
	case toolReadTextFile:
		rel, err := sb.resolve(a.Path)
		if err != nil {
			return "", err
		}
		content, ok := sb.files[rel]
		if !ok {
			return "", fmt.Errorf("ENOENT: no such file or directory, open '%s'", abs(rel))
		}
		return content, nil
	case toolWriteFile:
		rel, err := sb.resolve(a.Path)
		if err != nil {
			return "", err
		}
		if !sb.isDir(path.Dir(rel)) {
			return "", fmt.Errorf("ENOENT: no such file or directory, open '%s'", abs(rel))
		}
		sb.files[rel] = a.Content
		return "Successfully wrote to " + a.Path, nil
	case toolEditFile:
		rel, err := sb.resolve(a.Path)
		if err != nil {
			return "", err
		}
		before, ok := sb.files[rel]
		if !ok {
			return "", fmt.Errorf("ENOENT: no such file or directory, open '%s'", abs(rel))
		}
		after := before
		for _, e := range a.Edits {
			if !strings.Contains(after, e.OldText) {
				return "", fmt.Errorf("Could not find exact match for edit:\n%s", e.OldText)
			}
			after = strings.Replace(after, e.OldText, e.NewText, 1)
		}
		sb.files[rel] = after
		return diff(rel, before, after), nil
	case toolMoveFile:
		src, err := sb.resolve(a.Source)
		if err != nil {
			return "", err
		}
		dst, err := sb.resolve(a.Destination)
		if err != nil {
			return "", err
		}
		if _, ok := sb.files[dst]; ok || sb.isDir(dst) {
			return "", fmt.Errorf("Destination already exists: %s", abs(dst))
		}
		content, ok := sb.files[src]
		if !ok || !sb.isDir(path.Dir(dst)) {
			return "", fmt.Errorf("ENOENT: no such file or directory, rename '%s' -> '%s'", abs(src), abs(dst))
		}
		delete(sb.files, src)
		sb.files[dst] = content
		return "Successfully moved " + a.Source + " to " + a.Destination, nil
	}
	return "", fmt.Errorf("Tool %s not found", name)
}

// fsTool is one tool of the in-test server; fsWrite one that needs
// approval, as a tool without readOnlyHint does.
type fsTool struct {
	name string
	sb   *sandbox
}

func (t *fsTool) Name() string        { return t.name }
func (t *fsTool) Description() string { return "The " + t.name + " tool of the filesystem server." }
func (t *fsTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object"}`)
}
func (t *fsTool) Call(_ context.Context, args json.RawMessage) (string, error) {
	return t.sb.exec(t.name, args)
}

type fsWrite struct{ fsTool }

func (*fsWrite) RequiresApproval() {}

// Tools offers the server's tools, as an MCP server's toolset does.
func (sb *sandbox) Tools() []engine.Tool {
	var out []engine.Tool
	for _, n := range []string{toolReadTextFile, toolListDirectory, toolDirectoryTree} {
		out = append(out, &fsTool{n, sb})
	}
	for _, n := range []string{toolWriteFile, toolEditFile, toolMoveFile} {
		out = append(out, &fsWrite{fsTool{n, sb}})
	}
	return out
}

// readOnlyFiles offers only the server's read tools.
type readOnlyFiles struct{ sb *sandbox }

func (r readOnlyFiles) Tools() []engine.Tool {
	return slices.DeleteFunc(r.sb.Tools(), engine.NeedsApproval)
}
