package views

import "strings"

// shortID is the last 8 characters of a run id: its random part. The first
// ones are the ULID's time, the same for runs started in the same second.
func shortID(id string) string {
	if len(id) <= 8 {
		return id
	}
	return id[len(id)-8:]
}

// outcomeOr is o, or the bare status when o is zero (a view built without
// an outcome).
func outcomeOr(o Outcome, status string) Outcome {
	if o.Label != "" {
		if o.Status == "" {
			o.Status = status
		}
		return o
	}
	tone := "idle"
	switch status {
	case "completed":
		tone = "ok"
	case "failed":
		tone = "bad"
	case "waiting_for_approval":
		tone = "wait"
	}
	return Outcome{Status: status, Label: statusLabel(status), Tone: tone}
}

// outcomeFilterLabel names a value of the history's outcome filter.
func outcomeFilterLabel(o string) string {
	switch o {
	case "clean":
		return "clean (nothing denied, failed or expired)"
	case "denied":
		return "calls denied"
	case "write_failed":
		return "a write failed"
	case "expired":
		return "calls expired"
	case "waived":
		return "ran without a person (rule or grant)"
	case "interrupted":
		return "interrupted during a write"
	}
	return strings.ReplaceAll(o, "_", " ")
}

// names joins people's names for reading: "alice, bob".
func names(ns []string) string {
	return strings.Join(ns, ", ")
}
