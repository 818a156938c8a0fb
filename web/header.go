package web

import (
	"fmt"
	"time"

	"countersign/engine"
	"countersign/views"
)

// header turns a run into the run page's header.
func header(r engine.Run, now time.Time) views.RunHeader {
	return views.RunHeader{
		ID: r.ID, Agent: r.Agent, Model: r.Model, Status: string(r.Status), InitiatedBy: r.InitiatedBy,
		Termination: string(r.Termination), Error: r.Error, Iterations: r.Iterations,
		PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens, TotalTokens: r.Usage.TotalTokens,
		Duration: runDuration(r, now), CreatedAt: stamp(r.CreatedAt), Waiting: r.Status == engine.StatusWaiting,
	}
}

// runDuration is the wall time from creation to the end, or to now.
func runDuration(r engine.Run, now time.Time) string {
	end := r.FinishedAt
	if end.IsZero() {
		end = now
	}
	return humanDuration(end.Sub(r.CreatedAt))
}

// moment is t as a page shows it, relative to now: "just now", "40s ago",
// "12 min ago", "3 h ago", "5 days ago", or a date past a month; a time in
// the future reads "in 5 min".
func moment(t, now time.Time) views.Moment {
	if t.IsZero() {
		return views.Moment{}
	}
	return views.Moment{Rel: relative(t, now), Exact: stamp(t), ISO: t.UTC().Format(time.RFC3339)}
}

func relative(t, now time.Time) string {
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < 5*time.Second:
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%d h", int(d.Hours()))
	case d < 31*24*time.Hour:
		s = fmt.Sprintf("%d days", int(d.Hours()/24))
	default:
		return t.UTC().Format("2 Jan 2006")
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}
