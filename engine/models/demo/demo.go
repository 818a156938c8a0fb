// Package demo is the default model of countersign: a deterministic,
// offline, scripted stand-in for a language model that needs no API key.
//
// It recognises a handful of prompts about the demo workspace (see Examples)
// and plans the tool calls for them, one turn at a time. It keeps no state:
// every call to Generate reads the transcript, finds the last user prompt and
// what happened since, and decides the next assistant message from that
// alone. After a denial, a refusal, an answer in place of a tool or a tool
// error it answers in plain words and never calls another tool, unless the
// prompt tells it to try again when refused: then it repeats the denied
// calls, which shows the engine's loop breaker at work. It reads
// the operator's edits (it reports what ran, not what it proposed) and asks
// the operator (ask_operator, when offered) which page is meant when a
// prompt names none or one that does not exist, and goes on with the
// answer. When the agent offers the tools of the MCP filesystem server, it
// also lists, reads, writes, edits and moves the sandbox's files (see
// FileExamples).
package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"countersign/engine"
)

// Name is the name the demo model is chosen by.
const Name = "demo"

// Description says what the demo model is, for the playground's model picker.
const Description = "A scripted demo model, not a language model: it runs offline without an API key, " +
	"recognises a handful of prompts about the demo workspace and plans the tool calls for them."

// Model is the scripted demo model. The zero value is ready to use.
type Model struct {
	// plans keeps the scripts of the prompts planned lately. A run asks
	// for its next turn several times with the same prompt, and reading a
	// prompt against the patterns is most of a turn's work. A script is
	// never changed once made, so one serves every run with its prompt.
	mu    sync.Mutex
	plans map[planKey]planned
}

// maxPlans bounds the scripts a Model keeps; past it, it starts over.
const maxPlans = 256

// planKey is what a script depends on: the prompt, and whether the agent
// offers the filesystem tools (see planFor).
type planKey struct {
	prompt string
	files  bool
}

// planned is a prompt's script and whether the prompt asks to try again
// when refused.
type planned struct {
	script script
	retry  bool
}

// plan returns the script for prompt with the tools offered, kept or made.
func (m *Model) plan(prompt string, offered map[string]bool) planned {
	k := planKey{prompt: prompt, files: offersFiles(offered)}
	m.mu.Lock()
	p, ok := m.plans[k]
	m.mu.Unlock()
	if ok {
		return p
	}
	p = planned{script: planFor(prompt, offered), retry: wantsRetry(prompt)}
	m.mu.Lock()
	if m.plans == nil || len(m.plans) >= maxPlans {
		m.plans = make(map[planKey]planned)
	}
	m.plans[k] = p
	m.mu.Unlock()
	return p
}

var _ engine.Model = (*Model)(nil)

// New returns the demo model.
func New() *Model { return &Model{} }

// Examples returns the prompts about the demo workspace the demo model
// understands, as the playground offers them; FileExamples holds those
// about files.
func Examples() []string {
	return []string{
		"How many words are on the pricing page?",
		"Search the pages for refund.",
		"What time is it?",
		"List all pages.",
		"Publish the about page.",
		"Check the word count of the release notes and publish them.",
		"Create a page announcing the winter sale, then publish it.",
		"Publish all draft pages.",
		"Update the pricing page to say the Team plan now costs $12 per seat.",
		"Delete the old announcement page.",
		"Set the price on the offers page to $12.",
		"Publish a draft page.",
		"Create a page announcing the Team plan at $12 per seat.",
		"Delete the old announcement page. If you are refused, try again.",
	}
}

// errNoPrompt refuses a transcript without a user message: there is nothing
// to plan from.
var errNoPrompt = errors.New("demo: transcript has no user message")

// Generate returns the next assistant message for req: the tool calls of the
// next step of the script that matches the last user prompt, or the final
// answer once the script is done or something was denied, refused or failed.
// The same request always yields the same response.
func (m *Model) Generate(ctx context.Context, req engine.ModelRequest) (engine.ModelResponse, error) {
	if err := ctx.Err(); err != nil {
		return engine.ModelResponse{}, err
	}
	conv, ok := readTranscript(req.Messages)
	if !ok {
		return engine.ModelResponse{}, errNoPrompt
	}
	offered := offeredTools(req.Tools)
	p := m.plan(conv.prompt, offered)
	r := decide(conv, p.script, p.retry, offered)

	msg := engine.Message{Role: engine.RoleAssistant, Content: r.text}
	for i, c := range r.calls {
		args, err := compactJSON(c.args)
		if err != nil {
			return engine.ModelResponse{}, fmt.Errorf("demo: encode arguments of %s: %w", c.name, err)
		}
		msg.ToolCalls = append(msg.ToolCalls, engine.ToolCall{
			ID:        fmt.Sprintf("call_%d_%d", conv.iteration, i+1),
			Name:      c.name,
			Arguments: args,
		})
	}
	return engine.ModelResponse{Message: msg, Usage: usage(req, msg)}, nil
}

// decide picks the next reply. Problems come first: once a call of the run
// was denied, refused, answered in place of running, or failed, the model
// only reports and stops, unless the prompt told it to try again when
// refused (retry): then it repeats a denied turn, identical (see
// retryDenied). A script whose page is not known yet is first made from
// what the conversation found out about it. A final answer says what the
// operator's edits changed, unless the script already did.
func decide(conv conversation, s script, retry bool, offered map[string]bool) reply {
	turns, retried := conv.turns, false
	if retry {
		if r, ok := retryDenied(turns); ok {
			return r
		}
		turns, retried = withoutRetried(turns)
	}
	if s.find != nil {
		s = s.find.script(turns, offered)
	}
	for i, t := range turns {
		if t.troubled() {
			return reply{text: troubleAnswer(turns[:i+1], s.stepsAfter(i), retried)}
		}
	}
	if missing := s.missing(offered); len(missing) > 0 {
		return reply{text: cannotAnswer(s.goal, missing, offered)}
	}
	r := s.next(turns)
	if len(r.calls) == 0 && !r.editsTold {
		if told := editsTold(turns); told != "" {
			r.text += " " + told
		}
	}
	return r
}

// offeredTools returns the names of the tools on offer.
func offeredTools(specs []engine.ToolSpec) map[string]bool {
	names := make(map[string]bool, len(specs))
	for _, s := range specs {
		names[s.Name] = true
	}
	return names
}

// compactJSON encodes v as compact JSON without escaping <, > and &, so the
// arguments read as written.
func compactJSON(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// usage estimates tokens as a quarter of the characters: the prompt counts
// every message and tool spec of the request, the completion counts the
// generated text and calls. It is plausible and, above all, deterministic.
func usage(req engine.ModelRequest, out engine.Message) engine.Usage {
	in := 0
	for _, m := range req.Messages {
		in += messageChars(m)
	}
	for _, t := range req.Tools {
		in += utf8.RuneCountInString(t.Name) + utf8.RuneCountInString(t.Description) + utf8.RuneCount(t.Parameters)
	}
	u := engine.Usage{PromptTokens: tokens(in), CompletionTokens: tokens(messageChars(out))}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

func messageChars(m engine.Message) int {
	n := utf8.RuneCountInString(m.Content)
	for _, c := range m.ToolCalls {
		n += utf8.RuneCountInString(c.Name) + utf8.RuneCountInString(c.Arguments)
	}
	return n
}

func tokens(chars int) int { return max(1, chars/4) }
