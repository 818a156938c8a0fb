package demo

import (
	"encoding/json"
	"regexp"
)

// reRetry finds a prompt that tells the model to try again when refused,
// as in "Delete the old announcement page. If you are refused, try again."
var reRetry = regexp.MustCompile(`\btry (?:it )?again\b|\bretry\b|\bkeep trying\b|\bask again\b`)

// wantsRetry reports whether the prompt tells the model to try again when
// a call is refused.
func wantsRetry(prompt string) bool { return reRetry.MatchString(normalise(prompt)) }

// deniedOnly reports whether every call of the turn was denied, by a person
// or again by the loop breaker.
func (t turn) deniedOnly() bool {
	for _, r := range t.results {
		if r.outcome != outcomeDenied && r.outcome != outcomeRepeatDenied {
			return false
		}
	}
	return len(t.results) > 0
}

// retryDenied repeats the last turn, call for call with the same arguments,
// when all of its calls were denied. A model that insists like this is what
// the engine's loop breaker stops: it refuses the repeats without asking
// anyone and ends the run after a few such turns.
func retryDenied(turns []turn) (reply, bool) {
	if len(turns) == 0 || !turns[len(turns)-1].deniedOnly() {
		return reply{}, false
	}
	last := turns[len(turns)-1]
	for _, c := range last.calls {
		if !json.Valid([]byte(c.Arguments)) {
			return reply{}, false // not a call this model made
		}
	}
	r := reply{text: "That was refused, and you told me to try again if I am refused, so I am asking again."}
	for _, c := range last.calls {
		r.calls = append(r.calls, plannedCall{name: c.Name, args: json.RawMessage(c.Arguments)})
	}
	return r, true
}

// withoutRetried drops the turns whose calls were all denied and then
// asked again: the script goes on from the turn that was let through.
// retried reports whether it dropped any.
func withoutRetried(turns []turn) (kept []turn, retried bool) {
	for i, t := range turns {
		if i < len(turns)-1 && t.deniedOnly() {
			retried = true
			continue
		}
		kept = append(kept, t)
	}
	return kept, retried
}
