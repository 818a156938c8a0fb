package anthropic

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"countersign/engine"
	"countersign/engine/models/internal/providertest"
)

// preamble is the text callsReply puts before the tool_use blocks.
const preamble = `{"type": "text", "text": "I'll use the tools for that."}`

// assistantJSON is an assistant message of the preamble and tool_use blocks.
func assistantJSON(calls ...engine.ToolCall) string {
	blocks := []string{preamble}
	for _, c := range calls {
		blocks = append(blocks, fmt.Sprintf(`{"type": "tool_use", "id": %s, "name": %s, "input": %s}`, providertest.Quote(c.ID), providertest.Quote(c.Name), c.Arguments))
	}
	return `{"role": "assistant", "content": [` + strings.Join(blocks, ", ") + `]}`
}

// resultJSON is one tool_result block.
func resultJSON(id, text string, isError bool) string {
	s := fmt.Sprintf(`{"type": "tool_result", "tool_use_id": %s, "content": [{"type": "text", "text": %s}]`, providertest.Quote(id), providertest.Quote(text))
	if isError {
		s += `, "is_error": true`
	}
	return s + `}`
}

// resultsJSON is the user message that carries tool_result blocks.
func resultsJSON(blocks ...string) string {
	return `{"role": "user", "content": [` + strings.Join(blocks, ", ") + `]}`
}

// A read-only run: one turn with two tool_use blocks that need no approval,
// then the answer. The system messages go into the system parameter, and
// both results into one user message.
func TestReadOnlyRun(t *testing.T) {
	calls := []engine.ToolCall{
		providertest.Call("toolu_01A09q90qw90lq917835lq9", "count_words", `{"slug": "pricing"}`),
		providertest.Call("toolu_01B19q90qw90lq917835lq9", "count_words", `{"slug": "faq"}`),
	}
	srv := providertest.NewServer(t, callsReply(2095, 503, calls...), textReply("Both pages have 42 words.", 2700, 20))
	j := &providertest.Journal{}
	const prompt = "Count the words of pricing and faq."
	res, err := providertest.NewLoop(newModel(t, config(srv)), j, nil).Run(context.Background(), engine.Request{Prompt: prompt})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Answer != "Both pages have 42 words." || res.Termination != engine.TermCompleted {
		t.Errorf("answer %q, termination %q", res.Answer, res.Termination)
	}
	if want := (engine.Usage{PromptTokens: 4795, CompletionTokens: 523, TotalTokens: 5318}); res.Usage != want || res.Iterations != 2 {
		t.Errorf("usage %+v over %d iterations, want %+v over 2", res.Usage, res.Iterations, want)
	}
	if got, want := j.List(), []string{"count_words pricing", "count_words faq"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ran %v, want %v", got, want)
	}
	if got := res.Transcript[3].Content; got != "I'll use the tools for that." {
		t.Errorf("assistant text %q", got)
	}

	if srv.Path(0) != "POST /v1/messages" {
		t.Errorf("request went to %q", srv.Path(0))
	}
	if h := srv.Header(0); !strings.Contains(h.Get("Authorization")+h.Get("X-Api-Key"), providertest.Key) || h.Get("Anthropic-Version") == "" {
		t.Errorf("request headers lack the key or the API version: %v", h)
	}
	providertest.AssertJSON(t, "first request", srv.Body(0), requestJSON(promptJSON(prompt)))
	providertest.AssertJSON(t, "second request", srv.Body(1), requestJSON(promptJSON(prompt), assistantJSON(calls...),
		resultsJSON(
			resultJSON(calls[0].ID, `{"slug":"pricing","words":42}`, false),
			resultJSON(calls[1].ID, `{"slug":"faq","words":42}`, false))))
}

// Suspend -> approve -> continue, across a stored state and a new Model
// built from the same configuration, as after a restart.
func TestApproveAndContinue(t *testing.T) {
	pub := providertest.Call("toolu_01Pub", "publish_page", `{"slug": "about"}`)
	srv := providertest.NewServer(t, callsReply(600, 40, pub), textReply("The about page is published.", 700, 10))
	j := &providertest.Journal{}
	const prompt = "Publish the about page."
	state := providertest.Suspend(t, providertest.NewLoop(newModel(t, config(srv)), j, nil), prompt)
	if len(j.List()) != 0 || srv.Requests() != 1 {
		t.Fatalf("before the decision: ran %v after %d requests", j.List(), srv.Requests())
	}

	l := providertest.NewLoop(newModel(t, config(srv)), j, nil)
	res, err := l.Resume(context.Background(), state, engine.Decision{Verdict: engine.VerdictApprove, Digest: state.Digest(), By: "alice"})
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if res.Answer != "The about page is published." || res.Iterations != 2 {
		t.Errorf("answer %q after %d iterations", res.Answer, res.Iterations)
	}
	if want := (engine.Usage{PromptTokens: 1300, CompletionTokens: 50, TotalTokens: 1350}); res.Usage != want {
		t.Errorf("usage %+v, want %+v", res.Usage, want)
	}
	if got := j.List(); !reflect.DeepEqual(got, []string{"publish_page about"}) {
		t.Errorf("ran %v", got)
	}
	providertest.AssertJSON(t, "request after the resume", srv.Body(1), requestJSON(promptJSON(prompt), assistantJSON(pub),
		resultsJSON(resultJSON(pub.ID, "published about", false))))
}

