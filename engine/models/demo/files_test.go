package demo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"countersign/engine"
	"countersign/engine/tools"
)

// The tests in this file run the demo model through the real loop, as the
// file assistant: the filesystem server's tools (offered by a toolset, as
// the MCP server's are), ask_operator and current_time, over the in-test
// sandbox of files_server_test.go.

// fileRun is what a run of the file assistant did.
type fileRun struct {
	sb      *sandbox
	answer  string
	turns   [][]engine.ToolCall
	pending [][]string
}

// runFiles runs prompt as the file assistant over the seeded sandbox,
// deciding each suspension in order; the run must then finish.
func runFiles(t *testing.T, prompt string, toolset func(*sandbox) engine.Toolset, decide ...decider) fileRun {
	t.Helper()
	now := func() time.Time { return time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC) }
	sb := seedSandbox()
	var clock engine.Tool
	for _, tl := range tools.ReadTools(tools.NewMemory(now), now) {
		if tl.Name() == toolCurrentTime {
			clock = tl
		}
	}
	if toolset == nil {
		toolset = func(sb *sandbox) engine.Toolset { return sb }
	}
	a := engine.Agent{
		Name: "files", Title: "File assistant",
		Tools:    []engine.Tool{tools.AskOperator(), clock},
		Toolsets: []engine.Toolset{toolset(sb)},
	}
	loop := engine.NewLoop(a, New(), nil)
	out := fileRun{sb: sb}
	res, err := loop.Run(context.Background(), engine.Request{Prompt: prompt})
	for i, d := range decide {
		var are *engine.ApprovalRequiredError
		if !errors.As(err, &are) {
			t.Fatalf("suspension %d: want one, got %v (answer %q)", i+1, err, answerOf(res))
		}
		var names []string
		for _, c := range are.State.Pending {
			names = append(names, c.Name)
		}
		out.pending = append(out.pending, names)
		res, err = loop.Resume(context.Background(), are.State, d(t, are.State))
	}
	if err != nil {
		t.Fatalf("run did not finish: %v", err)
	}
	if res.Termination != engine.TermCompleted || strings.TrimSpace(res.Answer) == "" {
		t.Fatalf("result %+v", res)
	}
	out.answer = res.Answer
	for _, m := range res.Transcript {
		if m.Role == engine.RoleAssistant && len(m.ToolCalls) > 0 {
			out.turns = append(out.turns, m.ToolCalls)
		}
	}
	return out
}

func atPath(s string) map[string]any { return map[string]any{"path": s} }

func wantFile(t *testing.T, sb *sandbox, name, want string) {
	t.Helper()
	got, ok := sb.files[name]
	if !ok {
		t.Errorf("%s does not exist", name)
		return
	}
	if got != want {
		t.Errorf("%s = %q, want %q", name, got, want)
	}
}

func wantNoFile(t *testing.T, sb *sandbox, name string) {
	t.Helper()
	if _, ok := sb.files[name]; ok {
		t.Errorf("%s exists: %q", name, sb.files[name])
	}
}

