package web

import (
	"strconv"
	"strings"

	"countersign/engine"
	"countersign/views"
)

// outcome says how run ended, or where it stands: its status, then what a
// person would want to know before trusting the result (calls denied,
// writes that failed, turns that expired), or why a failed run failed.
func outcome(run engine.Run) views.Outcome {
	o := views.Outcome{Status: string(run.Status), Tone: "idle"}
	parts := []string{statusWords(run.Status)}
	switch run.Status {
	case engine.StatusFailed:
		o.Tone = "bad"
		if w := failureWords(run.Termination); w != "" {
			parts = append(parts, w)
		}
	case engine.StatusCompleted:
		o.Tone = "ok"
	case engine.StatusWaiting:
		o.Tone = "wait"
	}
	t := run.Tally
	if t.Denied > 0 {
		parts = append(parts, strconv.Itoa(t.Denied)+" denied")
	}
	switch {
	case t.FailedWrites == 1:
		parts = append(parts, "write failed")
	case t.FailedWrites > 1:
		parts = append(parts, strconv.Itoa(t.FailedWrites)+" writes failed")
	}
	if t.Expired > 0 {
		parts = append(parts, strconv.Itoa(t.Expired)+" expired")
	}
	if run.Status == engine.StatusCompleted && len(parts) > 1 {
		o.Tone = "warn"
	}
	o.Label = strings.Join(parts, " · ")
	return o
}

// statusWords names a status as a person says it.
func statusWords(s engine.Status) string {
	if s == engine.StatusWaiting {
		return "waiting for approval"
	}
	if s == "" {
		return "unknown"
	}
	return strings.ReplaceAll(string(s), "_", " ")
}

// failureWords says why a run failed, in a few words.
func failureWords(t engine.Termination) string {
	switch t {
	case engine.TermInterrupted:
		return "interrupted during a write"
	case engine.TermMaxIterations:
		return "too many steps"
	case engine.TermModelError:
		return "model error"
	case engine.TermToolError:
		return "a tool failed"
	case engine.TermRetriesExhausted:
		return "gave up after retries"
	case engine.TermStateError:
		return "damaged state"
	case engine.TermOutputLimit:
		return "reply cut off"
	case engine.TermRepeatedDenials:
		return "kept repeating denied calls"
	case engine.TermCancelled, engine.TermCompleted, "":
		return ""
	}
	return strings.ReplaceAll(string(t), "_", " ")
}
