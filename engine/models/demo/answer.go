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
// denied, refused or failed. It reports what was done, what was not and why
// (quoting the operator's reason), and the steps the script did not reach.
// It never leads to another call.
func troubleAnswer(turns []turn, notReached []string) string {
	var done, notDone, reasons []string
	var denied, refused, failed int
	for _, t := range turns {
		for i, c := range t.calls {
			r := t.results[i]
			switch r.outcome {
			case outcomeOK:
				done = append(done, pastTense(c, r.content))
			case outcomeDenied:
				denied++
				notDone = append(notDone, infinitive(c)+" (denied by the operator)")
				if reason := denialReason(r.content); reason != "" && !slices.Contains(reasons, reason) {
					reasons = append(reasons, reason)
				}
			case outcomeNotPermitted:
				refused++
				notDone = append(notDone, infinitive(c)+" (not run: the tool is no longer permitted for this agent)")
			case outcomeFailed:
				failed++
				msg := oneLine(r.content)
				if rest, ok := cutPrefixFold(msg, "error:"); ok {
					msg = rest
				}
				notDone = append(notDone, infinitive(c)+" (failed: "+clip(msg, 300)+")")
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
	switch {
	case denied > 0 && len(reasons) == 0:
		b.WriteString("The operator denied the request without giving a reason, so I stopped.")
	case denied > 0:
		fmt.Fprintf(&b, "The operator denied the request, so I stopped. Reason given: %s.", quoteAll(reasons))
	}
	if refused > 0 {
		sep(&b)
		b.WriteString("Some approved calls were not run because their tool is no longer permitted for this agent.")
	}
	if failed > 0 {
		sep(&b)
		if denied+refused == 0 {
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
	b.WriteString("\nI did not retry anything and made no further tool calls.")
	return b.String()
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

// quoteAll quotes each of ss and joins them with semicolons.
func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return strings.Join(q, "; ")
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
