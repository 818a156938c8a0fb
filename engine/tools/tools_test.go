package tools

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"countersign/engine"
)

func TestToolSets(t *testing.T) {
	ws := NewMemory(fixedNow)
	names := func(tools []engine.Tool) []string {
		var out []string
		for _, tl := range tools {
			out = append(out, tl.Name())
		}
		return out
	}
	read := []string{"list_pages", "get_page", "search_pages", "word_count", "current_time"}
	write := []string{"create_page", "update_page", "publish_page", "delete_page"}
	if got := names(ReadTools(ws, fixedNow)); !slices.Equal(got, read) {
		t.Errorf("ReadTools = %v", got)
	}
	if got := names(WriteTools(ws)); !slices.Equal(got, write) {
		t.Errorf("WriteTools = %v", got)
	}
	if got := names(All(ws, fixedNow)); !slices.Equal(got, append(read, write...)) {
		t.Errorf("All = %v", got)
	}
}

func TestOnlyWriteToolsNeedApproval(t *testing.T) {
	want := map[string]bool{
		"list_pages": false, "get_page": false, "search_pages": false, "word_count": false, "current_time": false,
		"create_page": true, "update_page": true, "publish_page": true, "delete_page": true,
	}
	for _, tl := range All(NewMemory(fixedNow), fixedNow) {
		write, ok := want[tl.Name()]
		if !ok {
			t.Errorf("unexpected tool %q", tl.Name())
			continue
		}
		if got := engine.NeedsApproval(tl); got != write {
			t.Errorf("%s: NeedsApproval = %v, want %v", tl.Name(), got, write)
		}
		if _, got := tl.(engine.Previewer); got != write {
			t.Errorf("%s: Previewer = %v, want %v", tl.Name(), got, write)
		}
		if tl.Description() == "" {
			t.Errorf("%s: no description", tl.Name())
		}
	}
}

func TestSchemas(t *testing.T) {
	want := map[string][]string{
		"list_pages":   {},
		"get_page":     {"slug"},
		"search_pages": {"query"},
		"word_count":   {"slug"},
		"current_time": {},
		"create_page":  {"slug", "title", "body"},
		"update_page":  {"slug"},
		"publish_page": {"slug"},
		"delete_page":  {"slug"},
	}
	props := map[string][]string{
		"update_page": {"body", "slug", "title"},
		"create_page": {"body", "slug", "title"},
	}
	for _, tl := range All(NewMemory(fixedNow), fixedNow) {
		var s struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(tl.Schema(), &s); err != nil {
			t.Errorf("%s: schema is not a JSON object: %v", tl.Name(), err)
			continue
		}
		if s.Type != "object" || s.Properties == nil || s.Required == nil ||
			s.AdditionalProperties == nil || *s.AdditionalProperties {
			t.Errorf("%s: schema %s lacks type, properties, required or additionalProperties:false", tl.Name(), tl.Schema())
		}
		if !slices.Equal(s.Required, want[tl.Name()]) {
			t.Errorf("%s: required = %v, want %v", tl.Name(), s.Required, want[tl.Name()])
		}
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; !ok {
				t.Errorf("%s: required %q is not a property", tl.Name(), r)
			}
		}
		if p, ok := props[tl.Name()]; ok {
			var got []string
			for name := range s.Properties {
				got = append(got, name)
			}
			slices.Sort(got)
			if !slices.Equal(got, p) {
				t.Errorf("%s: properties = %v, want %v", tl.Name(), got, p)
			}
		}
	}
}

func TestAgents(t *testing.T) {
	agents := Agents(NewMemory(fixedNow), fixedNow)
	tests := []struct {
		name      string
		title     string
		tools     int
		writes    int
		questions int
		second    bool
		examples  int
	}{
		{"editor", "Content editor", 10, 4, 1, false, 9},
		{"editor-4eyes", "Content editor (four-eyes)", 10, 4, 1, true, 9},
		{"researcher", "Researcher (read-only)", 5, 0, 0, false, 4},
	}
	if len(agents) != len(tests) {
		t.Fatalf("got %d agents, want %d", len(agents), len(tests))
	}
	for i, tt := range tests {
		a, ok := AgentByName(agents, tt.name)
		if !ok {
			t.Fatalf("no agent %q", tt.name)
		}
		if agents[i].Name != tt.name {
			t.Errorf("agent %d is %q, want %q", i, agents[i].Name, tt.name)
		}
		writes, questions := 0, 0
		for _, tl := range a.Tools {
			switch engine.KindOf(tl) {
			case engine.CallWrite:
				writes++
			case engine.CallQuestion:
				questions++
			}
		}
		if a.Title != tt.title || len(a.Tools) != tt.tools || writes != tt.writes || questions != tt.questions ||
			a.SecondApprover != tt.second || len(a.Examples) != tt.examples {
			t.Errorf("%s: title %q, %d tools (%d writes, %d questions), second approver %v, %d examples",
				a.Name, a.Title, len(a.Tools), writes, questions, a.SecondApprover, len(a.Examples))
		}
		if a.Description == "" || a.Instructions == "" {
			t.Errorf("%s: missing description or instructions", a.Name)
		}
		// An agent that may ask is told when to.
		if asks := questions > 0; asks != strings.Contains(a.Instructions, "ask_operator") {
			t.Errorf("%s: %d question tools, but the instructions say %q", a.Name, questions, a.Instructions)
		}
	}
	editor, _ := AgentByName(agents, "editor")
	fourEyes, _ := AgentByName(agents, "editor-4eyes")
	if !slices.Equal(editor.Examples, fourEyes.Examples) {
		t.Error("the editor presets have different examples")
	}
	if _, ok := AgentByName(agents, "nobody"); ok {
		t.Error("AgentByName found an unknown agent")
	}
}
