package demo

import (
	"context"
	"strings"
	"testing"

	"countersign/engine"
)

// editNoteText mirrors the note the loop puts before the result of an
// edited call.
func editNoteText(edited, original, out string) string {
	return engine.EditedPrefix + ": the operator (ann) changed the arguments of this call before it ran. It ran with " + edited +
		" instead of the " + original + " you proposed; that change is done, do not retry the original. Result:\n" + out
}

func TestReadEditNote(t *testing.T) {
	tricky := `{"slug":"pricing","body":"It ran with {} instead of the old text. Result:\nnone"}`
	tests := []struct {
		name, content, args, out string
	}{
		{"plain", editNoteText(`{"slug":"faq"}`, `{"slug":"about"}`, `{"slug":"faq","status":"published"}`),
			`{"slug":"faq"}`, `{"slug":"faq","status":"published"}`},
		{"arguments that look like the note", editNoteText(tricky, `{"slug":"pricing"}`, "ok"), tricky, "ok"},
		{"spaced arguments are compacted", editNoteText(`{ "slug" : "faq" }`, `{}`, "ok"), `{"slug":"faq"}`, "ok"},
		{"an original that is not JSON", editNoteText(`{"slug":"faq"}`, `{"slug": "ab`, "ok"), `{"slug":"faq"}`, "ok"},
		{"an error result", editNoteText(`{"slug":"x"}`, `{}`, `error: page "x" not found`), `{"slug":"x"}`, `error: page "x" not found`},
		{"arguments that are not an object", editNoteText(`["faq"]`, `{}`, "ok"), "", "ok"},
		{"another layout", engine.EditedPrefix + ": the operator changed it. Result:\nok", "", "ok"},
		{"no result", engine.EditedPrefix + ": the operator changed it.", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, out := readEditNote(tt.content)
			if args != tt.args || out != tt.out {
				t.Fatalf("readEditNote = %q, %q; want %q, %q", args, out, tt.args, tt.out)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name    string
		msg     engine.Message
		outcome outcome
		content string
		edited  string // the arguments that ran, "-" when not edited
		answer  string
	}{
		{"result", engine.Message{Content: `{"words":3}`}, outcomeOK, `{"words":3}`, "-", ""},
		{"error", engine.Message{Content: "error: boom", IsError: true}, outcomeFailed, "error: boom", "-", ""},
		{"denial", engine.Message{Content: denialText("no"), IsError: true}, outcomeDenied, denialText("no"), "-", ""},
		{"edited", engine.Message{Content: editNoteText(`{"slug":"faq"}`, `{"slug":"about"}`, "done")}, outcomeOK, "done", `{"slug":"faq"}`, ""},
		{"edited, then failed", engine.Message{Content: editNoteText(`{"slug":"x"}`, `{}`, "error: gone"), IsError: true}, outcomeFailed, "error: gone", `{"slug":"x"}`, ""},
		{"answered question", engine.Message{Content: engine.AnsweredPrefix + ": the operator (ann) answered your question:\nThe pricing page.\n"},
			outcomeAnswered, "", "-", "The pricing page."},
		{"answered in place", engine.Message{Content: engine.AnsweredPrefix + ": this tool did not run; the operator answered in its place:\nNot now.\nMaybe Monday."},
			outcomeAnswered, "", "-", "Not now.\nMaybe Monday."},
		{"answered, another layout", engine.Message{Content: engine.AnsweredPrefix + ": later"}, outcomeAnswered, "", "-", "later"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := classify(tt.msg)
			edited := "-"
			if r.edited != nil {
				edited = r.edited.args
			}
			if r.outcome != tt.outcome || edited != tt.edited || r.answer != tt.answer || (tt.content != "" && r.content != tt.content) {
				t.Fatalf("classify = %+v (edited %q), want outcome %d, content %q, edited %q, answer %q", r, edited, tt.outcome, tt.content, tt.edited, tt.answer)
			}
		})
	}
}

// When the note of an edit cannot be read, the model reads the page back
// and reports what it says.
func TestEditReadBack(t *testing.T) {
	ws := seedWorkspace()
	msgs := []engine.Message{{Role: engine.RoleUser, Content: "Set the price on the pricing page to $12."}}
	step := func(answer func(c engine.ToolCall) (string, bool)) engine.Message {
		t.Helper()
		resp, err := New().Generate(context.Background(), engine.ModelRequest{Messages: msgs, Tools: specs(allTools)})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, resp.Message)
		for _, c := range resp.Message.ToolCalls {
			content, isErr := answer(c)
			msgs = append(msgs, engine.Message{Role: engine.RoleTool, ToolCallID: c.ID, ToolName: c.Name, Content: content, IsError: isErr})
		}
		return resp.Message
	}
	if m := step(ws.exec); m.ToolCalls[0].Name != toolGetPage {
		t.Fatalf("first turn %+v", m)
	}
	// The operator's edit ran with $14; the note is in a layout the model
	// does not know.
	m := step(func(c engine.ToolCall) (string, bool) {
		c.Arguments = strings.Replace(c.Arguments, "$12", "$14", 1)
		out, isErr := ws.exec(c)
		return engine.EditedPrefix + " (new layout): see the audit log. Result:\n" + out, isErr
	})
	if m.ToolCalls[0].Name != toolUpdatePage {
		t.Fatalf("second turn %+v", m)
	}
	m = step(ws.exec)
	checkTurns(t, [][]engine.ToolCall{m.ToolCalls}, [][]wantCall{{c(toolGetPage, slug("pricing"))}})
	if !strings.Contains(m.Content, "read the page “pricing” back") {
		t.Errorf("read-back turn says %q", m.Content)
	}
	final := step(ws.exec)
	if len(final.ToolCalls) != 0 {
		t.Fatalf("no final answer: %+v", final)
	}
	checkText(t, final.Content, []string{"The operator edited my update before it ran: on the page “pricing”, the price is now $14 per seat, not the $12 I proposed."}, nil)
}

func TestPageInAnswer(t *testing.T) {
	pages := []pageInfo{{Slug: "about"}, {Slug: "faq"}, {Slug: "pricing"}, {Slug: "release-notes"}, {Slug: "notes"}}
	tests := []struct{ answer, want string }{
		{"pricing", "pricing"},
		{"The pricing page.", "pricing"},
		{"“faq”, please", "faq"},
		{"Use release-notes", "release-notes"},
		{"the notes", "notes"},
		{"The release notes", "release-notes"},
		{"about or faq", "about"},
		{"The About Us page", "about"},
		{"Never mind.", ""},
		{"welcome", ""}, // not among the pages
		{"pricing-old", ""},
	}
	for _, tt := range tests {
		if got := pageInAnswer(tt.answer, pages); got != tt.want {
			t.Errorf("pageInAnswer(%q) = %q, want %q", tt.answer, got, tt.want)
		}
	}
}
