package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"countersign/engine"
	"countersign/views"
)

func humanDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return d.Truncate(time.Second).String()
	case d < 48*time.Hour:
		return d.Truncate(time.Minute).String()
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// step turns a recorded event into a step of the run page.
func step(re engine.RecordedEvent) views.Step {
	ev := re.Event
	s := views.Step{Seq: re.Seq, Kind: string(ev.Kind), At: stamp(ev.At), Text: ev.Text,
		IsError: ev.IsError, Outcome: string(ev.Outcome), Write: ev.Write, Result: prettyJSON(ev.Result),
		Decision: string(ev.Decision), By: ev.By, Reason: ev.Reason, Termination: string(ev.Termination), Error: ev.Error}
	if ev.DurationMS > 0 {
		s.Duration = humanDuration(time.Duration(ev.DurationMS) * time.Millisecond)
	}
	if ev.Usage != nil {
		s.Usage = fmt.Sprintf("%d tokens (%d prompt, %d completion)", ev.Usage.TotalTokens, ev.Usage.PromptTokens, ev.Usage.CompletionTokens)
	}
	if ev.Totals != nil {
		s.Totals = fmt.Sprintf("%d model calls, %d tokens", ev.Totals.Iterations, ev.Totals.Usage.TotalTokens)
	}
	if ev.Call != nil {
		s.Tool, s.CallID, s.ArgsPretty, s.Args = ev.Call.Name, ev.Call.ID, prettyJSON(ev.Call.Arguments), argViews(ev.Call.Arguments)
	}
	if ev.Original != "" {
		s.Original, s.EditedBy = prettyJSON(ev.Original), ev.EditedBy
	}
	s.WaivedBy = ev.WaivedBy
	for _, cv := range ev.Verdicts {
		s.Verdicts = append(s.Verdicts, views.VerdictView{CallID: cv.CallID, Tool: cv.Tool, Verdict: string(cv.Verdict),
			Arguments: prettyJSON(cv.Arguments), Original: prettyJSON(cv.Original), Text: cv.Text,
			ArgList: argViews(cv.Arguments), OriginalList: argViews(cv.Original)})
	}
	s.ToolCalls = callViews(ev.ToolCalls)
	s.Pending = callViews(ev.Pending)
	for _, p := range ev.Previews {
		s.Previews = append(s.Previews, views.PreviewView{CallID: p.CallID, Tool: p.Tool, Lines: p.Lines, Warning: p.Warning})
	}
	return s
}

// steps turns recorded events into the steps of the run page. A model turn
// whose text the finished step right after it repeats as the final answer
// leaves the text to that step.
func steps(evs []engine.RecordedEvent) []views.Step {
	out := make([]views.Step, len(evs))
	for i, e := range evs {
		out[i] = step(e)
		if i > 0 && answers(evs[i-1].Event, e.Event) {
			out[i-1].Answered = true
		}
	}
	return out
}

// answers reports whether the model turn turn is the reply whose text the
// finished event fin shows as the final answer.
func answers(turn, fin engine.Event) bool {
	return turn.Kind == engine.EventModelTurn && fin.Kind == engine.EventFinished &&
		len(turn.ToolCalls) == 0 && turn.Text != "" && turn.Text == fin.Text
}

func callViews(calls []engine.ToolCall) []views.ToolCallView {
	var out []views.ToolCallView
	for _, c := range calls {
		out = append(out, views.ToolCallView{ID: c.ID, Name: c.Name, ArgsPretty: prettyJSON(c.Arguments), Short: callSummary(c.Arguments)})
	}
	return out
}

// prettyJSON indents valid JSON and leaves anything else as it came.
func prettyJSON(s string) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(s), "", "  "); err != nil {
		return s
	}
	return buf.String()
}

// card builds the approval card of a waiting run from its suspended state;
// info tells reads, writes and questions apart and gives their tools' hints. Each call preselects the
// verdict a person most often gives it: approve, or answer for a question.
//
// A read held in a turn with other calls is marked Held, and a preview
// that could not be made is a warning.
func card(run engine.Run, st *engine.SuspendedState, info func(engine.ToolCall) (engine.CallKind, engine.ToolHints)) *views.ApprovalCard {
	c := &views.ApprovalCard{RunID: run.ID, Digest: run.PendingDigest}
	for _, call := range turnCalls(st, info) {
		pc := views.PendingCall{ID: call.ID, Tool: call.Name, ArgsPretty: prettyJSON(call.Arguments), Args: argViews(call.Arguments),
			Preview: call.Preview.Lines, PreviewWarning: call.Preview.Warning, Kind: string(call.Kind),
			Verdict: string(engine.VerdictApprove), Held: call.Held,
			Destructive: call.Kind == engine.CallWrite && call.Hints.Destructive, Source: call.Hints.Source}
		pc.EditArgs = pc.ArgsPretty // an edit starts from what the model proposed
		if call.Kind == engine.CallQuestion {
			pc.Verdict = string(engine.VerdictAnswer)
			pc.Question, pc.Options = questionOf(call.Arguments)
		}
		c.Calls = append(c.Calls, pc)
	}
	return c
}

// questionOf reads the question and suggested answers of a question to the
// operator; arguments that do not parse are shown as they came.
func questionOf(args string) (string, []string) {
	var q struct {
		Question string   `json:"question"`
		Options  []string `json:"options"`
	}
	if err := json.Unmarshal([]byte(args), &q); err != nil || strings.TrimSpace(q.Question) == "" {
		return args, nil
	}
	return q.Question, q.Options
}