// Each example prompt of the file assistant, approved: the calls, the
// answer and the sandbox after.
func TestFileScenarios(t *testing.T) {
	seed := tools.SandboxFiles()
	helloArgs := map[string]any{"path": "hello.txt", "content": "Hello from countersign.\n"}
	editArgs := map[string]any{"path": "todo.md", "edits": []any{map[string]any{"oldText": "- [ ] buy milk", "newText": "- [ ] buy oat milk"}}}
	tests := []struct {
		prompt   string
		turns    [][]wantCall
		pending  [][]string
		contains []string
		excludes []string
		check    func(t *testing.T, sb *sandbox)
	}{
		{
			prompt:   "List the files in the sandbox.",
			turns:    [][]wantCall{{c(toolListDirectory, atPath("."))}},
			contains: []string{"The sandbox folder holds 4 entries:\n- archive/ (folder)\n- draft.md\n- notes.md\n- todo.md"},
		},
		{
			prompt:   "What does notes.md say?",
			turns:    [][]wantCall{{c(toolReadTextFile, atPath("notes.md"))}},
			contains: []string{"The file “notes.md” (5 lines) says:\n\n" + strings.TrimSuffix(seed["notes.md"], "\n")},
		},
		{
			prompt:   "Show the folder tree.",
			turns:    [][]wantCall{{c(toolDirectoryTree, atPath("."))}},
			contains: []string{"The sandbox folder holds 4 files in 1 folder:\n- archive/\n  - README.md\n- draft.md\n- notes.md\n- todo.md"},
		},
		{
			prompt:   "Write a file hello.txt that says Hello from countersign.",
			turns:    [][]wantCall{{c(toolWriteFile, helloArgs)}},
			pending:  [][]string{{toolWriteFile}},
			contains: []string{"I wrote the file “hello.txt”, which now says “Hello from countersign.”"},
			excludes: []string{"”."},
			check:    func(t *testing.T, sb *sandbox) { wantFile(t, sb, "hello.txt", "Hello from countersign.\n") },
		},
		{
			prompt:  "In todo.md, replace buy milk with buy oat milk.",
			turns:   [][]wantCall{{c(toolReadTextFile, atPath("todo.md"))}, {c(toolEditFile, editArgs)}},
			pending: [][]string{{toolEditFile}},
			contains: []string{"I edited the file “todo.md”: “- [ ] buy milk” became “- [ ] buy oat milk”.",
				"The server's diff:\n```diff\nIndex: /data/sandbox/todo.md", "\n-- [ ] buy milk\n+- [ ] buy oat milk\n"},
			check: func(t *testing.T, sb *sandbox) {
				wantFile(t, sb, "todo.md", strings.Replace(seed["todo.md"], "buy milk", "buy oat milk", 1))
			},
		},
		{
			prompt:   "Move draft.md to archive/draft.md.",
			turns:    [][]wantCall{{c(toolMoveFile, map[string]any{"source": "draft.md", "destination": "archive/draft.md"})}},
			pending:  [][]string{{toolMoveFile}},
			contains: []string{"I moved “draft.md” to “archive/draft.md”."},
			check: func(t *testing.T, sb *sandbox) {
				wantNoFile(t, sb, "draft.md")
				wantFile(t, sb, "archive/draft.md", seed["draft.md"])
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			var decide []decider
			for range tt.pending {
				decide = append(decide, approveAll)
			}
			r := runFiles(t, tt.prompt, nil, decide...)
			checkTurns(t, r.turns, tt.turns)
			wantPending(t, r.pending, tt.pending...)
			checkText(t, r.answer, tt.contains, append([]string{"operator", "Not done"}, tt.excludes...))
			if tt.check != nil {
				tt.check(t, r.sb)
			}
		})
	}
	if got := FileExamples(); len(got) != len(tests) {
		t.Errorf("%d file examples, %d tested", len(got), len(tests))
	}
	for i, e := range FileExamples() {
		if i < len(tests) && tests[i].prompt != e {
			t.Errorf("example %d is %q, tested %q", i+1, e, tests[i].prompt)
		}
	}
}

// The operator denies the write: nothing is written, the answer says so
// with the reason, and the model calls nothing more.
func TestFileWriteDenied(t *testing.T) {
	deny := verdicts("ann", func(engine.ToolCall) engine.CallVerdict {
		return engine.CallVerdict{Verdict: engine.VerdictDeny, Text: "Not in the sandbox today."}
	})
	r := runFiles(t, "Write a file hello.txt that says Hello from countersign.", nil, deny)
	checkTurns(t, r.turns, [][]wantCall{{c(toolWriteFile, map[string]any{"path": "hello.txt", "content": "Hello from countersign.\n"})}})
	checkText(t, r.answer, []string{
		"The operator denied the request, so I stopped. Reason given: “Not in the sandbox today”.",
		"Not done:\n- write the file “hello.txt” (denied by the operator)",
		"I did not retry anything",
	}, []string{"I wrote", "call write_file"})
	wantNoFile(t, r.sb, "hello.txt")
	if n := r.sb.calls[toolWriteFile]; n != 0 {
		t.Errorf("write_file reached the server %d times", n)
	}
}

