package engine

import (
	"fmt"
	"strings"
)

// The texts the model gets in place of, or around, a tool's result.

// denialText is the result the model sees for a denied call: it carries the
// reason and asks the model not to retry.
func denialText(reason string) string {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		reason = "no reason given"
	}
	if !strings.ContainsAny(reason[len(reason)-1:], ".!?") {
		reason += "."
	}
	return DeniedPrefix + ". Reason: " + reason + " This call was not executed. " +
		"Do not retry it or try to reach the same effect another way; tell the user it was not done."
}

// answerText is the result the model sees for a call the operator answered:
// the answer to its question, or the operator's text in place of a tool
// that did not run.
func answerText(kind CallKind, by, text string) string {
	who := "the operator"
	if by != "" {
		who += " (" + by + ")"
	}
	if kind == CallQuestion {
		return AnsweredPrefix + ": " + who + " answered your question:\n" + text
	}
	return AnsweredPrefix + ": this tool did not run; " + who + " answered in its place:\n" + text
}

// editNote opens the result of an edited call: what ran, so the model
// neither retries the original nor believes its arguments were used.
func editNote(by, original, edited string) string {
	who := "the operator"
	if by != "" {
		who += " (" + by + ")"
	}
	return fmt.Sprintf("%s: %s changed the arguments of this call before it ran. "+
		"It ran with %s instead of the %s you proposed; that change is done, do not retry the original. Result:\n",
		EditedPrefix, who, edited, original)
}
