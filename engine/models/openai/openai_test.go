package openai

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"countersign/engine"
	"countersign/engine/models/internal/providertest"
)

// A read-only run: one turn with two calls that need no approval, then the
// answer. The requests carry the whole transcript in Chat Completions form.
func TestReadOnlyRun(t *testing.T) {
	srv := providertest.NewServer(t,
		callsReply(82, 17,
			providertest.Call("call_Xa1", "count_words", `{"slug":"pricing"}`),
			providertest.Call("call_Xa2", "count_words", `{"slug":"faq"}`)),
		textReply("Both pages have 42 words.", 140, 9),
	)
	j := &providertest.Journal{}
	res, err := providertest.NewLoop(newModel(t, config(srv)), j, nil).Run(context.Background(), engine.Request{Prompt: "Count the words of pricing and faq."})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Answer != "Both pages have 42 words." || res.Termination != engine.TermCompleted {
		t.Errorf("answer %q, termination %q", res.Answer, res.Termination)
	}
	if want := (engine.Usage{PromptTokens: 222, CompletionTokens: 26, TotalTokens: 248}); res.Usage != want || res.Iterations != 2 {
		t.Errorf("usage %+v over %d iterations, want %+v over 2", res.Usage, res.Iterations, want)
	}
	if got, want := j.List(), []string{"count_words pricing", "count_words faq"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ran %v, want %v", got, want)
	}

	if srv.Path(0) != "POST /v1/chat/completions" {
		t.Errorf("request went to %q", srv.Path(0))
	}
	if got := srv.Header(0).Get("Authorization"); got != "Bearer "+providertest.Key {
		t.Errorf("Authorization header %q", got)
	}
	opening := openingJSON("Count the words of pricing and faq.")
	providertest.AssertJSON(t, "first request", srv.Body(0), `{
	  "model": "gpt-4o-mini",
	  "messages": [`+opening+`],
	  "tools": `+toolsJSON+`
	}`)
	providertest.AssertJSON(t, "second request", srv.Body(1), `{
	  "model": "gpt-4o-mini",
	  "messages": [`+opening+`,
	    {"role": "assistant", "tool_calls": [
	      {"id": "call_Xa1", "type": "function", "function": {"name": "count_words", "arguments": "{\"slug\":\"pricing\"}"}},
	      {"id": "call_Xa2", "type": "function", "function": {"name": "count_words", "arguments": "{\"slug\":\"faq\"}"}}
	    ]},
	    {"role": "tool", "tool_call_id": "call_Xa1", "content": "{\"slug\":\"pricing\",\"words\":42}"},
	    {"role": "tool", "tool_call_id": "call_Xa2", "content": "{\"slug\":\"faq\",\"words\":42}"}
	  ],
	  "tools": `+toolsJSON+`
	}`)
}

// Suspend -> approve -> continue, across a stored state and a new Model
// built from the same configuration, as after a restart.
func TestApproveAndContinue(t *testing.T) {
	srv := providertest.NewServer(t,
		callsReply(60, 12, providertest.Call("call_Pub", "publish_page", `{"slug": "about"}`)),
		textReply("The about page is published.", 90, 8),
	)
	j := &providertest.Journal{}
	state := providertest.Suspend(t, providertest.NewLoop(newModel(t, config(srv)), j, nil), "Publish the about page.")
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
	if want := (engine.Usage{PromptTokens: 150, CompletionTokens: 20, TotalTokens: 170}); res.Usage != want {
		t.Errorf("usage %+v, want %+v", res.Usage, want)
	}
	if got := j.List(); !reflect.DeepEqual(got, []string{"publish_page about"}) {
		t.Errorf("ran %v", got)
	}
	providertest.AssertJSON(t, "request after the resume", srv.Body(1), `{
	  "model": "gpt-4o-mini",
	  "messages": [`+openingJSON("Publish the about page.")+`,
	    {"role": "assistant", "tool_calls": [
	      {"id": "call_Pub", "type": "function", "function": {"name": "publish_page", "arguments": "{\"slug\": \"about\"}"}}
	    ]},
	    {"role": "tool", "tool_call_id": "call_Pub", "content": "published about"}
	  ],
	  "tools": `+toolsJSON+`
	}`)
}

