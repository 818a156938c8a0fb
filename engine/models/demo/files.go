package demo

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// Names of the tools of the reference MCP filesystem server
// (@modelcontextprotocol/server-filesystem) that the file scripts call.
const (
	toolListDirectory = "list_directory"
	toolDirectoryTree = "directory_tree"
	toolReadTextFile  = "read_text_file"
	toolWriteFile     = "write_file"
	toolEditFile      = "edit_file"
	toolMoveFile      = "move_file"
)

// fileTools are all the tools of the filesystem server. An agent that
// offers any of them works on files: its prompts are read as prompts about
// files first (see planFor). An agent that offers none gets exactly the
// workspace scripts of plan.
var fileTools = []string{
	"read_file", toolReadTextFile, "read_media_file", "read_multiple_files",
	toolWriteFile, toolEditFile, "create_directory", toolListDirectory,
	"list_directory_with_sizes", toolDirectoryTree, toolMoveFile, "search_files",
	"get_file_info", "list_allowed_directories",
}

// FileExamples returns the prompts about the sandbox's files the demo
// model understands when the agent offers the filesystem server's tools,
// as the file assistant's playground offers them. They rely on the files of
// tools.SandboxFiles. Examples does not hold them: those are planned with
// the workspace tools alone.
func FileExamples() []string {
	return []string{
		"List the files in the sandbox.",
		"What does notes.md say?",
		"Show the folder tree.",
		"Write a file hello.txt that says Hello from countersign.",
		"In todo.md, replace buy milk with buy oat milk.",
		"Move draft.md to archive/draft.md.",
	}
}

// offersFiles reports whether the agent offers any tool of the filesystem
// server.
func offersFiles(offered map[string]bool) bool {
	return slices.ContainsFunc(fileTools, func(name string) bool { return offered[name] })
}

// planFor returns the script for a prompt given the tools on offer. Only an
// agent that offers the filesystem tools reads prompts about files; for it,
// a prompt that is about neither files nor the workspace is answered with
// the file examples.
func planFor(prompt string, offered map[string]bool) script {
	if !offersFiles(offered) {
		return plan(prompt)
	}
	if s, ok := planFiles(prompt); ok {
		return s
	}
	if s := plan(prompt); !s.unknown {
		return s
	}
	return fileUnknownScript()
}

// Prompt patterns about files, matched case-insensitively against the
// prompt as written, so that file names keep their case. planFiles tries
// them in a fixed order, the more specific first: "write a file … that
// says …" is a write, not a read.
var (
	reFileEditIn   = regexp.MustCompile(`(?is)^in\s+(?:the\s+file\s+)?(\S+?)\s*[,:]?\s+(?:replace|change)\s+(.+?)\s+(?:with|to|by)\s+(.+)$`)
	reFileEditTail = regexp.MustCompile(`(?is)^(?:replace|change)\s+(.+?)\s+(?:with|to|by)\s+(.+?)\s+in\s+(?:the\s+file\s+)?(\S+)$`)
	reFileMove     = regexp.MustCompile(`(?is)\b(move|rename)\s+(?:the\s+)?(?:file\s+|folder\s+)?(\S+)\s+(to|into|as)\s+(?:the\s+)?(?:folder\s+|directory\s+)?(\S+?)(\s+(?:folder|directory))?$`)
	reFileWrite    = regexp.MustCompile(`(?is)\b(?:write|create|make|save|add)\s+(?:a\s+|an\s+|the\s+)?(?:new\s+)?(?:text\s+)?file\s+(?:called\s+|named\s+)?(\S+?)[,:]?\s+` +
		`(?:(?:that|which)\s+(?:says|reads|contains|holds)|saying|containing|with\s+the\s+(?:text|content|contents|words))\s*:?\s*(.+)$`)
	reFileTree   = regexp.MustCompile(`(?i)\btree\b|\b(?:folder|directory|file)\s+(?:structure|hierarchy|layout)\b`)
	reFileList   = regexp.MustCompile(`(?i)\b(?:list|show|which|what)\b.*\b(?:files|folders|directories|sandbox|folder|directory)\b`)
	reFileRead   = regexp.MustCompile(`(?i)\bwhat\s+(?:does|do)\b.*\b(?:say|contain|hold)\b|\bwhat(?:'s|’s|\s+is)\s+in\b|\b(?:read|open|show|print|display|cat)\b|\bcontents?\b`)
	reFileToken  = regexp.MustCompile(`(?:[\w-]+/)*[\w-][\w.-]*\.[A-Za-z0-9]+\b`)
	reFolderIn   = regexp.MustCompile(`(?i)\b(?:in|of|inside|under|within)\s+(?:the\s+)?(?:folder\s+|directory\s+)?["'“‘` + "`" + `]?([\w./-]+)`)
	reEndOfWords = regexp.MustCompile(`[.!]\s*$`)
)

