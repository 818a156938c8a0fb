package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// StateVersion is the version of the SuspendedState encoding this build
// writes and reads.
const StateVersion = 1

// SuspendedState is everything a suspended run needs to resume: the
// transcript up to and including the assistant turn that asked for approval,
// every call of that turn, the counters so far, the names of the tools that
// were offered and the previews shown to the approver.
type SuspendedState struct {
	Version      int        `json:"version"`
	Transcript   []Message  `json:"transcript"`
	Pending      []ToolCall `json:"pending"`
	Iterations   int        `json:"iterations"`
	Usage        Usage      `json:"usage"`
	OfferedTools []string   `json:"offered_tools"`
	Previews     []Preview  `json:"previews"`
}

// Preview is what one pending call would do, as lines shown to the approver.
type Preview struct {
	CallID string   `json:"call_id"`
	Tool   string   `json:"tool"`
	Lines  []string `json:"lines"`
	// Warning says the preview could not be made (the tool refused the
	// arguments, the page it names is missing or already there, the tool
	// is not offered): Lines say why, and the call will probably fail as
	// proposed.
	Warning bool `json:"warning,omitempty"`
}

// maxStateBytes bounds a blob DecodeState accepts.
const maxStateBytes = 32 << 20

// TurnDigest is the sha256, in hex, of the canonical JSON of a turn's pending
// calls: their IDs, names and arguments in order, with arguments that are
// valid JSON compacted. A decision names the digest of the turn it was made
// on, so a decision on any other turn is stale.
func TurnDigest(pending []ToolCall) string {
	type canon struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	cs := make([]canon, len(pending))
	for i, c := range pending {
		args := c.Arguments
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(args)) == nil {
			args = buf.String()
		}
		cs[i] = canon{ID: c.ID, Name: c.Name, Arguments: args}
	}
	b, err := json.Marshal(cs)
	if err != nil {
		// Strings and slices of them always marshal.
		panic(fmt.Sprintf("turn digest: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Digest returns the turn digest of the state's pending calls.
func (s *SuspendedState) Digest() string { return TurnDigest(s.Pending) }

// EncodeState encodes s as versioned JSON after validating it.
func EncodeState(s *SuspendedState) ([]byte, error) {
	if s == nil {
		return nil, errors.New("encode state: nil state")
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("encode state: %w", err)
	}
	return json.Marshal(s)
}

// DecodeState decodes and validates a blob written by EncodeState. A
// truncated, tampered, unknown-version or inconsistent blob is an error
// wrapping ErrCorruptState; it never panics.
//
// The blob is read once. Only when that read fails is the version looked
// up on its own, so that a blob of another version says so rather than
// naming the first field this build does not know.
func DecodeState(b []byte) (*SuspendedState, error) {
	if len(b) > maxStateBytes {
		return nil, fmt.Errorf("%w: %d bytes is over the limit", ErrCorruptState, len(b))
	}
	var s struct {
		SuspendedState
		Version *int `json:"version"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(&s)
	if err == nil {
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			err = errors.New("trailing data")
		}
	}
	if err != nil {
		// A blob of another version may well fail to decode here: say
		// which version it is rather than what this build does not know.
		var probe struct {
			Version *int `json:"version"`
		}
		if json.Unmarshal(b, &probe) == nil {
			if verr := checkVersion(probe.Version); verr != nil {
				return nil, verr
			}
		}
		return nil, fmt.Errorf("%w: %v", ErrCorruptState, err)
	}
	if err := checkVersion(s.Version); err != nil {
		return nil, err
	}
	st := s.SuspendedState
	st.Version = *s.Version
	if err := st.Validate(); err != nil {
		return nil, err
	}
	return &st, nil
}

// checkVersion says what is wrong with a blob's version v, if anything.
func checkVersion(v *int) error {
	switch {
	case v == nil:
		return fmt.Errorf("%w: no version", ErrCorruptState)
	case *v != StateVersion:
		return fmt.Errorf("%w: unknown version %d", ErrCorruptState, *v)
	}
	return nil
}

// Validate checks that s is a state Resume can continue: a known version, a
// well-formed transcript that ends with the assistant turn whose calls are
// exactly the pending ones, sane counters and previews of pending calls. Its
// errors wrap ErrCorruptState.
func (s *SuspendedState) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrCorruptState, fmt.Sprintf(format, args...))
	}
	if s.Version != StateVersion {
		return bad("unknown version %d", s.Version)
	}
	if len(s.Transcript) == 0 {
		return bad("empty transcript")
	}
	if len(s.Pending) == 0 {
		return bad("no pending calls")
	}
	if err := validateTranscript(s.Transcript); err != nil {
		return bad("%v", err)
	}
	last := s.Transcript[len(s.Transcript)-1]
	if last.Role != RoleAssistant || !equalCalls(last.ToolCalls, s.Pending) {
		return bad("pending calls are not the last assistant turn's calls")
	}
	assistants := 0
	for _, m := range s.Transcript {
		if m.Role == RoleAssistant {
			assistants++
		}
	}
	if s.Iterations < assistants {
		return bad("iterations %d below the %d assistant turns", s.Iterations, assistants)
	}
	u := s.Usage
	if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.TotalTokens < 0 {
		return bad("negative token counts")
	}
	for _, name := range s.OfferedTools {
		if name == "" {
			return bad("empty offered tool name")
		}
	}
	for _, p := range s.Previews {
		if !hasCall(s.Pending, p.CallID) {
			return bad("preview for call %q that is not pending", p.CallID)
		}
		if len(p.Lines) > MaxPreviewLines+1 {
			return bad("preview of %d lines", len(p.Lines))
		}
	}
	return nil
}

// validateTranscript checks roles and that every tool call before the last
// turn is answered exactly once, before the next assistant turn, and that
// every tool message answers an open call.
func validateTranscript(msgs []Message) error {
	sawUser := false
	open := map[string]bool{}
	for i, m := range msgs {
		switch m.Role {
		case RoleSystem:
			if sawUser {
				return fmt.Errorf("message %d: system message after the prompt", i)
			}
		case RoleUser:
			if len(open) > 0 {
				return fmt.Errorf("message %d: user message while calls are unanswered", i)
			}
			sawUser = true
		case RoleAssistant:
			if !sawUser {
				return fmt.Errorf("message %d: assistant turn before the prompt", i)
			}
			if len(open) > 0 {
				return fmt.Errorf("message %d: assistant turn while calls are unanswered", i)
			}
			for _, c := range m.ToolCalls {
				if c.ID == "" || c.Name == "" {
					return fmt.Errorf("message %d: tool call without id or name", i)
				}
				if open[c.ID] {
					return fmt.Errorf("message %d: duplicate call id %q", i, c.ID)
				}
				open[c.ID] = true
			}
		case RoleTool:
			if !open[m.ToolCallID] {
				return fmt.Errorf("message %d: result for call %q that is not open", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		default:
			return fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	if !sawUser {
		return errors.New("no user prompt")
	}
	return nil
}

func equalCalls(a, b []ToolCall) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func hasCall(calls []ToolCall, id string) bool {
	for _, c := range calls {
		if c.ID == id {
			return true
		}
	}
	return false
}