// The operator edits the write before it runs: the answer reports what
// ran, not what the model proposed.
func TestFileWriteEdited(t *testing.T) {
	edit := func(args string) decider {
		return verdicts("ann", func(engine.ToolCall) engine.CallVerdict {
			return engine.CallVerdict{Verdict: engine.VerdictEdit, Arguments: args}
		})
	}
	t.Run("the content", func(t *testing.T) {
		r := runFiles(t, "Write a file hello.txt that says Hello from countersign.", nil,
			edit(`{"path":"hello.txt","content":"Hello from Ann.\n"}`))
		checkText(t, r.answer, []string{
			"The operator edited my call before it ran, so what ran is theirs: I wrote the file “hello.txt”, which now says “Hello from Ann.” I had proposed",
			"I had proposed to write “Hello from countersign.” to the file “hello.txt”.",
		}, []string{engine.EditedPrefix, "It ran with"})
		wantFile(t, r.sb, "hello.txt", "Hello from Ann.\n")
	})
	t.Run("the path", func(t *testing.T) {
		r := runFiles(t, "Write a file hello.txt that says Hello from countersign.", nil,
			edit(`{"content":"Hello from countersign.\n","path":"archive/hello.txt"}`))
		checkText(t, r.answer, []string{"I wrote the file “archive/hello.txt”", "I had proposed to write “Hello from countersign.” to the file “hello.txt”."}, nil)
		wantNoFile(t, r.sb, "hello.txt")
		wantFile(t, r.sb, "archive/hello.txt", "Hello from countersign.\n")
	})
	t.Run("unchanged", func(t *testing.T) {
		r := runFiles(t, "Write a file hello.txt that says Hello from countersign.", nil,
			edit(`{"content":"Hello from countersign.\n","path":"hello.txt"}`))
		checkText(t, r.answer, []string{"I wrote the file “hello.txt”, which now says “Hello from countersign.”"}, []string{"proposed", "edited", "”."})
	})
	t.Run("into an error", func(t *testing.T) {
		r := runFiles(t, "Write a file hello.txt that says Hello from countersign.", nil,
			edit(`{"path":"nowhere/hello.txt","content":"Hello from countersign.\n"}`))
		checkText(t, r.answer, []string{
			"I could not finish: a tool reported an error.",
			"write the file “nowhere/hello.txt” (edited by the operator, then failed: ENOENT: no such file or directory, open '/data/sandbox/nowhere/hello.txt')",
		}, []string{"I wrote"})
	})
}

// The operator answers in place of the write: it did not run, and the
// answer passes theirs on.
func TestFileWriteAnswered(t *testing.T) {
	r := runFiles(t, "Write a file hello.txt that says Hello from countersign.", nil, answerWith("Use notes.md for that."))
	checkText(t, r.answer, []string{
		"Instead of letting me write the file “hello.txt”, the operator answered: “Use notes.md for that.”",
		"write the file “hello.txt” (not run: the operator answered instead)",
	}, []string{"I wrote"})
	wantNoFile(t, r.sb, "hello.txt")
}

// The replacement of a phrase: the edit is made of the line that holds it,
// as the file says it; a phrase not in the file changes nothing.
func TestFileEdit(t *testing.T) {
	seed := tools.SandboxFiles()
	t.Run("a phrase not in the file", func(t *testing.T) {
		r := runFiles(t, "In todo.md, replace buy bread with buy rye bread.", nil)
		checkTurns(t, r.turns, [][]wantCall{{c(toolReadTextFile, atPath("todo.md"))}})
		checkText(t, r.answer, []string{"The file “todo.md” does not contain “buy bread”, so I did not change it."}, nil)
		wantFile(t, r.sb, "todo.md", seed["todo.md"])
	})
	t.Run("another way to say it", func(t *testing.T) {
		r := runFiles(t, "Replace “Update the pricing page” with “update the pricing page today” in todo.md", nil, approveAll)
		checkTurns(t, r.turns, [][]wantCall{
			{c(toolReadTextFile, atPath("todo.md"))},
			{c(toolEditFile, map[string]any{"path": "todo.md", "edits": []any{map[string]any{
				"oldText": "- [ ] update the pricing page", "newText": "- [ ] update the pricing page today"}}})},
		})
		wantFile(t, r.sb, "todo.md", strings.Replace(seed["todo.md"], "pricing page\n", "pricing page today\n", 1))
	})
	t.Run("edited by the operator", func(t *testing.T) {
		edit := verdicts("ann", func(c engine.ToolCall) engine.CallVerdict {
			return engine.CallVerdict{Verdict: engine.VerdictEdit, Arguments: strings.Replace(c.Arguments, "buy oat milk", "buy soy milk", 1)}
		})
		r := runFiles(t, "In todo.md, replace buy milk with buy oat milk.", nil, edit)
		checkText(t, r.answer, []string{
			"The operator edited my call before it ran, so what ran is theirs: I edited the file “todo.md”: “- [ ] buy milk” became “- [ ] buy soy milk”.",
			"I had proposed to change “- [ ] buy milk” to “- [ ] buy oat milk” in the file “todo.md”.",
			"+- [ ] buy soy milk",
		}, nil)
		wantFile(t, r.sb, "todo.md", strings.Replace(seed["todo.md"], "buy milk", "buy soy milk", 1))
	})
	t.Run("denied", func(t *testing.T) {
		r := runFiles(t, "In todo.md, replace buy milk with buy oat milk.", nil,
			verdicts("ann", func(engine.ToolCall) engine.CallVerdict { return engine.CallVerdict{Verdict: engine.VerdictDeny} }))
		checkText(t, r.answer, []string{
			"The operator denied the request without giving a reason, so I stopped.",
			"Done:\n- read the file “todo.md”\nNot done:\n- edit the file “todo.md” (denied by the operator)",
		}, nil)
		wantFile(t, r.sb, "todo.md", seed["todo.md"])
	})
}

