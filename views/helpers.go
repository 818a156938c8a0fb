package views

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/a-h/templ"
)

// longResult is the length, in characters, above which a tool result is
// folded into a <details> element.
const longResult = 600

// htmxConfig keeps error responses from replacing the element that asked:
// for 4xx and 5xx only the out-of-band parts (the flash) are swapped in.
// Script tags and eval stay off because nothing we render needs them.
const htmxConfig = `{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false,` +
	`"responseHandling":[{"code":"204","swap":false},{"code":"[23]..","swap":true},` +
	`{"code":"[45]..","swap":true,"error":true,"swapOverride":"none"}]}`

// HumanTime is how a sentence for people names a moment: in UTC, to the
// minute, as in "2 Dec 2026, 16:21 UTC".
func HumanTime(t time.Time) string {
	return t.UTC().Format("2 Jan 2006, 15:04 UTC")
}

func pageTitle(t string) string {
	if t == "" {
		return "countersign"
	}
	return t + " · countersign"
}

// navAttrs marks the nav link of the current section.
func navAttrs(active, name string) templ.Attributes {
	if active == name {
		return templ.Attributes{"aria-current": "page", "class": "active"}
	}
	return templ.Attributes{}
}

func flashKind(k string) string {
	switch k {
	case "ok", "error", "info":
		return k
	}
	return "info"
}

func flashRole(k string) string {
	if k == "error" {
		return "alert"
	}
	return "status"
}

var statuses = map[string]bool{
	"queued": true, "running": true, "waiting_for_approval": true,
	"completed": true, "failed": true, "cancelled": true,
}

func statusClass(s string) string {
	if statuses[s] {
		return "status-" + s
	}
	return "status-unknown"
}

func statusLabel(s string) string {
	if s == "" {
		return "unknown"
	}
	return strings.ReplaceAll(s, "_", " ")
}

func isTerminal(s string) bool {
	return s == "completed" || s == "failed" || s == "cancelled"
}

func runURL(id string) string {
	return "/runs/" + url.PathEscape(id)
}

func cancelURL(id string) string {
	return runURL(id) + "/cancel"
}

func pollURL(id string, after int64) string {
	return runURL(id) + "/steps?after=" + strconv.FormatInt(after, 10)
}

func itoa(n int) string { return strconv.Itoa(n) }

func stepID(seq int64) string { return "step-" + strconv.FormatInt(seq, 10) }

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// diffClass classes a preview line by its first character, as in a unified diff.
func diffClass(line string) string {
	switch {
	case strings.HasPrefix(line, "+"):
		return "diff-line diff-add"
	case strings.HasPrefix(line, "-"):
		return "diff-line diff-del"
	case strings.HasPrefix(line, "@@"):
		return "diff-line diff-hunk"
	}
	return "diff-line"
}

func isLong(s string) bool {
	return utf8.RuneCountInString(s) > longResult
}

func runeCount(s string) int { return utf8.RuneCountInString(s) }

func stepLabel(kind string) string {
	switch kind {
	case "prompt":
		return "Prompt"
	case "model_turn":
		return "Model"
	case "tool_started":
		return "Tool"
	case "tool_finished":
		return "Result"
	case "suspended":
		return "Waiting"
	case "decision":
		return "Decision"
	case "released":
		return "Handed back"
	case "finished":
		return "Finished"
	case "failed":
		return "Failed"
	}
	return kind
}

// outcomeLabel names the outcomes that mean the tool did not run as asked;
// it is empty for ok and for a plain tool error.
func outcomeLabel(o string) string {
	switch o {
	case "denied":
		return "denied"
	case "not_permitted":
		return "not permitted"
	case "bad_arguments":
		return "bad arguments"
	case "unknown_tool":
		return "unknown tool"
	case "answered":
		return "answered by the operator"
	case "expired":
		return "no decision in time"
	case "repeat_denied":
		return "denied again without asking"
	}
	return ""
}

