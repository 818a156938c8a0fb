package demo

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// finder finds the page of a prompt that names none, or names one the model
// does not know, before the script for it starts: it lists the pages and,
// unless the named one is there, asks the operator which page is meant,
// instead of guessing. The operator's answer picks the page; the script for
// that page then goes on.
type finder struct {
	// slug is the page the prompt names, or "" when it names none.
	slug string
	// verb is what the script does to the page, as in "Which page should I
	// publish?".
	verb string
	// build makes the script for the page found.
	build func(slug string) script
	// fallback is the script when the agent cannot ask: ask_operator or
	// list_pages is not offered.
	fallback script
}

// askArgs are the arguments of ask_operator.
type askArgs struct {
	Question string   `json:"question"`
	Options  []string `json:"options,omitempty"`
}

// maxOptions bounds the suggested answers of a question.
const maxOptions = 8

// script returns the script as the turns done so far make it: still finding
// the page, or the script for the page found, which sees only the turns
// after the finding. Its steps count the finding turns, so that the answer
// after a problem names the right steps as not reached.
func (f *finder) script(turns []turn, offered map[string]bool) script {
	if !offered[toolAskOperator] || !offered[toolListPages] {
		return f.fallback
	}
	listStep, askStep := "list the pages", "ask the operator which page to "+f.verb
	if len(turns) >= 1 {
		pages, ok := listedPages(turns[0])
		if ok && f.slug != "" && slices.ContainsFunc(pages, func(p pageInfo) bool { return p.Slug == f.slug }) {
			return after(f.build(f.slug), 1, []string{listStep}, "")
		}
		if ok && len(turns) >= 2 {
			if answer, asked := questionAnswer(turns[1]); asked {
				return f.answered(pages, answer, []string{listStep, askStep})
			}
		}
	}
	inner := f.build(orDefault(f.slug, "?"))
	goal, steps := inner.goal, inner.steps
	if f.slug == "" {
		goal, steps = f.verb+" the page the operator names", []string{f.verb + " the page the operator names"}
	}
	return script{
		goal:  goal,
		need:  append(slices.Clone(inner.need), toolListPages, toolAskOperator),
		steps: append([]string{listStep, askStep}, steps...),
		next: func(done []turn) reply {
			if len(done) == 0 {
				if f.slug == "" {
					return call("The request does not say which page; I'll list the pages first.", toolListPages, noArgs{})
				}
				return call("I do not know a page "+quote(f.slug)+"; I'll list the pages to check.", toolListPages, noArgs{})
			}
			content, ok := lastResult(done, toolListPages)
			if !ok {
				return offScript(toolListPages)
			}
			pages, ok := listedPages(done[0])
			if !ok {
				return unreadable(toolListPages, content)
			}
			if len(done) >= 2 {
				return offScript(toolAskOperator)
			}
			if len(pages) == 0 {
				return answer("The workspace has no pages, so there is no page to %s. I changed nothing.", f.verb)
			}
			q := askArgs{Question: "Which page should I " + f.verb + "?", Options: f.options(pages)}
			text := "The request does not say which page to " + f.verb + ", so I'll ask the operator instead of guessing."
			if f.slug != "" {
				q.Question = "There is no page " + quote(f.slug) + ". " + q.Question
				text = "There is no page " + quote(f.slug) + ", so I'll ask the operator which page to " + f.verb + " instead of guessing."
			}
			return call(text, toolAskOperator, q)
		},
	}
}