// Tool errors are reported in the server's words, and what was not reached
// is named.
func TestFileErrors(t *testing.T) {
	t.Run("a file that is not there", func(t *testing.T) {
		r := runFiles(t, "What does missing.md say?", nil)
		checkText(t, r.answer, []string{"I could not finish: a tool reported an error.",
			"read the file “missing.md” (failed: ENOENT: no such file or directory, open '/data/sandbox/missing.md')"}, nil)
	})
	t.Run("an edit of a file that is not there", func(t *testing.T) {
		r := runFiles(t, "In missing.md, replace a with b.", nil)
		checkTurns(t, r.turns, [][]wantCall{{c(toolReadTextFile, atPath("missing.md"))}})
		checkText(t, r.answer, []string{"edit the file “missing.md” (not attempted)"}, nil)
	})
	t.Run("a destination that exists", func(t *testing.T) {
		r := runFiles(t, "Move notes.md to archive/README.md.", nil, approveAll)
		checkText(t, r.answer, []string{"move “notes.md” to “archive/README.md” (failed: Destination already exists: /data/sandbox/archive/README.md)"}, nil)
		wantFile(t, r.sb, "notes.md", tools.SandboxFiles()["notes.md"])
	})
}

// An agent that offers the server's read tools only cannot write: it says
// so without calling anything, and still reads.
func TestFileToolsMissing(t *testing.T) {
	readOnly := func(sb *sandbox) engine.Toolset { return readOnlyFiles{sb} }
	r := runFiles(t, "Write a file hello.txt that says Hello from countersign.", readOnly)
	checkTurns(t, r.turns, nil)
	checkText(t, r.answer, []string{"This agent cannot write the file “hello.txt”: that needs the write_file tool", "changed nothing"}, nil)
	r = runFiles(t, "What does notes.md say?", readOnly)
	checkTurns(t, r.turns, [][]wantCall{{c(toolReadTextFile, atPath("notes.md"))}})
}

// The file assistant still tells the time, and answers a prompt it does not
// know with the file examples.
func TestFileAgentOtherPrompts(t *testing.T) {
	r := runFiles(t, "What time is it?", nil)
	checkTurns(t, r.turns, [][]wantCall{{c(toolCurrentTime, nil)}})
	checkText(t, r.answer, []string{"2026-03-01T12:00:00Z"}, nil)
	r = runFiles(t, "Tell me a joke about penguins.", nil)
	checkTurns(t, r.turns, nil)
	checkText(t, r.answer, append([]string{"not a language model", "files of the sandbox"}, FileExamples()...), []string{Examples()[0]})
}