// Suspend -> deny with a turn of three calls: none runs, and each is
// answered, in order, with a denial carrying the reason.
func TestDenySeveralCalls(t *testing.T) {
	srv := providertest.NewServer(t,
		callsReply(60, 30,
			providertest.Call("call_A", "count_words", `{"slug":"about"}`),
			providertest.Call("call_B", "publish_page", `{"slug":"about"}`),
			providertest.Call("call_C", "publish_page", `{"slug":"faq"}`)),
		textReply("Nothing was published: the operator denied it.", 120, 11),
	)
	j := &providertest.Journal{}
	l := providertest.NewLoop(newModel(t, config(srv)), j, nil)
	state := providertest.Suspend(t, l, "Publish about and faq.")
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
	providertest.AssertJSON(t, "request after the denial", srv.Body(1), `{
	  "model": "gpt-4o-mini",
	  "messages": [`+openingJSON("Publish about and faq.")+`,
	    {"role": "assistant", "tool_calls": [
	      {"id": "call_A", "type": "function", "function": {"name": "count_words", "arguments": "{\"slug\":\"about\"}"}},
	      {"id": "call_B", "type": "function", "function": {"name": "publish_page", "arguments": "{\"slug\":\"about\"}"}},
	      {"id": "call_C", "type": "function", "function": {"name": "publish_page", "arguments": "{\"slug\":\"faq\"}"}}
	    ]},
	    {"role": "tool", "tool_call_id": "call_A", "content": `+providertest.Quote(denials[0])+`},
	    {"role": "tool", "tool_call_id": "call_B", "content": `+providertest.Quote(denials[1])+`},
	    {"role": "tool", "tool_call_id": "call_C", "content": `+providertest.Quote(denials[2])+`}
	  ],
	  "tools": `+toolsJSON+`
	}`)
}

// Suspend -> approve with a turn of three calls: each runs once, in order,
// and each call ID is answered once, in order.
func TestApproveSeveralCalls(t *testing.T) {
	srv := providertest.NewServer(t,
		callsReply(60, 30,
			providertest.Call("call_1", "publish_page", `{"slug":"about"}`),
			providertest.Call("call_2", "count_words", `{"slug":"about"}`),
			providertest.Call("call_3", "publish_page", `{"slug":"faq"}`)),
		textReply("Published about (42 words) and faq.", 120, 11),
	)
	j := &providertest.Journal{}
	l := providertest.NewLoop(newModel(t, config(srv)), j, nil)
	state := providertest.Suspend(t, l, "Publish about and faq.")
	if _, err := l.Resume(context.Background(), state, engine.Decision{Verdict: engine.VerdictApprove, Digest: state.Digest()}); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if got, want := j.List(), []string{"publish_page about", "count_words about", "publish_page faq"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ran %v, want %v", got, want)
	}
	providertest.AssertJSON(t, "messages after the resume", srv.Field(1, "messages"), `[`+openingJSON("Publish about and faq.")+`,
	    {"role": "assistant", "tool_calls": [
	      {"id": "call_1", "type": "function", "function": {"name": "publish_page", "arguments": "{\"slug\":\"about\"}"}},
	      {"id": "call_2", "type": "function", "function": {"name": "count_words", "arguments": "{\"slug\":\"about\"}"}},
	      {"id": "call_3", "type": "function", "function": {"name": "publish_page", "arguments": "{\"slug\":\"faq\"}"}}
	    ]},
	    {"role": "tool", "tool_call_id": "call_1", "content": "published about"},
	    {"role": "tool", "tool_call_id": "call_2", "content": "{\"slug\":\"about\",\"words\":42}"},
	    {"role": "tool", "tool_call_id": "call_3", "content": "published faq"}
	]`)
}

