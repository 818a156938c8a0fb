package engine

import (
	"errors"
	"fmt"
)

// Errors of the loop.
var (
	// ErrStaleTurn refuses a decision made on another turn than the pending one.
	ErrStaleTurn = errors.New("decision is for another turn")
	// ErrCorruptState refuses a suspended state that does not decode or validate.
	ErrCorruptState = errors.New("corrupt suspended state")
)

// ApprovalRequiredError is returned by Loop.Run and Loop.Resume when a model
// turn calls a tool that requires approval. It is a suspension, not a
// failure: callers test for it with errors.As before any other handling and
// persist State until a person decides.
type ApprovalRequiredError struct {
	State *SuspendedState
}

func (e *ApprovalRequiredError) Error() string {
	names := make([]string, 0, len(e.State.Pending))
	for _, c := range e.State.Pending {
		names = append(names, c.Name)
	}
	return fmt.Sprintf("approval required for %d call(s): %v", len(names), names)
}

// RunError is a run that ended in failure, with the termination reason it
// should be stored under.
type RunError struct {
	Termination Termination
	Err         error
}

func (e *RunError) Error() string { return fmt.Sprintf("%s: %v", e.Termination, e.Err) }

// Unwrap returns the cause.
func (e *RunError) Unwrap() error { return e.Err }

// Texts of the results the loop gives in place of running a call. Models and
// tests recognise a denial or a refusal by these prefixes.
const (
	// DeniedPrefix opens the result of a call the operator denied.
	DeniedPrefix = "DENIED by the operator"
	// NotPermittedPrefix opens the result of an approved call whose tool is
	// no longer offered.
	NotPermittedPrefix = "NOT EXECUTED: tool no longer permitted"
	// EditedPrefix opens the result of a call the operator edited before it
	// ran, followed by what actually ran.
	EditedPrefix = "EDITED by the operator"
	// AnsweredPrefix opens the operator's answer in place of a tool.
	AnsweredPrefix = "ANSWERED by the operator"
	// ExpiredPrefix opens the result of a call whose turn waited past its
	// approval deadline.
	ExpiredPrefix = "NO DECISION in time"
	// RepeatDeniedPrefix opens the result of a call refused without asking
	// because an identical call was denied earlier in the run.
	RepeatDeniedPrefix = "DENIED again without asking"
)

// InputError refuses something a person sent (a prompt, a reason). Message is
// a sentence meant for that person; the error matches ErrInvalidInput.
type InputError struct {
	Field   string
	Message string
}

func (e *InputError) Error() string { return "invalid input: " + e.Field + ": " + e.Message }

// Is makes an InputError match ErrInvalidInput.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }
