package demo

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"countersign/engine"
)

// troubleAnswer is the final answer after a turn in which a call was
// denied, refused, answered in place of running, or failed. It reports what
// was done (as it ran, edits included), what was not and why (quoting the
// operator's reasons and answers), and the steps the script did not reach.
// It never leads to another call. retried says the model asked again after
// a denial, as the prompt told it to.
func troubleAnswer(turns []turn, notReached []string, retried bool) string {
	var done, notDone, answers []string
	var refused, failed, expired, repeated int
	denied, reasons, partial := denials(turns)
	for _, t := range turns {
		for i, c := range t.calls {
			r := t.results[i]
			switch r.outcome {
			case outcomeOK:
				s := pastTense(t.ran(i), r.content)
				if r.edited != nil {
					s += " (as the operator edited it before it ran)"
				}
				done = append(done, s)
			case outcomeAnswered:
				if t.answeredQuestion(i) {
					done = append(done, "asked the operator "+quote(argOf(c, "question"))+"; they answered "+quote(oneLine(clip(r.answer, 300))))
					continue
				}
				answers = append(answers, fmt.Sprintf("Instead of letting me %s, the operator answered: %s", infinitive(c), quoteSentence(oneLine(clip(r.answer, 500)))))
				notDone = append(notDone, infinitive(c)+" (not run: the operator answered instead)")
			case outcomeDenied:
				s := infinitive(c) + " (denied by the operator"
				if reason := denialReason(r.content); reason != "" && len(reasons) > 1 {
					s += ": " + quote(reason)
				}
				notDone = append(notDone, s+")")
			case outcomeExpired:
				expired++
				notDone = append(notDone, infinitive(c)+" (not run: no one decided before the approval deadline)")
			case outcomeRepeatDenied:
				repeated++
				notDone = append(notDone, infinitive(c)+" (denied again without asking anyone: the same call was denied before)")
			case outcomeNotPermitted:
				refused++
				notDone = append(notDone, infinitive(c)+" (not run: the tool is no longer permitted for this agent)")
			case outcomeFailed:
				failed++
				msg := oneLine(r.content)
				if rest, ok := cutPrefixFold(msg, "error:"); ok {
					msg = rest
				}
				what := infinitive(t.ran(i)) + " (failed: "
				if r.edited != nil {
					what = infinitive(t.ran(i)) + " (edited by the operator, then failed: "
				}
				notDone = append(notDone, what+clip(msg, 300)+")")
			default:
				failed++
				notDone = append(notDone, infinitive(c)+" (no result came back)")
			}
		}
	}
	for _, s := range notReached {
		notDone = append(notDone, s+" (not attempted)")
	}

	var b strings.Builder
	if denied > 0 {
		what, then := "The operator denied the request", ", so I stopped."
		if partial {
			what, then = "The operator approved part of the request and denied the rest", ", so I did only what was approved and stopped."
		}
		switch len(reasons) {
		case 0:
			b.WriteString(what + " without giving a reason" + then)
		case 1:
			fmt.Fprintf(&b, "%s%s Reason given: %s.", what, then, quote(reasons[0]))
		default:
			b.WriteString(what + then + " The reasons are below.")
		}
	}
	for _, a := range answers {
		sep(&b)
		b.WriteString(a)
	}
	if expired > 0 {
		sep(&b)
		b.WriteString("No one decided in time: the approval deadline passed, so those calls did not run and I stopped.")
	}
	if repeated > 0 {
		sep(&b)
		b.WriteString("I repeated a call that had been denied, and it was refused again without asking anyone.")
	}
	if refused > 0 {
		sep(&b)
		b.WriteString("Some approved calls were not run because their tool is no longer permitted for this agent.")
	}
	if failed > 0 {
		sep(&b)
		if denied+refused+expired+repeated+len(answers) == 0 {
			b.WriteString("I could not finish: a tool reported an error.")
		} else {
			b.WriteString("A tool also reported an error.")
		}
	}
	if len(done) > 0 {
		b.WriteString("\nDone:")
		for _, s := range done {
			b.WriteString("\n- " + s)
		}
	}
	b.WriteString("\nNot done:")
	for _, s := range notDone {
		b.WriteString("\n- " + s)
	}
	if retried {
		b.WriteString("\nI made no further tool calls.")
	} else {
		b.WriteString("\nI did not retry anything and made no further tool calls.")
	}
	return b.String()
}

// denials counts the denied calls of turns and collects the distinct
// reasons given. partial reports a turn whose calls were partly denied and
// partly run: the operator approved some of them.
func denials(turns []turn) (denied int, reasons []string, partial bool) {
	for _, t := range turns {
		ran, deniedHere := 0, 0
		for i, r := range t.results {
			switch {
			case r.outcome == outcomeDenied:
				deniedHere++
				if reason := denialReason(r.content); reason != "" && !slices.Contains(reasons, reason) {
					reasons = append(reasons, reason)
				}
			case r.outcome == outcomeOK, r.edited != nil, t.answeredQuestion(i):
				ran++
			}
		}
		denied += deniedHere
		partial = partial || deniedHere > 0 && ran > 0
	}
	return denied, reasons, partial
}