// planFiles returns the script for a prompt about files, or false when the
// prompt is not about files.
func planFiles(prompt string) (script, bool) {
	p := strings.TrimSpace(prompt)
	plain := reEndOfWords.ReplaceAllString(p, "")
	if m := reFileEditIn.FindStringSubmatch(plain); m != nil {
		return editFileScript(fileName(m[1]), unquote(m[2]), unquote(m[3])), true
	}
	if m := reFileEditTail.FindStringSubmatch(plain); m != nil {
		return editFileScript(fileName(m[3]), unquote(m[1]), unquote(m[2])), true
	}
	if m := reFileMove.FindStringSubmatch(plain); m != nil {
		src, dst := fileName(m[2]), fileName(m[4])
		// "Move draft.md into archive", "… to the archive folder": the
		// destination is a folder, and move_file wants the new path.
		into := strings.EqualFold(m[3], "into") || m[5] != "" || strings.HasSuffix(m[4], "/") ||
			strings.EqualFold(m[1], "move") && !strings.Contains(path.Base(dst), ".")
		if into && !strings.EqualFold(m[3], "as") {
			dst = path.Join(dst, path.Base(src))
		}
		return moveFileScript(src, dst), true
	}
	if m := reFileWrite.FindStringSubmatch(p); m != nil {
		return writeFileScript(fileName(m[1]), unquote(strings.TrimSpace(m[2]))+"\n"), true
	}
	if reFileTree.MatchString(p) {
		return treeScript(folderIn(plain)), true
	}
	if reFileList.MatchString(p) {
		return listFilesScript(folderIn(plain)), true
	}
	if reFileRead.MatchString(p) {
		if name := reFileToken.FindString(p); name != "" {
			return readFileScript(name), true
		}
	}
	return script{}, false
}

// fileName cleans a file name taken from a prompt: without quotes around
// it or punctuation after it.
func fileName(s string) string {
	s = strings.Trim(s, `"'“”‘’`+"`")
	s = strings.TrimRight(s, ",;:!?")
	s = strings.Trim(s, `"'“”‘’`+"`")
	if len(s) > 1 && strings.HasSuffix(s, ".") {
		s = strings.TrimSuffix(s, ".")
	}
	if s == "" {
		return "."
	}
	return s
}

// unquote returns the text of a phrase taken from a prompt: what is inside
// the quotes when it is quoted, as in “buy milk”, else the phrase.
func unquote(s string) string {
	s = strings.TrimSpace(s)
	for _, q := range [][2]string{{`"`, `"`}, {"“", "”"}, {"'", "'"}, {"‘", "’"}, {"`", "`"}} {
		t := strings.TrimRight(s, ".!")
		if len(t) >= len(q[0])+len(q[1]) && strings.HasPrefix(t, q[0]) && strings.HasSuffix(t, q[1]) {
			return t[len(q[0]) : len(t)-len(q[1])]
		}
	}
	return s
}

// folderIn returns the folder a list or tree prompt names, as the server's
// path: "." for the sandbox itself or when it names none.
func folderIn(p string) string {
	m := reFolderIn.FindStringSubmatch(p)
	if m == nil {
		return "."
	}
	name := strings.TrimRight(fileName(m[1]), "/")
	switch strings.ToLower(name) {
	case "", ".", "sandbox", "root", "top", "folder", "directory", "files", "current", "main", "whole", "entire", "this":
		return "."
	}
	return name
}

// folderName says which folder a path is: "the sandbox folder" for the
// allowed directory itself, else “archive”.
func folderName(p string) string {
	switch p {
	case "", ".", "./":
		return "the sandbox folder"
	}
	return "the folder " + quote(p)
}