func decisionLabel(d string) string {
	switch d {
	case "approve":
		return "Approved"
	case "deny":
		return "Denied"
	case "edit":
		return "Edited"
	case "answer":
		return "Answered"
	case "expire":
		return "Expired"
	case "":
		return "Decided"
	}
	return d
}

// terminationLabel names how a run ended: in words where the plain name would
// not say what happened, else the name with spaces.
func terminationLabel(t string) string {
	switch t {
	case "output_limit":
		return "stopped: the model's reply hit its output token limit"
	case "repeated_denials":
		return "stopped: the agent kept repeating calls that were denied"
	}
	return strings.ReplaceAll(t, "_", " ")
}

// defaultModel is the model an example prompt runs on: the one chosen, else
// the first offered.
func defaultModel(v NewRunView) string {
	if v.Model != "" {
		return v.Model
	}
	if len(v.Models) > 0 {
		return v.Models[0].Name
	}
	return ""
}

// nextAfter is where the next poll starts: after the last step sent.
func nextAfter(v StepsUpdate) int64 {
	after := v.After
	for _, s := range v.Steps {
		after = max(after, s.Seq)
	}
	return after
}

func errorTitle(v ErrorView) string {
	if v.Title != "" {
		return v.Title
	}
	return "Something went wrong"
}

func agentTitle(a AgentOption) string {
	if a.Title != "" {
		return a.Title
	}
	return a.Name
}

func matchCount(n int, more bool) string {
	if more {
		return "More than " + thousands(n) + " runs match"
	}
	if n == 1 {
		return "1 run matches"
	}
	return strconv.Itoa(n) + " runs match"
}

// thousands formats n with comma separators.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// badgeCount is the inbox badge's text: the count, or "999+" past it.
func badgeCount(n int) string {
	if n > 999 {
		return "999+"
	}
	return strconv.Itoa(n)
}

func userURL(id int64, action string) string {
	return "/users/" + strconv.FormatInt(id, 10) + "/" + action
}

// grantsIntro opens the admin's list of grants.
const grantsIntro = "An operator who approves a write may allow the same tool from then on without asking: " +
	"for the rest of the run, or for the agent for a period. Revoking a grant makes the next call ask a person again."

func grantURL(id int64) string {
	return "/grants/" + strconv.FormatInt(id, 10) + "/revoke"
}

// grantOffer is the period an agent-wide grant offered on the card lasts,
// or "" when the card offers no grant.
func grantOffer(card ApprovalCard) string {
	if !card.Grants || !card.CanApprove {
		return ""
	}
	if card.GrantFor == "" {
		return "1 hour"
	}
	return card.GrantFor
}

// grantScopeLabel says how far a grant reaches.
func grantScopeLabel(scope string) string {
	switch scope {
	case "run":
		return "rest of the run"
	case "agent":
		return "agent-wide"
	}
	return scope
}

// approvalIntro opens the card: what the turn holds, each kind of call
// for what it is, addressed to whoever reads it (see turnIntro).
func approvalIntro(card ApprovalCard) string { return turnIntro(card) }

func cardTitle(card ApprovalCard) string {
	for _, c := range card.Calls {
		if c.Kind != "question" {
			return "Approval needed"
		}
	}
	return "The agent asks you"
}

// allLabel names a button that decides every call at once.
func allLabel(card ApprovalCard, verb string) string {
	if len(card.Calls) == 1 {
		return verb
	}
	return verb + " all"
}

func hasEditable(card ApprovalCard) bool {
	for _, c := range card.Calls {
		if c.Kind == "read" || c.Kind == "write" {
			return true
		}
	}
	return false
}

func kindLabel(kind string) string {
	switch kind {
	case "read":
		return "reads only"
	case "write":
		return "changes something"
	case "question":
		return "question"
	}
	return "not offered"
}

func answerLabel(kind string) string {
	if kind == "question" {
		return "Answer"
	}
	return "Answer in its place (it does not run)"
}

func textLabel(kind string) string {
	if kind == "question" {
		return "Your answer"
	}
	return "Reason if you deny, or your answer"
}

func joinOptions(opts []string) string { return strings.Join(opts, " · ") }