// editsTold says, for a final answer, which calls the operator edited
// before they ran and what ran instead: "" when none was edited.
func editsTold(turns []turn) string {
	var out []string
	for _, t := range turns {
		for i, c := range t.calls {
			e := t.results[i].edited
			if e == nil {
				continue
			}
			ran := t.ran(i)
			switch {
			case e.args == "":
				out = append(out, fmt.Sprintf("The operator edited my call to %s before it ran; I could not read what ran instead.", infinitive(c)))
			case infinitive(ran) != infinitive(c):
				out = append(out, fmt.Sprintf("The operator edited my call to %s before it ran, so it %s instead.", infinitive(c), pastTense(ran, "")))
			case ran.Arguments != c.Arguments:
				out = append(out, fmt.Sprintf("The operator edited my call to %s before it ran; it ran with %s.", infinitive(c), clip(ran.Arguments, 300)))
			}
		}
	}
	return strings.Join(out, " ")
}

// cannotAnswer is the final answer when the script needs tools the agent
// does not offer: the model says so instead of calling them.
func cannotAnswer(goal string, missing []string, offered map[string]bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "This agent cannot %s: that needs the %s %s, which this agent is not offered.",
		goal, strings.Join(missing, " and "), verbFor(len(missing), "tool", "tools"))
	names := make([]string, 0, len(offered))
	for name := range offered {
		names = append(names, name)
	}
	slices.Sort(names)
	if len(names) == 0 {
		b.WriteString(" It has no tools at all.")
	} else {
		fmt.Fprintf(&b, " Its tools are: %s.", strings.Join(names, ", "))
	}
	fmt.Fprintf(&b, " I made no tool calls and changed nothing; to do this, pick an agent that offers %s.", strings.Join(missing, " and "))
	return b.String()
}

// infinitive says what a call was meant to do: "publish the page “about”".
func infinitive(c engine.ToolCall) string {
	switch c.Name {
	case toolListPages:
		return "list the pages"
	case toolGetPage:
		return "read the page " + quote(slugOf(c))
	case toolSearchPages:
		return "search the pages for " + quote(argOf(c, "query"))
	case toolWordCount:
		return "count the words of the page " + quote(slugOf(c))
	case toolCurrentTime:
		return "read the clock"
	case toolCreatePage:
		return "create the page " + quote(slugOf(c))
	case toolUpdatePage:
		return "update the page " + quote(slugOf(c))
	case toolPublishPage:
		return "publish the page " + quote(slugOf(c))
	case toolDeletePage:
		return "delete the page " + quote(slugOf(c))
	case toolAskOperator:
		return "ask the operator " + quote(argOf(c, "question"))
	}
	if s, ok := fileInfinitive(c); ok {
		return s
	}
	return "call " + c.Name
}

// pastTense says what a successful call did: "published the page “about”".
func pastTense(c engine.ToolCall, content string) string {
	switch c.Name {
	case toolListPages:
		return "listed the pages"
	case toolGetPage:
		return "read the page " + quote(slugOf(c))
	case toolSearchPages:
		return "searched the pages for " + quote(argOf(c, "query"))
	case toolWordCount:
		s := "counted the words of the page " + quote(slugOf(c))
		var wc struct {
			Words *int `json:"words"`
		}
		if json.Unmarshal([]byte(content), &wc) == nil && wc.Words != nil {
			s += ": " + plural(*wc.Words, "word")
		}
		return s
	case toolCurrentTime:
		return "read the clock"
	case toolCreatePage:
		return "created the page " + quote(slugOf(c))
	case toolUpdatePage:
		return "updated the page " + quote(slugOf(c))
	case toolPublishPage:
		return "published the page " + quote(slugOf(c))
	case toolDeletePage:
		return "deleted the page " + quote(slugOf(c))
	case toolAskOperator:
		return "asked the operator " + quote(argOf(c, "question"))
	}
	if s, ok := filePastTense(c); ok {
		return s
	}
	return "called " + c.Name
}

// slugOf returns the slug argument of a call.
func slugOf(c engine.ToolCall) string { return argOf(c, "slug") }

// argOf returns a string argument of a call, or "?" when it has none.
func argOf(c engine.ToolCall, key string) string {
	var args map[string]any
	if json.Unmarshal([]byte(c.Arguments), &args) == nil {
		if s, ok := args[key].(string); ok {
			return s
		}
	}
	return "?"
}

// quote puts s in typographic quotes.
func quote(s string) string { return "“" + s + "”" }

// quoteSentence quotes s as the end of a sentence, adding a full stop
// unless s ends with its own.
func quoteSentence(s string) string {
	if strings.HasSuffix(s, ".") || strings.HasSuffix(s, "!") || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "…") {
		return quote(s)
	}
	return quote(s) + "."
}

// plural returns "1 word" or "57 words".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// verbFor picks the singular or plural form for n.
func verbFor(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// list joins items as "a, b and c".
func list(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// orDefault returns s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// oneLine folds whitespace, newlines included, into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// sep separates a sentence from the one before it, if any.
func sep(b *strings.Builder) {
	if b.Len() > 0 {
		b.WriteString(" ")
	}
}
