package demo

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"countersign/engine"
)

// script is the plan for one kind of prompt.
type script struct {
	// goal is what the prompt asks, as in "publish the page “about”".
	goal string
	// need lists the tools the script calls; all of them must be offered.
	need []string
	// steps says what each tool-call turn does, in order; the answer after
	// a problem names the steps it did not get to.
	steps []string
	// next returns the reply after the turns done so far, all of which
	// succeeded: the next turn's calls or the final answer.
	next func(done []turn) reply
	// find, when set, means the page is not known yet: the script is the
	// one find makes of the conversation.
	find *finder
	// unknown marks the answer to a prompt the model does not recognise.
	unknown bool
}

// reply is the next assistant message: text and the calls to make.
type reply struct {
	text  string
	calls []plannedCall
	// editsTold says that the text already tells what the operator's
	// edits changed.
	editsTold bool
}

// plannedCall is a tool call before it gets its ID and encoded arguments.
type plannedCall struct {
	name string
	args any
}

// Arguments of the workspace tools, in the order their fields are encoded.
type (
	noArgs   struct{}
	slugArgs struct {
		Slug string `json:"slug"`
	}
	queryArgs struct {
		Query string `json:"query"`
	}
	createArgs struct {
		Slug  string `json:"slug"`
		Title string `json:"title"`
		Body  string `json:"body"`
	}
	updateArgs struct {
		Slug string `json:"slug"`
		Body string `json:"body"`
	}
)

// missing returns the tools the script needs that are not offered.
func (s script) missing(offered map[string]bool) []string {
	var out []string
	for _, name := range s.need {
		if !offered[name] {
			out = append(out, name)
		}
	}
	return out
}

// stepsAfter returns the steps after step i, which the run will not reach.
func (s script) stepsAfter(i int) []string {
	if i+1 >= len(s.steps) {
		return nil
	}
	return s.steps[i+1:]
}

// answer is a final reply without calls.
func answer(format string, a ...any) reply { return reply{text: fmt.Sprintf(format, a...)} }

// call is a reply with one tool call.
func call(text, name string, args any) reply {
	return reply{text: text, calls: []plannedCall{{name: name, args: args}}}
}

// lastResult returns the result of the last successful call of tool name in
// the turns done.
func lastResult(done []turn, name string) (string, bool) {
	_, r, ok := lastCall(done, name)
	return r.content, ok
}

// lastCall returns the last successful call of tool name in the turns done,
// as it ran (with the operator's edits), and its result.
func lastCall(done []turn, name string) (engine.ToolCall, result, bool) {
	for i := len(done) - 1; i >= 0; i-- {
		t := done[i]
		for j := len(t.calls) - 1; j >= 0; j-- {
			if t.calls[j].Name == name && t.results[j].outcome == outcomeOK {
				return t.ran(j), t.results[j], true
			}
		}
	}
	return engine.ToolCall{}, result{}, false
}

// offScript is the answer when the transcript does not hold what the script
// expects, as when another model started the run.
func offScript(name string) reply {
	return answer("I expected a result from %s in this conversation but found none, so I stopped. "+
		"I am a scripted demo model and only follow my own plans.", name)
}

// unreadable is the answer when a tool result is not in the expected format.
func unreadable(name, content string) reply {
	return answer("%s returned something I could not read, so I stopped here. It returned: %s", name, clip(content, 300))
}

func wordCountScript(slug string) script {
	goal := "count the words of the page " + quote(slug)
	return script{
		goal: goal, need: []string{toolWordCount}, steps: []string{goal},
		next: func(done []turn) reply {
			if len(done) == 0 {
				return call("I'll count the words on the page "+quote(slug)+".", toolWordCount, slugArgs{slug})
			}
			content, ok := lastResult(done, toolWordCount)
			if !ok {
				return offScript(toolWordCount)
			}
			var wc struct {
				Slug  string `json:"slug"`
				Words *int   `json:"words"`
			}
			if json.Unmarshal([]byte(content), &wc) != nil || wc.Words == nil {
				return unreadable(toolWordCount, content)
			}
			return answer("The page %s has %s.", quote(orDefault(wc.Slug, slug)), plural(*wc.Words, "word"))
		},
	}
}