// Suspend -> deny with a turn of three calls: none runs, and all three are
// answered in one user message, in order, as error results carrying the
// reason.
func TestDenySeveralCalls(t *testing.T) {
	calls := []engine.ToolCall{
		providertest.Call("toolu_A", "count_words", `{"slug": "about"}`),
		providertest.Call("toolu_B", "publish_page", `{"slug": "about"}`),
		providertest.Call("toolu_C", "publish_page", `{"slug": "faq"}`),
	}
	srv := providertest.NewServer(t, callsReply(600, 90, calls...), textReply("Nothing was published: the operator denied it.", 900, 12))
	j := &providertest.Journal{}
	l := providertest.NewLoop(newModel(t, config(srv)), j, nil)
	const prompt = "Publish about and faq."
	state := providertest.Suspend(t, l, prompt)
	res, err := l.Resume(context.Background(), state, engine.Decision{Verdict: engine.VerdictDeny, Digest: state.Digest(), By: "bob", Reason: "not before the launch"})
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if len(j.List()) != 0 {
		t.Errorf("denied calls ran: %v", j.List())
	}
	if res.Answer != "Nothing was published: the operator denied it." {
		t.Errorf("answer %q", res.Answer)
	}

	denials := providertest.Denials(t, res.Transcript, 3, "not before the launch")
	providertest.AssertJSON(t, "request after the denial", srv.Body(1), requestJSON(promptJSON(prompt), assistantJSON(calls...),
		resultsJSON(
			resultJSON("toolu_A", denials[0], true),
			resultJSON("toolu_B", denials[1], true),
			resultJSON("toolu_C", denials[2], true))))
}

// Suspend -> approve with a turn of three calls: each runs once, in order,
// and each tool_use is answered once, in order, in one user message.
func TestApproveSeveralCalls(t *testing.T) {
	calls := []engine.ToolCall{
		providertest.Call("toolu_1", "publish_page", `{"slug": "about"}`),
		providertest.Call("toolu_2", "count_words", `{"slug": "about"}`),
		providertest.Call("toolu_3", "publish_page", `{"slug": "faq"}`),
	}
	srv := providertest.NewServer(t, callsReply(600, 90, calls...), textReply("Published about (42 words) and faq.", 900, 12))
	j := &providertest.Journal{}
	l := providertest.NewLoop(newModel(t, config(srv)), j, nil)
	const prompt = "Publish about and faq."
	state := providertest.Suspend(t, l, prompt)
	if _, err := l.Resume(context.Background(), state, engine.Decision{Verdict: engine.VerdictApprove, Digest: state.Digest()}); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if got, want := j.List(), []string{"publish_page about", "count_words about", "publish_page faq"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ran %v, want %v", got, want)
	}
	providertest.AssertJSON(t, "request after the resume", srv.Body(1), requestJSON(promptJSON(prompt), assistantJSON(calls...),
		resultsJSON(
			resultJSON("toolu_1", "published about", false),
			resultJSON("toolu_2", `{"slug":"about","words":42}`, false),
			resultJSON("toolu_3", "published faq", false))))
}

// Arguments that are not a JSON object (here a server sent a string as the
// input) are kept as they are; the loop answers the call with an error
// result, and the next request sends the call with {} as its input and the
// error result with is_error.
func TestMalformedArguments(t *testing.T) {
	bad := providertest.Call("toolu_Bad", "count_words", `"pricing"`)
	srv := providertest.NewServer(t, callsReply(500, 30, bad), textReply("Sorry, I could not count the words.", 600, 9))
	j := &providertest.Journal{}
	const prompt = "Count pricing."
	res, err := providertest.NewLoop(newModel(t, config(srv)), j, nil).Run(context.Background(), engine.Request{Prompt: prompt})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Termination != engine.TermCompleted || len(j.List()) != 0 {
		t.Errorf("termination %q, ran %v", res.Termination, j.List())
	}
	if got := res.Transcript[3].ToolCalls[0].Arguments; got != `"pricing"` {
		t.Errorf("arguments %q, want them as the model produced them", got)
	}
	results := providertest.ToolContents(res.Transcript)
	if len(results) != 1 || !strings.HasPrefix(results[0], "error: arguments are not a valid JSON object") {
		t.Fatalf("tool results %q", results)
	}
	providertest.AssertJSON(t, "request after the bad call", srv.Body(1), requestJSON(promptJSON(prompt),
		assistantJSON(providertest.Call(bad.ID, bad.Name, `{}`)),
		resultsJSON(resultJSON(bad.ID, results[0], true))))
}