// Malformed arguments from the model are kept as they are; the loop answers
// the call with an error result and the run goes on.
func TestMalformedArguments(t *testing.T) {
	const bad = `{"slug": "pricing"`
	srv := providertest.NewServer(t,
		callsReply(50, 10, providertest.Call("call_Bad", "count_words", bad)),
		textReply("Sorry, I could not count the words.", 80, 9),
	)
	j := &providertest.Journal{}
	res, err := providertest.NewLoop(newModel(t, config(srv)), j, nil).Run(context.Background(), engine.Request{Prompt: "Count pricing."})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Termination != engine.TermCompleted || len(j.List()) != 0 {
		t.Errorf("termination %q, ran %v", res.Termination, j.List())
	}
	results := providertest.ToolContents(res.Transcript)
	if len(results) != 1 || !strings.HasPrefix(results[0], "error: arguments are not a valid JSON object") {
		t.Fatalf("tool results %q", results)
	}
	providertest.AssertJSON(t, "messages after the bad call", srv.Field(1, "messages"), `[`+openingJSON("Count pricing.")+`,
	    {"role": "assistant", "tool_calls": [
	      {"id": "call_Bad", "type": "function", "function": {"name": "count_words", "arguments": `+providertest.Quote(bad)+`}}
	    ]},
	    {"role": "tool", "tool_call_id": "call_Bad", "content": `+providertest.Quote(results[0])+`}
	]`)
}

// An empty key is allowed for a local server, and neither the key nor the
// base URL in the environment is used in place of the configured ones.
func TestEmptyKeyForLocalServer(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	srv := providertest.NewServer(t, textReply("Hello from qwen3.", 12, 4))
	cfg := config(srv)
	cfg.APIKey, cfg.Model = "", "qwen3"
	m := newModel(t, cfg)
	resp, err := m.Generate(context.Background(), engine.ModelRequest{Messages: []engine.Message{{Role: engine.RoleUser, Content: "Hi"}}})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if resp.Message.Content != "Hello from qwen3." || resp.Usage.TotalTokens != 16 {
		t.Errorf("response %+v", resp)
	}
	if got := srv.Header(0).Get("Authorization"); got != "" {
		t.Errorf("Authorization header %q, want none", got)
	}
	providertest.AssertJSON(t, "request without tools", srv.Body(0), `{"model": "qwen3", "messages": [{"role": "user", "content": "Hi"}]}`)
}

// A server that leaves the total out, as some compatible servers do, still
// yields a total.
func TestUsageWithoutTotal(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Body: `{"id": "c1", "object": "chat.completion", "created": 1, "model": "llama3",
	  "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
	  "usage": {"prompt_tokens": 7, "completion_tokens": 3}}`})
	resp, err := newModel(t, config(srv)).Generate(context.Background(), engine.ModelRequest{Messages: []engine.Message{{Role: engine.RoleUser, Content: "Hi"}}})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if want := (engine.Usage{PromptTokens: 7, CompletionTokens: 3, TotalTokens: 10}); resp.Usage != want {
		t.Errorf("usage %+v, want %+v", resp.Usage, want)
	}
}

// Chat templates such as Qwen's refuse a second system message ([system,
// system, user] gets a 400 from vLLM), so the system messages go as one, first,
// joined a blank line apart in order; a blank one adds nothing.
func TestOneSystemMessage(t *testing.T) {
	srv := providertest.NewServer(t, textReply("ok", 1, 1))
	req := engine.ModelRequest{Messages: []engine.Message{
		{Role: engine.RoleSystem, Content: "You are a test agent."},
		{Role: engine.RoleSystem, Content: "  "},
		{Role: engine.RoleSystem, Content: "Answer briefly."},
		{Role: engine.RoleUser, Content: "Hi"},
	}}
	if _, err := newModel(t, config(srv)).Generate(context.Background(), req); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	providertest.AssertJSON(t, "request", srv.Body(0), `{
	  "model": "gpt-4o-mini",
	  "messages": [
	    {"role": "system", "content": "You are a test agent.\n\nAnswer briefly."},
	    {"role": "user", "content": "Hi"}
	  ]
	}`)
}