func wordCountPublishScript(slug string) script {
	goal := "count the words of the page " + quote(slug) + " and publish it"
	return script{
		goal: goal, need: []string{toolWordCount, toolPublishPage}, steps: []string{goal},
		next: func(done []turn) reply {
			if len(done) == 0 {
				return reply{
					text: "I'll count the words on the page " + quote(slug) + " and publish it.",
					calls: []plannedCall{
						{name: toolWordCount, args: slugArgs{slug}},
						{name: toolPublishPage, args: slugArgs{slug}},
					},
				}
			}
			counted, r, ok := lastCall(done, toolWordCount)
			if !ok {
				return offScript(toolWordCount)
			}
			published, _, ok := lastCall(done, toolPublishPage)
			if !ok {
				return offScript(toolPublishPage)
			}
			var wc struct {
				Words *int `json:"words"`
			}
			if json.Unmarshal([]byte(r.content), &wc) != nil || wc.Words == nil {
				return answer("I published the page %s. The word count returned something I could not read: %s", quote(slugOf(published)), clip(r.content, 300))
			}
			if slugOf(published) != slugOf(counted) {
				return answer("The page %s has %s, and I published the page %s.", quote(slugOf(counted)), plural(*wc.Words, "word"), quote(slugOf(published)))
			}
			return answer("The page %s has %s, and I published it.", quote(slugOf(counted)), plural(*wc.Words, "word"))
		},
	}
}

func publishScript(slug string) script {
	goal := "publish the page " + quote(slug)
	return script{
		goal: goal, need: []string{toolPublishPage}, steps: []string{goal},
		next: func(done []turn) reply {
			if len(done) == 0 {
				return call("I'll publish the page "+quote(slug)+".", toolPublishPage, slugArgs{slug})
			}
			published, _, ok := lastCall(done, toolPublishPage)
			if !ok {
				return offScript(toolPublishPage)
			}
			return answer("I published the page %s.", quote(slugOf(published)))
		},
	}
}

func deleteScript(slug string) script {
	goal := "delete the page " + quote(slug)
	return script{
		goal: goal, need: []string{toolDeletePage}, steps: []string{goal},
		next: func(done []turn) reply {
			if len(done) == 0 {
				return call("I'll delete the page "+quote(slug)+".", toolDeletePage, slugArgs{slug})
			}
			deleted, _, ok := lastCall(done, toolDeletePage)
			if !ok {
				return offScript(toolDeletePage)
			}
			return answer("I deleted the page %s.", quote(slugOf(deleted)))
		},
	}
}

