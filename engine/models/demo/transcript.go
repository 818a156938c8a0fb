package demo

import (
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
	outcomeDenied                      // the operator denied the turn
	outcomeNotPermitted                // approved, but the tool is no longer offered
	outcomeFailed                      // the tool or the loop reported an error
)

// result is the answer to one tool call.
type result struct {
	outcome outcome
	content string
}

// turn is one assistant message with tool calls and the answers to them,
// aligned by index.
type turn struct {
	calls   []engine.ToolCall
	results []result
}

// troubled reports whether any call of the turn did not run successfully.
func (t turn) troubled() bool {
	for _, r := range t.results {
		if r.outcome != outcomeOK {
			return true
		}
	}
	return false
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

// classify tells a denial and a refusal from other errors by the prefixes
// the loop puts in front of them.
func classify(m engine.Message) result {
	switch {
	case !m.IsError:
		return result{outcome: outcomeOK, content: m.Content}
	case strings.HasPrefix(m.Content, engine.DeniedPrefix):
		return result{outcome: outcomeDenied, content: m.Content}
	case strings.HasPrefix(m.Content, engine.NotPermittedPrefix):
		return result{outcome: outcomeNotPermitted, content: m.Content}
	}
	return result{outcome: outcomeFailed, content: m.Content}
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
