package web

import (
	"fmt"
	"time"

	"github.com/labstack/echo/v4"

	"countersign/engine"
	"countersign/store"
	"countersign/views"
)

// header turns a run into the run page's header. It leaves CanDecide
// false; headerFor sets it from the person looking.
func header(r engine.Run, now time.Time) views.RunHeader {
	h := views.RunHeader{
		ID: r.ID, Agent: r.Agent, Model: r.Model, Status: string(r.Status), InitiatedBy: r.InitiatedBy,
		Termination: headerTermination(r), Error: r.Error, Iterations: r.Iterations,
		PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens, TotalTokens: r.Usage.TotalTokens,
		Outcome: outcome(r), DecidedBy: r.Tally.DecidedBy,
		Started: moment(r.CreatedAt, now), CreatedAt: stamp(r.CreatedAt), Waiting: r.Status == engine.StatusWaiting,
	}
	switch {
	case h.Waiting:
		// The wait started when the turn was suspended: nothing else moves
		// a waiting run's updated_at.
		h.WaitingSince = moment(r.UpdatedAt, now)
		h.WaitingFor = compactDuration(now.Sub(r.UpdatedAt))
	case r.Status.Terminal():
		h.Duration = runDuration(r, now)
	default:
		h.Running = runDuration(r, now)
	}
	return h
}

// headerFor is header for the person c serves: an operator or admin is asked
// to review a waiting run's calls, a viewer told it waits for an operator.
func headerFor(c echo.Context, r engine.Run, now time.Time) views.RunHeader {
	h := header(r, now)
	h.CanDecide = hasRole(c, store.RoleOperator)
	return h
}

// headerTermination is how r ended, in the header's words, or empty where
// the outcome badge already says it (completed, cancelled, or a failure
// whose reason the outcome names).
func headerTermination(r engine.Run) string {
	switch {
	case r.Termination == engine.TermCompleted || r.Termination == engine.TermCancelled:
		return ""
	case r.Status == engine.StatusFailed && failureWords(r.Termination) != "":
		return ""
	}
	return string(r.Termination)
}

// runDuration is the wall time from creation to the end, or to now.
func runDuration(r engine.Run, now time.Time) string {
	end := r.FinishedAt
	if end.IsZero() {
		end = now
	}
	return compactDuration(end.Sub(r.CreatedAt))
}

// compactDuration is d as the header and the history show it, to the
// precision that matters at its size: "450ms", "3.2s", "42s", "4 min 5s",
// "25 min", "3 h 10 min", "4 days".
func compactDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 10*time.Minute:
		m, s := int(d.Minutes()), int(d.Seconds())%60
		if s == 0 {
			return fmt.Sprintf("%d min", m)
		}
		return fmt.Sprintf("%d min %ds", m, s)
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		h, m := int(d.Hours()), int(d.Minutes())%60
		if m == 0 {
			return fmt.Sprintf("%d h", h)
		}
		return fmt.Sprintf("%d h %d min", h, m)
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
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
