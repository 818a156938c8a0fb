package demo

import (
	"bytes"
	"encoding/json"
	"strings"

	"countersign/engine"
)

// conversation is what the model reads from a transcript: the last user
// prompt and the tool-call turns since.
type conversation struct {
	prompt string
	turns  []turn
	// iteration numbers the message being generated: the assistant
	// messages of the whole transcript plus one. Call IDs carry it, so they
	// are unique within the transcript.
	iteration int
}

// outcome is how one tool call was answered.
type outcome int

const (
	outcomeMissing      outcome = iota // no tool message answers the call
	outcomeOK                          // the tool ran and returned a result
	outcomeDenied                      // the operator denied the call
	outcomeNotPermitted                // approved, but the tool is no longer offered
	outcomeFailed                      // the tool or the loop reported an error
	outcomeAnswered                    // the operator answered: a question, or in place of a tool
	outcomeExpired                     // no decision came before the approval deadline
	outcomeRepeatDenied                // refused without asking: an identical call was denied before
)

// result is the answer to one tool call.
type result struct {
	outcome outcome
	// content is the tool's output, after the note of an edit; for a
	// denial, a refusal or an answer, the whole text.
	content string
	// edited is set when the operator changed the call's arguments before
	// it ran.
	edited *edit
	// answer is the operator's text, for outcomeAnswered.
	answer string
}

// edit is what the note of an edited call says ran.
type edit struct {
	// args are the arguments the call ran with, as compact JSON, or ""
	// when the note could not be read.
	args string
}

// turn is one assistant message with tool calls and the answers to them,
// aligned by index.
type turn struct {
	calls   []engine.ToolCall
	results []result
}

// troubled reports whether any call of the turn did not run successfully.
// An answered question is no trouble: the answer is what the model asked
// for. An answer in place of any other tool is: that tool did not run.
func (t turn) troubled() bool {
	for i, r := range t.results {
		if r.outcome != outcomeOK && !t.answeredQuestion(i) {
			return true
		}
	}
	return false
}

// answeredQuestion reports whether call i asked the operator and got an
// answer.
func (t turn) answeredQuestion(i int) bool {
	return t.calls[i].Name == toolAskOperator && t.results[i].outcome == outcomeAnswered
}

// ran returns call i as it ran: with the operator's arguments when they
// edited it and the note says what ran, else as the model proposed it.
func (t turn) ran(i int) engine.ToolCall {
	c := t.calls[i]
	if e := t.results[i].edited; e != nil && e.args != "" {
		c.Arguments = e.args
	}
	return c
}

// readTranscript finds the last user message and the turns after it. It
// reports false when there is no user message.
func readTranscript(msgs []engine.Message) (conversation, bool) {
	var conv conversation
	last := -1
	for i, m := range msgs {
		switch m.Role {
		case engine.RoleUser:
			last = i
		case engine.RoleAssistant:
			conv.iteration++
		}
	}
	conv.iteration++
	if last < 0 {
		return conv, false
	}
	conv.prompt = msgs[last].Content

	for _, m := range msgs[last+1:] {
		switch {
		case m.Role == engine.RoleAssistant && len(m.ToolCalls) > 0:
			conv.turns = append(conv.turns, turn{
				calls:   m.ToolCalls,
				results: make([]result, len(m.ToolCalls)),
			})
		case m.Role == engine.RoleTool && len(conv.turns) > 0:
			conv.turns[len(conv.turns)-1].answer(m)
		}
	}
	return conv, true
}

// answer attaches a tool message to the call it answers: by ID, or failing
// that to the first unanswered call of the same tool.
func (t *turn) answer(m engine.Message) {
	i := -1
	for j, c := range t.calls {
		if m.ToolCallID != "" && c.ID == m.ToolCallID {
			i = j
			break
		}
	}
	if i < 0 {
		for j, c := range t.calls {
			if t.results[j].outcome == outcomeMissing && c.Name == m.ToolName {
				i = j
				break
			}
		}
	}
	if i < 0 {
		return
	}
	t.results[i] = classify(m)
}

