package views

// Outcome is how a run ended, or where it stands, in a few words: its status
// and what went wrong on the way, as in "completed · 1 denied" or "failed ·
// interrupted during a write". The run header, the history and the inbox
// show it in place of the bare status.
type Outcome struct {
	// Status is the run's status (completed, failed, waiting_for_approval…).
	Status string
	// Label is what a person reads.
	Label string
	// Tone colours it: "ok" for a clean completion, "warn" for a run that
	// completed with calls denied, expired or failed, "bad" for a failed
	// run, "wait" for one waiting for a person, "idle" otherwise.
	Tone string
}

// Moment is a point in time as a page shows it: relative ("3 min ago") with
// the exact time on hover and in a machine-readable attribute.
type Moment struct {
	// Rel is the relative text, Exact the full UTC time, ISO the RFC 3339
	// form for the datetime attribute. A zero Moment shows nothing.
	Rel, Exact, ISO string
}