// answered returns the script after the operator answered the question:
// the script for the page the answer names, or an answer saying that it
// names none.
func (f *finder) answered(pages []pageInfo, answer string, prefix []string) script {
	slug := pageInAnswer(answer, pages)
	if slug == "" {
		return script{steps: prefix, next: func([]turn) reply {
			return reply{text: fmt.Sprintf("I asked the operator which page to %s; they answered %s, which names none of the pages %s, so I changed nothing.",
				f.verb, quote(oneLine(clip(answer, 300))), list(slugsOf(pages)))}
		}}
	}
	note := fmt.Sprintf("I asked the operator which page to %s, and they named %s.", f.verb, quote(slug))
	if f.slug != "" {
		note = fmt.Sprintf("There is no page %s, so I asked the operator, who named %s.", quote(f.slug), quote(slug))
	}
	return after(f.build(slug), len(prefix), prefix, note)
}

// options are the suggested answers to the question: the slugs, and for a
// publication only the drafts, when there are any.
func (f *finder) options(pages []pageInfo) []string {
	var drafts []pageInfo
	for _, p := range pages {
		if strings.EqualFold(p.Status, "draft") {
			drafts = append(drafts, p)
		}
	}
	if strings.HasPrefix(f.verb, "publish") && len(drafts) > 0 {
		pages = drafts
	}
	out := make([]string, 0, min(len(pages), maxOptions))
	for _, p := range pages[:min(len(pages), maxOptions)] {
		out = append(out, p.Slug)
	}
	return out
}

// after returns s going on after k turns of finding its page, which are
// the steps prefix. Its final answer opens with note.
func after(s script, k int, prefix []string, note string) script {
	next := s.next
	s.steps = append(slices.Clone(prefix), s.steps...)
	s.next = func(done []turn) reply {
		r := next(done[min(k, len(done)):])
		if len(r.calls) == 0 && note != "" {
			r.text = note + " " + r.text
		}
		return r
	}
	return s
}

// listedPages reads the pages of a turn that listed them.
func listedPages(t turn) ([]pageInfo, bool) {
	for i, c := range t.calls {
		if c.Name != toolListPages || t.results[i].outcome != outcomeOK {
			continue
		}
		var pages []pageInfo
		if json.Unmarshal([]byte(t.results[i].content), &pages) != nil {
			return nil, false
		}
		return pages, true
	}
	return nil, false
}

// questionAnswer returns the operator's answer to a question in the turn.
func questionAnswer(t turn) (string, bool) {
	for i := range t.calls {
		if t.answeredQuestion(i) {
			return t.results[i].answer, true
		}
	}
	return "", false
}

// reSlugOnly matches an answer that is a slug and nothing else.
var reSlugOnly = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)

// pageInAnswer returns the page of pages an answer names: the answer itself
// when it is a slug, else the page it mentions first, by slug or as a
// prompt would name it. A name that is not one of pages is no answer.
func pageInAnswer(answer string, pages []pageInfo) string {
	a := normalise(answer)
	has := func(slug string) bool {
		return slug != "" && slices.ContainsFunc(pages, func(p pageInfo) bool { return p.Slug == slug })
	}
	if s := strings.Trim(a, " \t\n.,;:!?\"'“”‘’`"); reSlugOnly.MatchString(s) {
		if has(s) {
			return s
		}
		return ""
	}
	best, at := "", len(a)+1
	consider := func(slug string, loc []int) {
		if loc != nil && has(slug) && (loc[0] < at || loc[0] == at && len(slug) > len(best)) {
			best, at = slug, loc[0]
		}
	}
	for _, p := range pages {
		if re, err := regexp.Compile(`(?:^|[^a-z0-9-])` + regexp.QuoteMeta(p.Slug) + `(?:$|[^a-z0-9-])`); err == nil {
			consider(p.Slug, re.FindStringIndex(a))
		}
	}
	for _, al := range pageAliases {
		consider(al.slug, al.re.FindStringIndex(a))
	}
	if best != "" {
		return best
	}
	if slug := pageIn(a); has(slug) {
		return slug
	}
	return ""
}

// slugsOf quotes the slugs of pages.
func slugsOf(pages []pageInfo) []string {
	out := make([]string, len(pages))
	for i, p := range pages {
		out[i] = quote(p.Slug)
	}
	return out
}