// A reply cut off at the output limit (finish_reason "length") is marked
// truncated, whether it is text or tool calls; the others are not.
func TestTruncated(t *testing.T) {
	cutText := `{"role": "assistant", "content": "The pricing page has", "refusal": null, "annotations": []}`
	cutCall := `{"role": "assistant", "content": null, "refusal": null, "annotations": [],
	  "tool_calls": [{"id": "call_Cut", "type": "function", "function": {"name": "count_words", "arguments": "{\"slug\": \"pri"}}]}`
	for _, tc := range []struct {
		name  string
		reply providertest.Reply
		want  bool
	}{
		{"stop", textReply("Done.", 10, 2), false},
		{"tool_calls", callsReply(10, 2, providertest.Call("call_A", "count_words", `{"slug":"faq"}`)), false},
		{"length, text", providertest.Reply{Body: completion(cutText, "length", 10, 16)}, true},
		{"length, tool call", providertest.Reply{Body: completion(cutCall, "length", 10, 16)}, true},
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
	cut := `{"role": "assistant", "content": "The pricing page has", "refusal": null, "annotations": []}`
	srv := providertest.NewServer(t, providertest.Reply{Body: completion(cut, "length", 50, 16)})
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

// max_tokens and temperature go in the request when configured, a zero
// temperature included, and not at all otherwise (see
// TestEmptyKeyForLocalServer). OpenAI's own API gets max_completion_tokens,
// which its reasoning models require in place of max_tokens; other servers
// get max_tokens, which Ollama, vLLM, llama.cpp and LM Studio all take.
func TestMaxTokensAndTemperature(t *testing.T) {
	hello := `"messages": [{"role": "user", "content": "Hi"}]`
	for _, tc := range []struct {
		name        string
		openAI      bool
		maxTokens   int
		temperature *float64
		want        string
	}{
		{"compatible server", false, 4096, ptr(0.2), `{"model": "gpt-4o-mini", ` + hello + `, "max_tokens": 4096, "temperature": 0.2}`},
		{"zero temperature", false, 0, ptr(0.0), `{"model": "gpt-4o-mini", ` + hello + `, "temperature": 0}`},
		{"OpenAI's API", true, 2048, ptr(1.5), `{"model": "gpt-4o-mini", ` + hello + `, "max_completion_tokens": 2048, "temperature": 1.5}`},
		{"OpenAI's API, defaults", true, 0, nil, `{"model": "gpt-4o-mini", ` + hello + `}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.NewServer(t, textReply("ok", 1, 1))
			cfg := config(srv)
			cfg.MaxTokens, cfg.Temperature = tc.maxTokens, tc.temperature
			if tc.openAI {
				cfg.BaseURL, cfg.HTTPClient = DefaultBaseURL, redirect(srv)
			}
			if _, err := newModel(t, cfg).Generate(context.Background(), providertest.Hello()); err != nil {
				t.Fatalf("Generate: %v", err)
			}
			providertest.AssertJSON(t, "request", srv.Body(0), tc.want)
		})
	}
}

func TestDescribe(t *testing.T) {
	m := newModel(t, Config{Model: "gpt-4o-mini"})
	if got, want := m.Describe(), "OpenAI-compatible chat model gpt-4o-mini at https://api.openai.com/v1"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
	m = newModel(t, Config{Model: "qwen3", BaseURL: "http://user:secret@localhost:11434/v1/?token=abc"})
	if got, want := m.Describe(), "OpenAI-compatible chat model qwen3 at http://localhost:11434/v1"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Model: "  "},
		{Model: "gpt-4o-mini", BaseURL: "localhost:11434/v1"},
		{Model: "gpt-4o-mini", BaseURL: "ftp://example.com"},
		{Model: "gpt-4o-mini", MaxTokens: -1},
		{Model: "gpt-4o-mini", Temperature: ptr(-0.1)},
		{Model: "gpt-4o-mini", Temperature: ptr(2.1)},
		{Model: "gpt-4o-mini", Temperature: ptr(math.NaN())},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}

// Example configurations of the playground's three kinds of model.
func ExampleNew() {
	for _, cfg := range []Config{
		{APIKey: "sk-…", Model: "gpt-4o-mini"},
		{BaseURL: "http://localhost:11434/v1", Model: "qwen3"},
		{BaseURL: "http://localhost:8000/v1", Model: "meta-llama/Llama-3.1-8B-Instruct"},
	} {
		m, err := New(cfg)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(m.Describe())
	}
	// Output:
	// OpenAI-compatible chat model gpt-4o-mini at https://api.openai.com/v1
	// OpenAI-compatible chat model qwen3 at http://localhost:11434/v1
	// OpenAI-compatible chat model meta-llama/Llama-3.1-8B-Instruct at http://localhost:8000/v1
}

// Suspend -> a verdict per call on a turn of four: one approved, one
// denied, one edited, one answered. Each call ID is answered once, in the
// model's order; the edited call ran with the operator's arguments and its
// result says so; the answered one did not run; the assistant message keeps
// the arguments the model proposed. The Chat Completions API has no error
// flag, so the denial is told by its text alone.
func TestMixedVerdictsInOneTurn(t *testing.T) {
	calls := []engine.ToolCall{
		providertest.Call("call_Ok", "publish_page", `{"slug":"about"}`),
		providertest.Call("call_No", "publish_page", `{"slug":"faq"}`),
		providertest.Call("call_Ed", "publish_page", `{"slug": "pricing"}`),
		providertest.Call("call_An", "count_words", `{"slug":"welcome"}`),
	}
	srv := providertest.NewServer(t,
		callsReply(60, 40, calls...),
		textReply("Published about and welcome; faq was denied; the operator answered for welcome's count.", 150, 20),
	)
	j := &providertest.Journal{}
	l := providertest.NewLoop(newModel(t, config(srv)), j, nil)
	const prompt = "Publish about, faq and pricing, and count welcome."
	state := providertest.Suspend(t, l, prompt)
	res, err := l.Resume(context.Background(), state, engine.Decision{Digest: state.Digest(), By: "carol", Calls: []engine.CallVerdict{
		{CallID: "call_An", Verdict: engine.VerdictAnswer, Text: "It has 120 words; no need to count."},
		{CallID: "call_Ed", Verdict: engine.VerdictEdit, Arguments: `{"slug": "welcome"}`},
		{CallID: "call_No", Verdict: engine.VerdictDeny, Text: "faq stays a draft"},
		{CallID: "call_Ok", Verdict: engine.VerdictApprove},
	}})
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if got, want := j.List(), []string{"publish_page about", "publish_page welcome"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ran %v, want %v", got, want)
	}

	var results []engine.Message
	for _, m := range res.Transcript {
		if m.Role == engine.RoleTool {
			results = append(results, m)
		}
	}
	if len(results) != 4 {
		t.Fatalf("%d tool results, want 4", len(results))
	}
	ok, no, ed, an := results[0], results[1], results[2], results[3]
	if ok.Content != "published about" || ok.IsError {
		t.Errorf("approved result %+v", ok)
	}
	if !strings.HasPrefix(no.Content, engine.DeniedPrefix) || !strings.Contains(no.Content, "faq stays a draft") || !no.IsError {
		t.Errorf("denied result %+v", no)
	}
	if !strings.HasPrefix(ed.Content, engine.EditedPrefix) || !strings.Contains(ed.Content, `{"slug":"welcome"}`) ||
		!strings.Contains(ed.Content, `{"slug": "pricing"}`) || !strings.HasSuffix(ed.Content, "\npublished welcome") || ed.IsError {
		t.Errorf("edited result %+v", ed)
	}
	if !strings.HasPrefix(an.Content, engine.AnsweredPrefix) || !strings.Contains(an.Content, "carol") ||
		!strings.HasSuffix(an.Content, "\nIt has 120 words; no need to count.") || an.IsError {
		t.Errorf("answered result %+v", an)
	}
	providertest.AssertJSON(t, "request after the decision", srv.Body(1), `{
	  "model": "gpt-4o-mini",
	  "messages": [`+openingJSON(prompt)+`,
	    {"role": "assistant", "tool_calls": [
	      {"id": "call_Ok", "type": "function", "function": {"name": "publish_page", "arguments": "{\"slug\":\"about\"}"}},
	      {"id": "call_No", "type": "function", "function": {"name": "publish_page", "arguments": "{\"slug\":\"faq\"}"}},
	      {"id": "call_Ed", "type": "function", "function": {"name": "publish_page", "arguments": "{\"slug\": \"pricing\"}"}},
	      {"id": "call_An", "type": "function", "function": {"name": "count_words", "arguments": "{\"slug\":\"welcome\"}"}}
	    ]},
	    {"role": "tool", "tool_call_id": "call_Ok", "content": "published about"},
	    {"role": "tool", "tool_call_id": "call_No", "content": `+providertest.Quote(no.Content)+`},
	    {"role": "tool", "tool_call_id": "call_Ed", "content": `+providertest.Quote(ed.Content)+`},
	    {"role": "tool", "tool_call_id": "call_An", "content": `+providertest.Quote(an.Content)+`}
	  ],
	  "tools": `+toolsJSON+`
	}`)
}
