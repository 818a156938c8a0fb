package demo

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Arguments of the filesystem server's tools, in the order their fields
// are encoded.
type (
	pathArgs struct {
		Path string `json:"path"`
	}
	writeFileArgs struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	fileEdit struct {
		OldText string `json:"oldText"`
		NewText string `json:"newText"`
	}
	editFileArgs struct {
		Path  string     `json:"path"`
		Edits []fileEdit `json:"edits"`
	}
	moveFileArgs struct {
		Source      string `json:"source"`
		Destination string `json:"destination"`
	}
)

// maxQuoted bounds the text of a file an answer quotes.
const maxQuoted = 2000

func listFilesScript(dir string) script {
	goal := "list " + folderName(dir)
	return script{
		goal: goal, need: []string{toolListDirectory}, steps: []string{goal},
		next: func(done []turn) reply {
			if len(done) == 0 {
				return call("I'll list "+folderName(dir)+".", toolListDirectory, pathArgs{dir})
			}
			listed, r, ok := lastCall(done, toolListDirectory)
			if !ok {
				return offScript(toolListDirectory)
			}
			// The server writes one entry a line: "[DIR] archive", "[FILE] notes.md".
			var entries []string
			for _, line := range strings.Split(strings.TrimSpace(r.content), "\n") {
				switch {
				case strings.TrimSpace(line) == "":
				case strings.HasPrefix(line, "[DIR] "):
					entries = append(entries, strings.TrimPrefix(line, "[DIR] ")+"/ (folder)")
				case strings.HasPrefix(line, "[FILE] "):
					entries = append(entries, strings.TrimPrefix(line, "[FILE] "))
				default:
					return unreadable(toolListDirectory, r.content)
				}
			}
			where := folderName(argOf(listed, "path"))
			if len(entries) == 0 {
				return answer("%s is empty.", sentenceCase(where))
			}
			count := fmt.Sprintf("%d entries", len(entries))
			if len(entries) == 1 {
				count = "1 entry"
			}
			return answer("%s holds %s:\n- %s", sentenceCase(where), count, strings.Join(entries, "\n- "))
		},
	}
}

// treeEntry is one entry of directory_tree's JSON.
type treeEntry struct {
	Name     string      `json:"name"`
	Type     string      `json:"type"`
	Children []treeEntry `json:"children"`
}

func treeScript(dir string) script {
	goal := "show the tree of " + folderName(dir)
	return script{
		goal: goal, need: []string{toolDirectoryTree}, steps: []string{goal},
		next: func(done []turn) reply {
			if len(done) == 0 {
				return call("I'll read the tree of "+folderName(dir)+".", toolDirectoryTree, pathArgs{dir})
			}
			shown, r, ok := lastCall(done, toolDirectoryTree)
			if !ok {
				return offScript(toolDirectoryTree)
			}
			var tree []treeEntry
			if json.Unmarshal([]byte(r.content), &tree) != nil {
				return unreadable(toolDirectoryTree, r.content)
			}
			where := folderName(argOf(shown, "path"))
			if len(tree) == 0 {
				return answer("%s is empty.", sentenceCase(where))
			}
			var b strings.Builder
			files, folders := drawTree(&b, tree, "")
			return answer("%s holds %s in %s:%s", sentenceCase(where), plural(files, "file"), plural(folders, "folder"), b.String())
		},
	}
}

// drawTree writes the entries as an indented list, a folder's entries
// under it, and counts the files and folders.
func drawTree(b *strings.Builder, entries []treeEntry, indent string) (files, folders int) {
	for _, e := range entries {
		if e.Type == "directory" {
			folders++
			fmt.Fprintf(b, "\n%s- %s/", indent, e.Name)
			f, d := drawTree(b, e.Children, indent+"  ")
			files, folders = files+f, folders+d
			continue
		}
		files++
		fmt.Fprintf(b, "\n%s- %s", indent, e.Name)
	}
	return files, folders
}

func readFileScript(name string) script {
	goal := "read the file " + quote(name)
	return script{
		goal: goal, need: []string{toolReadTextFile}, steps: []string{goal},
		next: func(done []turn) reply {
			if len(done) == 0 {
				return call("I'll read the file "+quote(name)+".", toolReadTextFile, pathArgs{name})
			}
			read, r, ok := lastCall(done, toolReadTextFile)
			if !ok {
				return offScript(toolReadTextFile)
			}
			text := strings.TrimRight(r.content, "\n")
			if strings.TrimSpace(text) == "" {
				return answer("The file %s is empty.", quote(argOf(read, "path")))
			}
			return answer("The file %s (%s) says:\n\n%s", quote(argOf(read, "path")), plural(strings.Count(text, "\n")+1, "line"), clip(text, maxQuoted))
		},
	}
}

func writeFileScript(name, content string) script {
	goal := "write the file " + quote(name)
	return script{
		goal: goal, need: []string{toolWriteFile}, steps: []string{goal},
		next: func(done []turn) reply {
			if len(done) == 0 {
				return call("I'll write the file "+quote(name)+".", toolWriteFile, writeFileArgs{Path: name, Content: content})
			}
			return changedAnswer(done, toolWriteFile)
		},
	}
}