// classify tells what became of a call by the prefixes the loop puts in
// front of its result: an edit (then the call ran, well or not), an answer
// by the operator, an expired turn, a repeat refused without asking, a
// denial, a refusal, or else a result or an error.
func classify(m engine.Message) result {
	if strings.HasPrefix(m.Content, engine.EditedPrefix) {
		args, out := readEditNote(m.Content)
		r := result{outcome: outcomeOK, content: out, edited: &edit{args: args}}
		if m.IsError {
			r.outcome = outcomeFailed
		}
		return r
	}
	switch {
	case strings.HasPrefix(m.Content, engine.AnsweredPrefix):
		return result{outcome: outcomeAnswered, content: m.Content, answer: operatorText(m.Content)}
	case strings.HasPrefix(m.Content, engine.ExpiredPrefix):
		return result{outcome: outcomeExpired, content: m.Content}
	case strings.HasPrefix(m.Content, engine.RepeatDeniedPrefix):
		return result{outcome: outcomeRepeatDenied, content: m.Content}
	case !m.IsError:
		return result{outcome: outcomeOK, content: m.Content}
	case strings.HasPrefix(m.Content, engine.DeniedPrefix):
		return result{outcome: outcomeDenied, content: m.Content}
	case strings.HasPrefix(m.Content, engine.NotPermittedPrefix):
		return result{outcome: outcomeNotPermitted, content: m.Content}
	}
	return result{outcome: outcomeFailed, content: m.Content}
}

// readEditNote reads the note that opens the result of an edited call:
// "<EditedPrefix>: … It ran with <arguments> instead of the <original> you
// proposed; … Result:\n<output>". It returns the arguments that ran, as
// compact JSON, and the tool's output. The arguments are read as one JSON
// value, so text inside them cannot cut them short; when they cannot be
// read, args is "" and the caller must find out what ran another way.
func readEditNote(content string) (args, out string) {
	const ran, res = "It ran with ", "Result:\n"
	output := func(s string) string {
		if _, after, ok := strings.Cut(s, res); ok {
			return after
		}
		return ""
	}
	i := strings.Index(content, ran)
	if i < 0 {
		return "", output(content)
	}
	rest := content[i+len(ran):]
	dec := json.NewDecoder(strings.NewReader(rest))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil || !bytes.HasPrefix(raw, []byte("{")) {
		return "", output(rest)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return "", output(rest)
	}
	return buf.String(), output(rest[dec.InputOffset():])
}

// operatorText returns the operator's own words in an answered call's
// result: "<AnsweredPrefix>: the operator … answered …:\n<text>".
func operatorText(content string) string {
	s := strings.TrimPrefix(content, engine.AnsweredPrefix)
	if _, after, ok := strings.Cut(s, "\n"); ok {
		return strings.TrimSpace(after)
	}
	return strings.TrimSpace(strings.TrimLeft(s, " :"))
}

// denialReason returns the operator's reason carried by a denial result, or
// "" when none was given. The loop writes
// "<DeniedPrefix>. Reason: <reason>. This call was not executed. Do not retry…";
// other layouts are read leniently: whatever follows the prefix, up to the
// loop's closing sentences.
func denialReason(content string) string {
	s := strings.TrimPrefix(content, engine.DeniedPrefix)
	s = strings.TrimLeft(s, " .:;,-—")
	if rest, ok := cutPrefixFold(s, "reason:"); ok {
		s = rest
	}
	lower := lowerASCII(s)
	for _, tail := range []string{". this call was not executed", "do not retry", "don't retry"} {
		if i := strings.LastIndex(lower, tail); i >= 0 {
			s = s[:i]
			break
		}
	}
	s = strings.TrimSpace(s)
	s = strings.TrimSpace(strings.TrimSuffix(s, "."))
	if strings.EqualFold(s, "no reason given") {
		return ""
	}
	return s
}

// cutPrefixFold is strings.CutPrefix ignoring ASCII case, after leading
// spaces.
func cutPrefixFold(s, prefix string) (string, bool) {
	s = strings.TrimLeft(s, " ")
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return strings.TrimLeft(s[len(prefix):], " "), true
	}
	return s, false
}

// lowerASCII lower-cases A-Z only, so byte offsets into the result are
// offsets into s.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
