package views

import (
	"fmt"
	"strings"
)

// AuditStatus is what the run page says of the run's audit record.
type AuditStatus struct {
	Intact bool
	Events int64
	// Head is the hash of the last event, in full.
	Head string
	// Problems name what is wrong in a few words ("event 5 edited");
	// Details are the same as sentences.
	Problems, Details []string
	// Error is set when the record could not be checked.
	Error string
}

// auditShownProblems is how many problems the summary line names.
const auditShownProblems = 3

// summary names the first problems, and how many more there are.
func (a AuditStatus) summary() string {
	if len(a.Problems) <= auditShownProblems {
		return strings.Join(a.Problems, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(a.Problems[:auditShownProblems], ", "), len(a.Problems)-auditShownProblems)
}

// shortHead is the start of the head hash, enough to compare by eye.
func (a AuditStatus) shortHead() string {
	if len(a.Head) <= 12 {
		return a.Head
	}
	return a.Head[:12] + "…"
}

// eventCount says how many events there are.
func (a AuditStatus) eventCount() string {
	if a.Events == 1 {
		return "1 event"
	}
	return fmt.Sprintf("%d events", a.Events)
}