// Without the filesystem tools the model behaves exactly as before: every
// prompt, the file prompts included, is planned by plan alone. With them
// added to the workspace tools, the workspace prompts are planned the same.
func TestWithoutFileTools(t *testing.T) {
	workspace := specs(append(slices.Clone(allTools), toolAskOperator))
	withFiles := specs(append(slices.Clone(allTools), toolAskOperator, toolReadTextFile, toolListDirectory, toolDirectoryTree, toolWriteFile, toolEditFile, toolMoveFile))
	generate := func(prompt string, tools []engine.ToolSpec) engine.Message {
		t.Helper()
		resp, err := New().Generate(context.Background(), engine.ModelRequest{
			Messages: []engine.Message{{Role: engine.RoleUser, Content: prompt}}, Tools: tools})
		if err != nil {
			t.Fatalf("%q: %v", prompt, err)
		}
		return resp.Message
	}
	for _, e := range append(Examples(), FileExamples()...) {
		conv, _ := readTranscript([]engine.Message{{Role: engine.RoleUser, Content: e}})
		want := decide(conv, plan(e), wantsRetry(e), offeredTools(workspace))
		got := generate(e, workspace)
		if got.Content != want.text || len(got.ToolCalls) != len(want.calls) {
			t.Errorf("%q without file tools: got %q %v, want %q with %d calls", e, got.Content, got.ToolCalls, want.text, len(want.calls))
		}
		if slices.Contains(Examples(), e) {
			if g := generate(e, withFiles); g.Content != got.Content || !slices.Equal(g.ToolCalls, got.ToolCalls) {
				t.Errorf("%q with file tools too: got %q %v, want %q %v", e, g.Content, g.ToolCalls, got.Content, got.ToolCalls)
			}
		}
	}
	// As before, the file prompts mean nothing to the workspace agents.
	if m := generate("What does notes.md say?", workspace); len(m.ToolCalls) != 0 || !strings.Contains(m.Content, "did not recognise") {
		t.Errorf("a file prompt without file tools: %q %v", m.Content, m.ToolCalls)
	}
}

func TestPlanFiles(t *testing.T) {
	tests := []struct {
		prompt string
		calls  []plannedCall // the first turn; nil: not about files
	}{
		{"List the files in the sandbox.", []plannedCall{{toolListDirectory, pathArgs{"."}}}},
		{"list the files in the archive folder", []plannedCall{{toolListDirectory, pathArgs{"archive"}}}},
		{"Which files are in archive/?", []plannedCall{{toolListDirectory, pathArgs{"archive"}}}},
		{"Show the folder tree.", []plannedCall{{toolDirectoryTree, pathArgs{"."}}}},
		{"Show me the directory structure of archive", []plannedCall{{toolDirectoryTree, pathArgs{"archive"}}}},
		{"What does notes.md say?", []plannedCall{{toolReadTextFile, pathArgs{"notes.md"}}}},
		{"Read archive/README.md", []plannedCall{{toolReadTextFile, pathArgs{"archive/README.md"}}}},
		{"what's in todo.md", []plannedCall{{toolReadTextFile, pathArgs{"todo.md"}}}},
		{"Write a file hello.txt that says Hello from countersign.", []plannedCall{{toolWriteFile, writeFileArgs{"hello.txt", "Hello from countersign.\n"}}}},
		{`Create a new file called "plan.md" containing “Ship it.”`, []plannedCall{{toolWriteFile, writeFileArgs{"plan.md", "Ship it.\n"}}}},
		{"In todo.md, replace buy milk with buy oat milk.", []plannedCall{{toolReadTextFile, pathArgs{"todo.md"}}}},
		{"Move draft.md to archive/draft.md.", []plannedCall{{toolMoveFile, moveFileArgs{"draft.md", "archive/draft.md"}}}},
		{"Move draft.md into archive", []plannedCall{{toolMoveFile, moveFileArgs{"draft.md", "archive/draft.md"}}}},
		{"move draft.md to the archive folder.", []plannedCall{{toolMoveFile, moveFileArgs{"draft.md", "archive/draft.md"}}}},
		{"Rename draft.md to ready.md", []plannedCall{{toolMoveFile, moveFileArgs{"draft.md", "ready.md"}}}},
		{"List all pages.", nil},
		{"What time is it?", nil},
		{"Publish the about page.", nil},
	}
	for _, tt := range tests {
		s, ok := planFiles(tt.prompt)
		if !ok {
			if tt.calls != nil {
				t.Errorf("%q is not planned as a prompt about files", tt.prompt)
			}
			continue
		}
		if tt.calls == nil {
			t.Errorf("%q is planned as a prompt about files", tt.prompt)
			continue
		}
		if got := s.next(nil).calls; fmt.Sprint(got) != fmt.Sprint(tt.calls) {
			t.Errorf("%q: first calls %v, want %v", tt.prompt, got, tt.calls)
		}
	}
}