func searchScript(query string) script {
	goal := "search the pages for " + quote(query)
	return script{
		goal: goal, need: []string{toolSearchPages}, steps: []string{goal},
		next: func(done []turn) reply {
			if len(done) == 0 {
				return call("I'll search the pages for "+quote(query)+".", toolSearchPages, queryArgs{query})
			}
			content, ok := lastResult(done, toolSearchPages)
			if !ok {
				return offScript(toolSearchPages)
			}
			var hits []struct {
				Slug    string `json:"slug"`
				Title   string `json:"title"`
				Snippet string `json:"snippet"`
			}
			if json.Unmarshal([]byte(content), &hits) != nil {
				return unreadable(toolSearchPages, content)
			}
			if len(hits) == 0 {
				return answer("No page mentions %s.", quote(query))
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%s %s:", plural(len(hits), "page"), verbFor(len(hits), "mentions", "mention")+" "+quote(query))
			for _, h := range hits {
				fmt.Fprintf(&b, "\n- %s (%s)", h.Title, h.Slug)
				if s := strings.Join(strings.Fields(h.Snippet), " "); s != "" {
					fmt.Fprintf(&b, ": “%s”", s)
				}
			}
			return reply{text: b.String()}
		},
	}
}

func timeScript() script {
	goal := "tell the time"
	return script{
		goal: goal, need: []string{toolCurrentTime}, steps: []string{goal},
		next: func(done []turn) reply {
			if len(done) == 0 {
				return call("I'll look at the clock.", toolCurrentTime, noArgs{})
			}
			content, ok := lastResult(done, toolCurrentTime)
			if !ok {
				return offScript(toolCurrentTime)
			}
			var now struct {
				Time string `json:"time"`
			}
			if json.Unmarshal([]byte(content), &now) != nil || now.Time == "" {
				return unreadable(toolCurrentTime, content)
			}
			return answer("The current time is %s.", now.Time)
		},
	}
}

// pageInfo is one entry of list_pages.
type pageInfo struct {
	Slug      string `json:"slug"`
	Title     string `json:"title"`
	Status    string `json:"status"`
	UpdatedAt string `json:"updated_at"`
}

func listScript() script {
	goal := "list the pages"
	return script{
		goal: goal, need: []string{toolListPages}, steps: []string{goal},
		next: func(done []turn) reply {
			if len(done) == 0 {
				return call("I'll list the pages.", toolListPages, noArgs{})
			}
			content, ok := lastResult(done, toolListPages)
			if !ok {
				return offScript(toolListPages)
			}
			var pages []pageInfo
			if json.Unmarshal([]byte(content), &pages) != nil {
				return unreadable(toolListPages, content)
			}
			if len(pages) == 0 {
				return answer("The workspace has no pages.")
			}
			var b strings.Builder
			fmt.Fprintf(&b, "The workspace has %s:", plural(len(pages), "page"))
			for _, p := range pages {
				fmt.Fprintf(&b, "\n- %s (%s), %s", p.Title, p.Slug, orDefault(p.Status, "status unknown"))
			}
			return reply{text: b.String()}
		},
	}
}

func publishDraftsScript() script {
	return script{
		goal:  "publish every draft page",
		need:  []string{toolListPages, toolPublishPage},
		steps: []string{"list the pages", "publish every draft page"},
		next: func(done []turn) reply {
			switch len(done) {
			case 0:
				return call("I'll list the pages to find the drafts.", toolListPages, noArgs{})
			case 1:
				content, ok := lastResult(done, toolListPages)
				if !ok {
					return offScript(toolListPages)
				}
				var pages []pageInfo
				if json.Unmarshal([]byte(content), &pages) != nil {
					return unreadable(toolListPages, content)
				}
				var r reply
				var slugs []string
				for _, p := range pages {
					if strings.EqualFold(p.Status, "draft") {
						r.calls = append(r.calls, plannedCall{name: toolPublishPage, args: slugArgs{p.Slug}})
						slugs = append(slugs, quote(p.Slug))
					}
				}
				if len(r.calls) == 0 {
					return answer("There are no draft pages, so there is nothing to publish.")
				}
				r.text = fmt.Sprintf("I found %s: %s. I'll publish %s.", plural(len(slugs), "draft page"), list(slugs), verbFor(len(slugs), "it", "them"))
				return r
			}
			var slugs []string
			last := done[len(done)-1]
			for i, c := range last.calls {
				if c.Name == toolPublishPage {
					slugs = append(slugs, quote(slugOf(last.ran(i))))
				}
			}
			if len(slugs) == 0 {
				return offScript(toolPublishPage)
			}
			return answer("I published %s: %s.", plural(len(slugs), "draft page"), list(slugs))
		},
	}
}

// createBody is the text of a new page about topic: a few lines.
func createBody(topic string) string {
	if strings.Contains(topic, "sale") {
		return fmt.Sprintf("Our %s is here!\nFor a limited time, every paid plan is discounted.\nSee the pricing page for details.", topic)
	}
	return fmt.Sprintf("Announcing: %s.\nMore details will follow here soon.\nQuestions? Read the FAQ or write to support.", topic)
}

func createScript(slug, title, topic string, publish bool) script {
	goal := "create the page " + quote(slug)
	s := script{goal: goal, need: []string{toolCreatePage}, steps: []string{goal}}
	if publish {
		s.goal += " and publish it"
		s.need = append(s.need, toolPublishPage)
		s.steps = append(s.steps, "publish the page "+quote(slug))
	}
	s.next = func(done []turn) reply {
		if len(done) == 0 {
			return call("I'll create the page "+quote(slug)+" titled "+quote(title)+".",
				toolCreatePage, createArgs{Slug: slug, Title: title, Body: createBody(topic)})
		}
		// The operator may have edited the creation: go on with the page
		// that was created.
		created, _, ok := lastCall(done[:1], toolCreatePage)
		if !ok {
			return offScript(toolCreatePage)
		}
		page, name := slugOf(created), argOf(created, "title")
		if !publish {
			return answer("I created the page %s titled %s. It stays a draft until someone publishes it.", quote(page), quote(name))
		}
		if len(done) == 1 {
			return call("The page "+quote(page)+" is created; now I'll publish it.", toolPublishPage, slugArgs{page})
		}
		published, _, ok := lastCall(done, toolPublishPage)
		if !ok {
			return offScript(toolPublishPage)
		}
		if slugOf(published) != page {
			return answer("I created the page %s titled %s and published the page %s.", quote(page), quote(name), quote(slugOf(published)))
		}
		return answer("I created the page %s titled %s and published it.", quote(page), quote(name))
	}
	return s
}

// rePerSeat finds a price per seat in a page body; group 1 is what follows
// the amount.
var rePerSeat = regexp.MustCompile(`(?i)\$\s?\d+(?:[.,]\d+)?(\s*(?:per|a|/)\s*seat)`)

// findPrice finds the price per seat that follows the mention of
// planName, or else the first one in body: the bounds of the amount, such
// as "$10", in body.
func findPrice(body, planName string) (start, end int, ok bool) {
	from := 0
	if planName != "" {
		if i := strings.Index(lowerASCII(body), planName+" plan"); i >= 0 && rePerSeat.FindStringIndex(body[i:]) != nil {
			from = i
		}
	}
	loc := rePerSeat.FindStringSubmatchIndex(body[from:])
	if loc == nil {
		return 0, 0, false
	}
	return from + loc[0], from + loc[2], true
}

// priceIn returns the price per seat that findPrice finds, as "$12".
func priceIn(body, planName string) (string, bool) {
	start, end, ok := findPrice(body, planName)
	if !ok {
		return "", false
	}
	return strings.Join(strings.Fields(body[start:end]), ""), true
}

// replacePrice puts amount in place of the price per seat that findPrice
// finds. It returns the new body and the price it replaced, or ok=false
// when there is none.
func replacePrice(body, amount, planName string) (string, string, bool) {
	start, end, ok := findPrice(body, planName)
	if !ok {
		return body, "", false
	}
	return body[:start] + "$" + amount + body[end:], body[start:end], true
}

func updatePriceScript(slug, amount, planName string) script {
	goal := "update the page " + quote(slug)
	// what says what costs the price: "the Team plan now costs $12 per
	// seat", "the price is now $12 per seat".
	what := func(price string) string {
		if planName != "" {
			return "the " + sentenceCase(planName) + " plan now costs " + price + " per seat"
		}
		return "the price is now " + price + " per seat"
	}
	return script{
		goal:  goal,
		need:  []string{toolGetPage, toolUpdatePage},
		steps: []string{"read the page " + quote(slug), goal},
		next: func(done []turn) reply {
			switch len(done) {
			case 0:
				return call("I'll read the page "+quote(slug)+" first.", toolGetPage, slugArgs{slug})
			case 1:
				content, ok := lastResult(done, toolGetPage)
				if !ok {
					return offScript(toolGetPage)
				}
				var page struct {
					Body *string `json:"body"`
				}
				if json.Unmarshal([]byte(content), &page) != nil || page.Body == nil {
					return unreadable(toolGetPage, content)
				}
				body, old, ok := replacePrice(*page.Body, amount, planName)
				if !ok {
					return answer("The page %s does not state a price per seat, so I did not change it.", quote(slug))
				}
				if strings.Join(strings.Fields(old), "") == "$"+amount {
					return answer("The page %s already says $%s per seat, so there is nothing to change.", quote(slug), amount)
				}
				return call(fmt.Sprintf("I'll change %s to $%s per seat on the page %s.", old, amount, quote(slug)),
					toolUpdatePage, updateArgs{Slug: slug, Body: body})
			}
			updated, r, ok := lastCall(done[:2], toolUpdatePage)
			if !ok {
				return offScript(toolUpdatePage)
			}
			if r.edited == nil {
				return answer("I updated the page %s: %s.", quote(slug), what("$"+amount))
			}
			// The operator edited the update: say what ran, read from the
			// note, or else from the page read back.
			ranSlug := slugOf(updated)
			var body *string
			if r.edited.args != "" {
				var args struct {
					Body *string `json:"body"`
				}
				if json.Unmarshal([]byte(updated.Arguments), &args) != nil {
					return unreadable(toolUpdatePage, updated.Arguments)
				}
				body = args.Body
				if body == nil {
					return reply{editsTold: true, text: fmt.Sprintf("The operator edited my update before it ran: it left the body of the page %s as it was, "+
						"so the price did not change. It ran with %s.", quote(ranSlug), clip(updated.Arguments, 300))}
				}
			} else {
				if len(done) == 2 {
					return call("The operator edited my update before it ran; I'll read the page "+quote(slug)+" back to see what it says now.",
						toolGetPage, slugArgs{slug})
				}
				content, ok := lastResult(done[2:], toolGetPage)
				var page struct {
					Body *string `json:"body"`
				}
				if !ok || json.Unmarshal([]byte(content), &page) != nil || page.Body == nil {
					return unreadable(toolGetPage, content)
				}
				ranSlug, body = slug, page.Body
			}
			price, ok := priceIn(*body, planName)
			switch {
			case !ok:
				return reply{editsTold: true, text: fmt.Sprintf("The operator edited my update before it ran: the page %s now states no price per seat, "+
					"not the $%s I proposed.", quote(ranSlug), amount)}
			case price == "$"+amount:
				return reply{editsTold: true, text: fmt.Sprintf("I updated the page %s: %s. The operator edited my update before it ran but kept that price.",
					quote(ranSlug), what(price))}
			}
			return reply{editsTold: true, text: fmt.Sprintf("The operator edited my update before it ran: on the page %s, %s, not the $%s I proposed.",
				quote(ranSlug), what(price), amount)}
		},
	}
}

// askScript answers with a question and calls nothing.
func askScript(question string) script {
	return script{next: func([]turn) reply { return reply{text: question} }}
}

func unknownScript() script {
	return script{unknown: true, next: func([]turn) reply {
		var b strings.Builder
		b.WriteString("I am the demo model: a scripted stand-in, not a language model. " +
			"I did not recognise that request, so I did nothing. I understand a handful of prompts about the demo workspace, such as:")
		for _, e := range Examples() {
			b.WriteString("\n- " + e)
		}
		b.WriteString("\nPick another model in the playground for free-form requests.")
		return reply{text: b.String()}
	}}
}
