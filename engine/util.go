package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// parseArgs checks that raw is a JSON object; empty arguments mean {}.
func parseArgs(raw string) (json.RawMessage, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return json.RawMessage("{}"), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, errors.New("null is not an object")
	}
	return json.RawMessage(s), nil
}

// truncate cuts a result over MaxResultBytes with a note saying so.
func truncate(s string) string {
	if len(s) <= MaxResultBytes {
		return s
	}
	note := fmt.Sprintf("\n[result truncated: %d of %d bytes shown]", MaxResultBytes, len(s))
	return cutUTF8(s, MaxResultBytes) + note
}

// cutUTF8 returns at most n bytes of s without splitting a rune.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// normaliseCalls gives every call of a turn a non-empty ID unique within the
// turn, so that each can be answered exactly once.
func normaliseCalls(calls []ToolCall, iteration int) []ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := cloneCalls(calls)
	seen := make(map[string]bool, len(out))
	for i := range out {
		if out[i].ID == "" || seen[out[i].ID] {
			out[i].ID = fmt.Sprintf("call_%d_%d", iteration, i+1)
		}
		seen[out[i].ID] = true
	}
	return out
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

func cloneCalls(calls []ToolCall) []ToolCall {
	if calls == nil {
		return nil
	}
	return append([]ToolCall(nil), calls...)
}

func cloneMessages(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		m.ToolCalls = cloneCalls(m.ToolCalls)
		out[i] = m
	}
	return out
}