func moveFileScript(src, dst string) script {
	goal := "move " + quote(src) + " to " + quote(dst)
	return script{
		goal: goal, need: []string{toolMoveFile}, steps: []string{goal},
		next: func(done []turn) reply {
			if len(done) == 0 {
				return call("I'll move "+quote(src)+" to "+quote(dst)+".", toolMoveFile, moveFileArgs{Source: src, Destination: dst})
			}
			return changedAnswer(done, toolMoveFile)
		},
	}
}

// editFileScript replaces a phrase in a file: it reads the file, takes the
// first line that holds the phrase and asks edit_file to replace that line
// with the phrase replaced, so the edit matches the file exactly.
func editFileScript(name, phrase, with string) script {
	goal := "edit the file " + quote(name)
	return script{
		goal:  goal,
		need:  []string{toolReadTextFile, toolEditFile},
		steps: []string{"read the file " + quote(name), goal},
		next: func(done []turn) reply {
			switch len(done) {
			case 0:
				return call("I'll read the file "+quote(name)+" first.", toolReadTextFile, pathArgs{name})
			case 1:
				content, ok := lastResult(done, toolReadTextFile)
				if !ok {
					return offScript(toolReadTextFile)
				}
				line, changed, ok := replaceInLine(content, phrase, with)
				if !ok {
					return answer("The file %s does not contain %s, so I did not change it.", quote(name), quote(phrase))
				}
				if changed == line {
					return answer("The file %s already says %s, so there is nothing to change.", quote(name), quote(line))
				}
				return call(fmt.Sprintf("I'll change the line %s of the file %s to %s.", quote(line), quote(name), quote(changed)),
					toolEditFile, editFileArgs{Path: name, Edits: []fileEdit{{OldText: line, NewText: changed}}})
			}
			return changedAnswer(done[1:], toolEditFile)
		},
	}
}

// replaceInLine finds the first line of content that holds phrase, as
// written or else ignoring ASCII case, and returns it and the line with the
// phrase replaced by with.
func replaceInLine(content, phrase, with string) (line, changed string, ok bool) {
	if strings.TrimSpace(phrase) == "" {
		return "", "", false
	}
	lines := strings.Split(strings.ReplaceAll(content, "\r\n", "\n"), "\n")
	for _, find := range []func(string) int{
		func(l string) int { return strings.Index(l, phrase) },
		func(l string) int { return strings.Index(lowerASCII(l), lowerASCII(phrase)) },
	} {
		for _, l := range lines {
			if i := find(l); i >= 0 {
				return l, l[:i] + with + l[i+len(phrase):], true
			}
		}
	}
	return "", "", false
}

// changedAnswer is the final answer after the last call of a file tool
// that changes the sandbox ran: what it did, as it ran. When the operator
// edited the call, the answer says so and what the model had proposed.
func changedAnswer(done []turn, name string) reply {
	for i := len(done) - 1; i >= 0; i-- {
		t := done[i]
		for j := len(t.calls) - 1; j >= 0; j-- {
			if t.calls[j].Name != name || t.results[j].outcome != outcomeOK {
				continue
			}
			proposed, ran, r := t.calls[j], t.ran(j), t.results[j]
			shown := ""
			if name == toolEditFile && strings.TrimSpace(r.content) != "" {
				shown = "\n\nThe server's diff:\n" + strings.TrimSpace(r.content)
			}
			switch {
			case r.edited == nil || r.edited.args != "" && sameArgs(proposed.Arguments, ran.Arguments):
				return reply{text: endSentence("I "+fileDone(ran)) + shown, editsTold: r.edited != nil}
			case r.edited.args == "":
				return reply{editsTold: true, text: fmt.Sprintf("The operator edited my call to %s before it ran; I could not read what ran instead. The server reported: %s",
					infinitive(proposed), quoteSentence(oneLine(clip(r.content, 300))))}
			}
			return reply{editsTold: true, text: endSentence("The operator edited my call before it ran, so what ran is theirs: I "+fileDone(ran)) +
				" " + endSentence("I had proposed to "+fileToDo(proposed)) + shown}
		}
	}
	return offScript(name)
}

// endSentence ends s with a full stop, unless it ends with a quote that
// ends with its own.
func endSentence(s string) string {
	for _, end := range []string{".”", "!”", "?”", "…”"} {
		if strings.HasSuffix(s, end) {
			return s
		}
	}
	return s + "."
}

// sameArgs reports whether two encodings of arguments say the same.
func sameArgs(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	ax, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return string(ax) == string(by)
}

func fileUnknownScript() script {
	return script{unknown: true, next: func([]turn) reply {
		var b strings.Builder
		b.WriteString("I am the demo model: a scripted stand-in, not a language model. " +
			"I did not recognise that request, so I did nothing. I understand a handful of prompts about the files of the sandbox, such as:")
		for _, e := range FileExamples() {
			b.WriteString("\n- " + e)
		}
		b.WriteString("\nPick another model in the playground for free-form requests.")
		return reply{text: b.String()}
	}}
}
