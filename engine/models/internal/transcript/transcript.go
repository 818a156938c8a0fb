// Package transcript holds what the model providers share in mapping the
// engine's transcript onto their APIs.
package transcript

import (
	"strings"

	"countersign/engine"
)

// System returns the text of the system messages of msgs, in order, a blank
// line apart, leaving out the blank ones; it is empty when there is none.
// The engine opens a transcript with two system messages, the system prompt
// and the agent's instructions, but the APIs want one system text: the
// Messages API takes it apart from the messages, and the chat templates of
// some OpenAI-compatible servers (Qwen's among them) refuse a system message
// anywhere but first.
func System(msgs []engine.Message) string {
	var parts []string
	for _, m := range msgs {
		if m.Role == engine.RoleSystem && strings.TrimSpace(m.Content) != "" {
			parts = append(parts, m.Content)
		}
	}
	return strings.Join(parts, "\n\n")
}