func TestToolInput(t *testing.T) {
	tests := map[string]string{
		`{"slug":"a"}`:   `{"slug":"a"}`,
		` {"slug":"a"} `: `{"slug":"a"}`,
		``:               `{}`,
		`{"slug": "a"`:   `{}`,
		`null`:           `{}`,
		`[1, 2]`:         `{}`,
		`"a"`:            `{}`,
	}
	for in, want := range tests {
		if got := string(toolInput(in)); got != want {
			t.Errorf("toolInput(%q) = %s, want %s", in, got, want)
		}
	}
}

// An empty result has no content block; the transcript's text and calls go
// into one assistant message; a schema keeps its other keywords.
func TestRequestShapes(t *testing.T) {
	srv := providertest.NewServer(t, textReply("ok", 1, 1))
	cfg := config(srv)
	cfg.MaxTokens = 300
	req := engine.ModelRequest{
		Messages: []engine.Message{
			{Role: engine.RoleUser, Content: "Do it."},
			{Role: engine.RoleAssistant, Content: "Sure.", ToolCalls: []engine.ToolCall{providertest.Call("toolu_E", "noop", "")}},
			{Role: engine.RoleTool, ToolCallID: "toolu_E", ToolName: "noop", Content: ""},
		},
		Tools: []engine.ToolSpec{{Name: "noop", Parameters: []byte(`{"type":"object","properties":{},"additionalProperties":false}`)}},
	}
	if _, err := newModel(t, cfg).Generate(context.Background(), req); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	providertest.AssertJSON(t, "request", srv.Body(0), `{
	  "model": "claude-sonnet-4-5",
	  "max_tokens": 300,
	  "messages": [
	    {"role": "user", "content": [{"type": "text", "text": "Do it."}]},
	    {"role": "assistant", "content": [{"type": "text", "text": "Sure."}, {"type": "tool_use", "id": "toolu_E", "name": "noop", "input": {}}]},
	    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_E"}]}
	  ],
	  "tools": [{"name": "noop", "input_schema": {"type": "object", "properties": {}, "additionalProperties": false}}]
	}`)
}

// A reply cut off at the output limit (stop_reason "max_tokens") is marked
// truncated, whether it is text or a tool_use block, and so is one cut off
// by the context window; the others are not.
func TestTruncated(t *testing.T) {
	cutCall := `{"type": "tool_use", "id": "toolu_Cut", "name": "count_words", "input": {}}`
	for _, tc := range []struct {
		name  string
		reply providertest.Reply
		want  bool
	}{
		{"end_turn", textReply("Done.", 10, 2), false},
		{"tool_use", callsReply(10, 2, providertest.Call("toolu_A", "count_words", `{"slug": "faq"}`)), false},
		{"max_tokens, text", providertest.Reply{Body: message(`{"type": "text", "text": "The pricing page has"}`, "max_tokens", 10, 16)}, true},
		{"max_tokens, tool_use", providertest.Reply{Body: message(cutCall, "max_tokens", 10, 16)}, true},
		{"model_context_window_exceeded", providertest.Reply{Body: message(`{"type": "text", "text": "The pricing"}`, "model_context_window_exceeded", 10, 16)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.NewServer(t, tc.reply)
			resp, err := newModel(t, config(srv)).Generate(context.Background(), providertest.Hello())
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if resp.Truncated != tc.want {
				t.Errorf("Truncated = %v, want %v", resp.Truncated, tc.want)
			}
		})
	}
}

// A run whose reply is cut off fails with output_limit instead of taking
// the fragment as its answer.
func TestTruncatedRunFails(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Body: message(`{"type": "text", "text": "The pricing page has"}`, "max_tokens", 50, 1024)})
	j := &providertest.Journal{}
	res, err := providertest.NewLoop(newModel(t, config(srv)), j, nil).Run(context.Background(), engine.Request{Prompt: "Count pricing."})
	var runErr *engine.RunError
	if !errors.As(err, &runErr) || runErr.Termination != engine.TermOutputLimit {
		t.Fatalf("Run: err %v, want a RunError with %s", err, engine.TermOutputLimit)
	}
	if res == nil || res.Answer != "" || res.Termination != engine.TermOutputLimit {
		t.Errorf("result %+v", res)
	}
}

