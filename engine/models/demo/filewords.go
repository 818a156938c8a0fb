package demo

import (
	"encoding/json"
	"strings"

	"countersign/engine"
)

// fileInfinitive says what a call of a filesystem tool was meant to do:
// "write the file “hello.txt”". It reports false for other tools.
func fileInfinitive(c engine.ToolCall) (string, bool) {
	switch c.Name {
	case toolListDirectory, "list_directory_with_sizes":
		return "list " + folderName(argOf(c, "path")), true
	case toolDirectoryTree:
		return "show the tree of " + folderName(argOf(c, "path")), true
	case toolReadTextFile, "read_file", "read_media_file":
		return "read the file " + quote(argOf(c, "path")), true
	case "read_multiple_files":
		return "read several files", true
	case toolWriteFile:
		return "write the file " + quote(argOf(c, "path")), true
	case toolEditFile:
		return "edit the file " + quote(argOf(c, "path")), true
	case toolMoveFile:
		return "move " + quote(argOf(c, "source")) + " to " + quote(argOf(c, "destination")), true
	case "create_directory":
		return "create the folder " + quote(argOf(c, "path")), true
	case "search_files":
		return "search " + folderName(argOf(c, "path")) + " for " + quote(argOf(c, "pattern")), true
	case "get_file_info":
		return "look up " + quote(argOf(c, "path")), true
	case "list_allowed_directories":
		return "list the folders I may use", true
	}
	return "", false
}

// filePastTense says what a successful call of a filesystem tool did:
// "wrote the file “hello.txt”". It reports false for other tools.
func filePastTense(c engine.ToolCall) (string, bool) {
	switch c.Name {
	case toolListDirectory, "list_directory_with_sizes":
		return "listed " + folderName(argOf(c, "path")), true
	case toolDirectoryTree:
		return "read the tree of " + folderName(argOf(c, "path")), true
	case toolReadTextFile, "read_file", "read_media_file":
		return "read the file " + quote(argOf(c, "path")), true
	case "read_multiple_files":
		return "read several files", true
	case toolWriteFile:
		return "wrote the file " + quote(argOf(c, "path")), true
	case toolEditFile:
		return "edited the file " + quote(argOf(c, "path")), true
	case toolMoveFile:
		return "moved " + quote(argOf(c, "source")) + " to " + quote(argOf(c, "destination")), true
	case "create_directory":
		return "created the folder " + quote(argOf(c, "path")), true
	case "search_files":
		return "searched " + folderName(argOf(c, "path")) + " for " + quote(argOf(c, "pattern")), true
	case "get_file_info":
		return "looked up " + quote(argOf(c, "path")), true
	case "list_allowed_directories":
		return "listed the folders I may use", true
	}
	return "", false
}

// maxPhrase bounds a file's text or an edit's line in an answer.
const maxPhrase = 200

// fileDone says in detail what a call that changed the sandbox did, from
// the arguments it ran with: "wrote the file “hello.txt”, which now says
// “Hello.”".
func fileDone(c engine.ToolCall) string {
	switch c.Name {
	case toolWriteFile:
		var a writeFileArgs
		if json.Unmarshal([]byte(c.Arguments), &a) == nil {
			return "wrote the file " + quote(a.Path) + ", which now says " + phrase(a.Content)
		}
	case toolEditFile:
		var a editFileArgs
		if json.Unmarshal([]byte(c.Arguments), &a) == nil && len(a.Edits) > 0 {
			changes := make([]string, len(a.Edits))
			for i, e := range a.Edits {
				changes[i] = phrase(e.OldText) + " became " + phrase(e.NewText)
			}
			return "edited the file " + quote(a.Path) + ": " + strings.Join(changes, "; ")
		}
	}
	if s, ok := filePastTense(c); ok {
		return s
	}
	return pastTense(c, "")
}

// fileToDo says in detail what a call that changes the sandbox would do:
// "write “Hello.” to the file “hello.txt”".
func fileToDo(c engine.ToolCall) string {
	switch c.Name {
	case toolWriteFile:
		var a writeFileArgs
		if json.Unmarshal([]byte(c.Arguments), &a) == nil {
			return "write " + phrase(a.Content) + " to the file " + quote(a.Path)
		}
	case toolEditFile:
		var a editFileArgs
		if json.Unmarshal([]byte(c.Arguments), &a) == nil && len(a.Edits) > 0 {
			changes := make([]string, len(a.Edits))
			for i, e := range a.Edits {
				changes[i] = phrase(e.OldText) + " to " + phrase(e.NewText)
			}
			return "change " + strings.Join(changes, " and ") + " in the file " + quote(a.Path)
		}
	}
	return infinitive(c)
}

// phrase quotes a file's text or line on one line, clipped.
func phrase(s string) string { return quote(oneLine(clip(s, maxPhrase))) }
