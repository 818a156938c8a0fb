package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"countersign/engine"
)

// ErrAnsweredByOperator is what calling ask_operator directly returns: its
// answer comes from a person through a decision, so it never runs.
var ErrAnsweredByOperator = errors.New("ask_operator is answered by a person and never runs")

// askTool is the question to the operator. It marks itself with
// engine.AsksOperator, so a turn that calls it waits and the operator's
// answer becomes its result; the loop never invokes its Call.
type askTool struct{ *tool }

// AsksOperator marks the tool's calls as questions to the operator.
func (*askTool) AsksOperator() {}

var _ engine.AsksOperator = (*askTool)(nil)

// AskOperator returns ask_operator, through which the agent asks the
// operator a question, with suggested answers, instead of guessing. It
// needs no workspace: it reads and changes nothing.
func AskOperator() engine.Tool {
	return &askTool{newTool("ask_operator",
		"Ask the operator (the person who approves your calls) a question and wait for the answer, "+
			"which comes back as this call's result. Ask when the request is ambiguous or names a page "+
			"that does not exist, instead of guessing. Offer likely answers in options.",
		[]param{
			{name: "question", description: "The question, in one or two sentences.", required: true},
			{name: "options", description: "Suggested answers the operator may pick from, such as page slugs.", list: true},
		},
		func(_ context.Context, a args) (string, error) {
			if strings.TrimSpace(a.str("question")) == "" {
				return "", fmt.Errorf("%w: the question is empty", ErrInvalidArguments)
			}
			return "", ErrAnsweredByOperator
		})}
}