// Cached prompt tokens count as prompt tokens.
func TestUsageWithCache(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Body: `{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
	  "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": null,
	  "usage": {"input_tokens": 10, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000, "output_tokens": 5}}`})
	resp, err := newModel(t, config(srv)).Generate(context.Background(), providertest.Hello())
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if want := (engine.Usage{PromptTokens: 1110, CompletionTokens: 5, TotalTokens: 1115}); resp.Usage != want {
		t.Errorf("usage %+v, want %+v", resp.Usage, want)
	}
}

// The key in the environment is never used in place of the configured one.
func TestIgnoresEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	srv := providertest.NewServer(t, textReply("ok", 1, 1))
	cfg := config(srv)
	cfg.APIKey = ""
	if _, err := newModel(t, cfg).Generate(context.Background(), providertest.Hello()); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	for k, v := range srv.Header(0) {
		if strings.Contains(strings.Join(v, " "), "from-the-environment") {
			t.Errorf("header %s carries the key from the environment", k)
		}
	}
}

func TestDescribe(t *testing.T) {
	m := newModel(t, Config{APIKey: providertest.Key, Model: "claude-sonnet-4-5"})
	if got, want := m.Describe(), "Anthropic model claude-sonnet-4-5 at https://api.anthropic.com"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{APIKey: providertest.Key},
		{Model: "claude-sonnet-4-5"},
		{APIKey: providertest.Key, Model: "claude-sonnet-4-5", BaseURL: "api.anthropic.com"},
		{APIKey: providertest.Key, Model: "claude-sonnet-4-5", MaxTokens: -1},
	} {
		m, err := New(cfg)
		if err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		} else if strings.Contains(err.Error(), providertest.Key) {
			t.Errorf("error contains the key: %v", err)
		}
		_ = m
	}
}

// Suspend -> a verdict per call on a turn of four tool_use blocks: one
// approved, one denied, one edited, one answered. All four are answered in
// one user message, one tool_result per tool_use, in the model's order;
// only the denial has is_error (the field is left out, not false,
// elsewhere). The edited call ran with the operator's arguments and its
// result says so; the answered one did not run; the assistant message
// keeps the input the model proposed.
func TestMixedVerdictsInOneTurn(t *testing.T) {
	calls := []engine.ToolCall{
		providertest.Call("toolu_Ok", "publish_page", `{"slug": "about"}`),
		providertest.Call("toolu_No", "publish_page", `{"slug": "faq"}`),
		providertest.Call("toolu_Ed", "publish_page", `{"slug": "pricing"}`),
		providertest.Call("toolu_An", "count_words", `{"slug": "welcome"}`),
	}
	srv := providertest.NewServer(t, callsReply(600, 120, calls...),
		textReply("Published about and welcome; faq was denied; the operator answered for welcome's count.", 900, 20))
	j := &providertest.Journal{}
	l := providertest.NewLoop(newModel(t, config(srv)), j, nil)
	const prompt = "Publish about, faq and pricing, and count welcome."
	state := providertest.Suspend(t, l, prompt)
	res, err := l.Resume(context.Background(), state, engine.Decision{Digest: state.Digest(), By: "carol", Calls: []engine.CallVerdict{
		{CallID: "toolu_An", Verdict: engine.VerdictAnswer, Text: "It has 120 words; no need to count."},
		{CallID: "toolu_Ed", Verdict: engine.VerdictEdit, Arguments: `{"slug": "welcome"}`},
		{CallID: "toolu_No", Verdict: engine.VerdictDeny, Text: "faq stays a draft"},
		{CallID: "toolu_Ok", Verdict: engine.VerdictApprove},
	}})
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if got, want := j.List(), []string{"publish_page about", "publish_page welcome"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ran %v, want %v", got, want)
	}

	results := providertest.ToolContents(res.Transcript)
	if len(results) != 4 {
		t.Fatalf("%d tool results, want 4", len(results))
	}
	no, ed, an := results[1], results[2], results[3]
	if !strings.HasPrefix(no, engine.DeniedPrefix) || !strings.Contains(no, "faq stays a draft") {
		t.Errorf("denied result %q", no)
	}
	if !strings.HasPrefix(ed, engine.EditedPrefix) || !strings.Contains(ed, `{"slug":"welcome"}`) ||
		!strings.Contains(ed, `{"slug": "pricing"}`) || !strings.HasSuffix(ed, "\npublished welcome") {
		t.Errorf("edited result %q", ed)
	}
	if !strings.HasPrefix(an, engine.AnsweredPrefix) || !strings.Contains(an, "carol") ||
		!strings.HasSuffix(an, "\nIt has 120 words; no need to count.") {
		t.Errorf("answered result %q", an)
	}
	providertest.AssertJSON(t, "request after the decision", srv.Body(1), requestJSON(promptJSON(prompt), assistantJSON(calls...),
		resultsJSON(
			resultJSON("toolu_Ok", "published about", false),
			resultJSON("toolu_No", no, true),
			resultJSON("toolu_Ed", ed, false),
			resultJSON("toolu_An", an, false))))
}
