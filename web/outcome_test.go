package web

import (
	"testing"
	"time"

	"countersign/engine"
	"countersign/views"
)

func TestOutcome(t *testing.T) {
	cases := []struct {
		run         engine.Run
		label, tone string
	}{
		{engine.Run{Status: engine.StatusCompleted, Termination: engine.TermCompleted}, "completed", "ok"},
		{engine.Run{Status: engine.StatusCompleted, Tally: engine.Tally{Denied: 1}}, "completed · 1 denied", "warn"},
		{engine.Run{Status: engine.StatusCompleted, Tally: engine.Tally{FailedWrites: 1}}, "completed · write failed", "warn"},
		{engine.Run{Status: engine.StatusCompleted, Tally: engine.Tally{FailedWrites: 2, Expired: 1}}, "completed · 2 writes failed · 1 expired", "warn"},
		{engine.Run{Status: engine.StatusCompleted, Tally: engine.Tally{Waived: 3, DecidedBy: []string{"bob"}}}, "completed", "ok"},
		{engine.Run{Status: engine.StatusFailed, Termination: engine.TermInterrupted}, "failed · interrupted during a write", "bad"},
		{engine.Run{Status: engine.StatusFailed, Termination: engine.TermRepeatedDenials, Tally: engine.Tally{Denied: 3}}, "failed · kept repeating denied calls · 3 denied", "bad"},
		{engine.Run{Status: engine.StatusFailed, Termination: engine.TermOutputLimit}, "failed · reply cut off", "bad"},
		{engine.Run{Status: engine.StatusWaiting, Tally: engine.Tally{Denied: 1}}, "waiting for approval · 1 denied", "wait"},
		{engine.Run{Status: engine.StatusCancelled, Termination: engine.TermCancelled}, "cancelled", "idle"},
		{engine.Run{Status: engine.StatusRunning}, "running", "idle"},
	}
	for _, c := range cases {
		o := outcome(c.run)
		if o.Label != c.label || o.Tone != c.tone || o.Status != string(c.run.Status) {
			t.Errorf("outcome(%s/%s %+v) = %+v, want %q %q", c.run.Status, c.run.Termination, c.run.Tally, o, c.label, c.tone)
		}
	}
}

func TestRelative(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	cases := map[time.Duration]string{
		-2 * time.Second: "just now", -40 * time.Second: "40s ago", -12 * time.Minute: "12 min ago",
		-3 * time.Hour: "3 h ago", -5 * 24 * time.Hour: "5 days ago", 5 * time.Minute: "in 5 min",
		-40 * 24 * time.Hour: "23 Oct 2026",
	}
	for d, want := range cases {
		if got := moment(now.Add(d), now).Rel; got != want {
			t.Errorf("moment(now%+v).Rel = %q, want %q", d, got, want)
		}
	}
	if m := moment(time.Time{}, now); m != (views.Moment{}) {
		t.Errorf("zero time gives %+v", m)
	}
}
