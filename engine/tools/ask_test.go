package tools

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"countersign/engine"
)

func TestAskOperatorIsAQuestion(t *testing.T) {
	ask := AskOperator()
	if ask.Name() != "ask_operator" || ask.Description() == "" {
		t.Fatalf("name %q, description %q", ask.Name(), ask.Description())
	}
	if _, ok := ask.(engine.AsksOperator); !ok {
		t.Fatal("ask_operator does not implement engine.AsksOperator")
	}
	if _, ok := ask.(engine.RequiresApproval); ok {
		t.Error("ask_operator requires approval: a question is answered, not approved")
	}
	if _, ok := ask.(engine.Previewer); ok {
		t.Error("ask_operator has a preview")
	}
	if got := engine.KindOf(ask); got != engine.CallQuestion {
		t.Errorf("KindOf = %q, want %q", got, engine.CallQuestion)
	}
	if !engine.NeedsApproval(ask) {
		t.Error("a call of ask_operator does not wait for a person")
	}
}

func TestAskOperatorSchema(t *testing.T) {
	var s struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type  string `json:"type"`
			Items *struct {
				Type string `json:"type"`
			} `json:"items"`
			Description string `json:"description"`
		} `json:"properties"`
		Required             []string `json:"required"`
		AdditionalProperties *bool    `json:"additionalProperties"`
	}
	if err := json.Unmarshal(AskOperator().Schema(), &s); err != nil {
		t.Fatal(err)
	}
	q, o := s.Properties["question"], s.Properties["options"]
	if s.Type != "object" || !slices.Equal(s.Required, []string{"question"}) || s.AdditionalProperties == nil || *s.AdditionalProperties ||
		len(s.Properties) != 2 || q.Type != "string" || q.Items != nil || o.Type != "array" || o.Items == nil || o.Items.Type != "string" ||
		q.Description == "" || o.Description == "" {
		t.Errorf("schema %s", AskOperator().Schema())
	}
}

// Its call never runs in the loop; called directly, it checks its arguments
// and says that a person answers it.
func TestAskOperatorCall(t *testing.T) {
	tests := []struct {
		args    string
		wantErr error
		errText string
	}{
		{`{"question":"Which page?"}`, ErrAnsweredByOperator, "answered by a person"},
		{`{"question":"Which page?","options":["about","faq"]}`, ErrAnsweredByOperator, "never runs"},
		{`{"question":"Which page?","options":[]}`, ErrAnsweredByOperator, ""},
		{`{"question":"Which page?","options":null}`, ErrAnsweredByOperator, ""},
		{`{}`, ErrInvalidArguments, `missing required field "question"`},
		{`{"question":"  "}`, ErrInvalidArguments, "the question is empty"},
		{`{"question":"Which?","options":"about"}`, ErrInvalidArguments, `field "options" must be a list of strings`},
		{`{"question":"Which?","options":[1]}`, ErrInvalidArguments, `field "options" must be a list of strings`},
		{`{"question":["Which?"]}`, ErrInvalidArguments, `field "question" must be a string`},
		{`{"question":"Which?","answer":"about"}`, ErrInvalidArguments, `unknown field "answer"`},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			out, err := AskOperator().Call(context.Background(), json.RawMessage(tt.args))
			if out != "" || !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errText) {
				t.Fatalf("Call = %q, %v; want %v saying %q", out, err, tt.wantErr, tt.errText)
			}
		})
	}
}

func TestParseListArgs(t *testing.T) {
	params := []param{{name: "q", required: true}, {name: "opts", list: true}}
	a, err := parseArgs(json.RawMessage(`{"q":"x","opts":["a","b"]}`), params)
	if err != nil || a.str("q") != "x" || !slices.Equal(a.list("opts"), []string{"a", "b"}) || a.opt("opts") != nil {
		t.Fatalf("parseArgs = %+v, %v", a, err)
	}
	a, err = parseArgs(json.RawMessage(`{"q":"x"}`), params)
	if err != nil || a.list("opts") != nil {
		t.Fatalf("absent list = %+v, %v", a, err)
	}
}

// The editors' examples that make the agent ask rest on the seed: there is
// no offers page, and there is more than one draft.
func TestAskingExamplesFitTheSeed(t *testing.T) {
	editor, _ := AgentByName(Agents(NewMemory(fixedNow), fixedNow), "editor")
	for _, e := range []string{"Set the price on the offers page to $12.", "Publish a draft page."} {
		if !slices.Contains(editor.Examples, e) {
			t.Errorf("the editor lacks the example %q", e)
		}
	}
	drafts := 0
	for _, p := range SeedPages() {
		if p.Slug == "offers" {
			t.Error("the seed has an offers page")
		}
		if p.Status == StatusDraft {
			drafts++
		}
	}
	if drafts < 2 {
		t.Errorf("%d drafts in the seed: a draft page is not ambiguous", drafts)
	}
}
