package demo

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Names of the workspace tools the scripts call.
const (
	toolListPages   = "list_pages"
	toolGetPage     = "get_page"
	toolSearchPages = "search_pages"
	toolWordCount   = "word_count"
	toolCurrentTime = "current_time"
	toolCreatePage  = "create_page"
	toolUpdatePage  = "update_page"
	toolPublishPage = "publish_page"
	toolDeletePage  = "delete_page"
	toolAskOperator = "ask_operator"
)

// Prompt patterns, matched against the lower-cased prompt. plan tries them
// in a fixed order, the more specific first: "create a page …, then publish
// it" is a creation, "publish all drafts" is not the publication of one page.
var (
	reCreate  = regexp.MustCompile(`\bcreate\b|\b(?:write|add|make|start)\s+(?:a|an|one)\s+(?:new\s+)?page\b|\bnew page\b`)
	reTopic   = regexp.MustCompile(`\b(?:announcing|announces?|about|called|titled|named|for|on)\s+(.+)`)
	rePublish = regexp.MustCompile(`\bpublish`)
	reDrafts  = regexp.MustCompile(`\bdrafts?\b`)
	reAll     = regexp.MustCompile(`\ball\b|\bevery\b|\beach\b|\bdrafts\b`)
	reUpdate  = regexp.MustCompile(`\b(?:update|change|edit|set|raise|lower|increase|decrease|make)\b`)
	reAmount  = regexp.MustCompile(`\$\s*(\d+(?:\.\d{1,2})?)`)
	rePlan    = regexp.MustCompile(`\b([a-z]+)\s+plan\b`)
	reDelete  = regexp.MustCompile(`\b(?:delete|remove|trash)\b`)
	reWords   = regexp.MustCompile(`\bword[\s-]?counts?\b|\bhow many words\b|\bcount (?:the |all )?words\b|\bnumber of words\b|\bwords? long\b`)
	reSearch  = regexp.MustCompile(`\bsearch\b|\bfind\b|\blook (?:for|up)\b|\bmention|\bcontain`)
	reQuery   = regexp.MustCompile(`\b(?:for|about|mentioning|mentions?|mention|containing|contains?|contain)\s+(.+)`)
	reSearchQ = regexp.MustCompile(`\b(?:search|find)\s+(?:(?:the|all|every|through|in|across)\s+)*(?:pages?\s+|workspace\s+)?(.+)`)
	reTime    = regexp.MustCompile(`\bwhat time\b|\bcurrent time\b|\btime is it\b|\bthe time\b|\btime now\b|\bwhat(?:'s| is) the date\b|\btoday'?s date\b|\bwhat day\b|\bclock\b`)
	reList    = regexp.MustCompile(`\blist\b|\b(?:which|what) pages\b|\ball (?:the |of the )?pages\b|\bshow (?:me )?(?:all |the )?pages\b|\bpages (?:are there|do we have|exist)\b`)
	reClause  = regexp.MustCompile(`\s*(?:[,;.!?:]|\bthen\b|\band\b)`)
)

// pageAliases are the ways a prompt names a seeded page. The earliest
// mention in the prompt wins.
var pageAliases = []struct {
	slug string
	re   *regexp.Regexp
}{
	{"release-notes", regexp.MustCompile(`\brelease[\s-]?notes?\b`)},
	{"old-announcement", regexp.MustCompile(`\bold[\s-]announcements?\b`)},
	{"pricing", regexp.MustCompile(`\bpricing\b|\bprices?\s+page\b`)},
	{"welcome", regexp.MustCompile(`\bwelcome\b`)},
	{"faq", regexp.MustCompile(`\bfaqs?\b|\bfrequently asked\b`)},
	{"about", regexp.MustCompile(`\babout(?:[\s-]us)?\s+page\b|\bthe about\b|["'\x60]about["'\x60]|\babout[\s-]us\b`)},
}

// Other ways to name a page: a quoted or hyphenated slug, or "the … page".
var (
	reQuotedSlug = regexp.MustCompile(`["'\x60“‘]([a-z0-9]+(?:-[a-z0-9]+)*)["'\x60”’]`)
	reDashedSlug = regexp.MustCompile(`\b[a-z0-9]+(?:-[a-z0-9]+)+\b`)
	reNamedPage  = regexp.MustCompile(`\bthe ([a-z0-9][a-z0-9-]*(?: [a-z0-9][a-z0-9-]*){0,3}) page\b`)
)

// plan returns the script for a prompt: the tool calls it needs, turn by
// turn, and the final answer.
func plan(prompt string) script {
	p := normalise(prompt)
	switch {
	case reCreate.MatchString(p):
		topic := createTopic(p)
		return createScript(slugify(topic), sentenceCase(topic), topic, rePublish.MatchString(p))
	case rePublish.MatchString(p) && reDrafts.MatchString(p) && reAll.MatchString(p):
		return publishDraftsScript()
	case reUpdate.MatchString(p) && reAmount.MatchString(p):
		slug := pageIn(p)
		if slug == "" {
			slug = "pricing"
		}
		planName := ""
		if m := rePlan.FindStringSubmatch(p); m != nil && !isFiller(m[1]) {
			planName = m[1]
		}
		amount := reAmount.FindStringSubmatch(p)[1]
		return findPage(slug, "update", func(slug string) script { return updatePriceScript(slug, amount, planName) })
	case reDelete.MatchString(p):
		return withPage(p, "delete", deleteScript)
	case reWords.MatchString(p) && rePublish.MatchString(p):
		return withPage(p, "count the words of and publish", wordCountPublishScript)
	case reWords.MatchString(p):
		return withPage(p, "count the words of", wordCountScript)
	case rePublish.MatchString(p):
		return withPage(p, "publish", publishScript)
	case reSearch.MatchString(p):
		if q := searchQuery(p); q != "" {
			return searchScript(q)
		}
		return askScript("What should I search for? Try, for example: “Search the pages for refund.”")
	case reTime.MatchString(p):
		return timeScript()
	case reList.MatchString(p):
		return listScript()
	}
	return unknownScript()
}

// withPage builds a script for the page the prompt names. A page that is
// not one of the seeded ones, or none, is found first (see findPage).
func withPage(p, verb string, build func(slug string) script) script {
	return findPage(pageIn(p), verb, build)
}

// findPage returns build(slug) for a seeded page. For any other page, or
// none (slug ""), it returns a script that finds the page first: it lists
// the pages and, unless the named one is there, asks the operator which
// page to verb. Without the tools for that it does what it did before
// ask_operator existed: it tries the named page, or asks in its answer.
func findPage(slug, verb string, build func(slug string) script) script {
	if seededPage(slug) {
		return build(slug)
	}
	fallback := askScript("Which page should I " + verb + "? Name it, for example “the pricing page” or “the release notes”.")
	if slug != "" {
		fallback = build(slug)
	}
	return script{find: &finder{slug: slug, verb: verb, build: build, fallback: fallback}}
}

// seededPage reports whether slug is a page of the seeded workspace, which
// the model knows without looking.
func seededPage(slug string) bool {
	for _, a := range pageAliases {
		if a.slug == slug {
			return true
		}
	}
	return false
}

// normalise lower-cases a prompt and straightens its apostrophes.
func normalise(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.NewReplacer("’", "'", "‘", "'").Replace(s)
}

// pageIn returns the slug of the page a prompt names, or "".
func pageIn(p string) string {
	best, at := "", len(p)+1
	for _, a := range pageAliases {
		if loc := a.re.FindStringIndex(p); loc != nil && loc[0] < at {
			best, at = a.slug, loc[0]
		}
	}
	if best != "" {
		return best
	}
	if m := reQuotedSlug.FindStringSubmatch(p); m != nil {
		return m[1]
	}
	if m := reDashedSlug.FindString(p); m != "" {
		return m
	}
	if m := reNamedPage.FindStringSubmatch(p); m != nil {
		words := strings.Fields(m[1])
		// "the price on the offers page" names the page "offers".
		for i := len(words) - 1; i >= 0; i-- {
			if isLink(words[i]) {
				words = words[i+1:]
				break
			}
		}
		for len(words) > 0 && isFiller(words[0]) {
			words = words[1:]
		}
		if len(words) > 0 {
			return slugify(strings.Join(words, " "))
		}
	}
	return ""
}

// isFiller reports whether w is a word that does not name anything.
func isFiller(w string) bool {
	switch w {
	case "the", "a", "an", "our", "my", "this", "that", "new", "whole", "entire", "current", "same", "one", "all", "every", "each", "draft":
		return true
	}
	return false
}

// isLink reports whether w joins words rather than names a page: an
// article or a preposition.
func isLink(w string) bool {
	switch w {
	case "the", "on", "of", "in", "to", "for", "from", "at", "into", "onto":
		return true
	}
	return false
}

// createTopic returns what the page to create is about: "winter sale" for
// "create a page announcing the winter sale, then publish it".
func createTopic(p string) string {
	loc := reCreate.FindStringIndex(p)
	m := reTopic.FindStringSubmatch(p[loc[1]:])
	if m == nil {
		return "announcement"
	}
	topic := m[1]
	if cut := reClause.FindStringIndex(topic); cut != nil {
		topic = topic[:cut[0]]
	}
	words := strings.Fields(topic)
	for len(words) > 0 && isFiller(words[0]) {
		words = words[1:]
	}
	if n := len(words); n > 0 && (words[n-1] == "page" || words[n-1] == "pages") {
		words = words[:n-1]
	}
	if len(words) > 6 {
		words = words[:6]
	}
	if len(words) == 0 || slugify(strings.Join(words, " ")) == "" {
		return "announcement"
	}
	return strings.Join(words, " ")
}

// searchQuery returns what to search for: "refund" for "search the pages
// for refund.".
func searchQuery(p string) string {
	loc := reSearch.FindStringIndex(p)
	rest := p[loc[0]:]
	var q string
	if m := reQuery.FindStringSubmatch(rest); m != nil {
		q = m[1]
	} else if m := reSearchQ.FindStringSubmatch(rest); m != nil {
		q = m[1]
	}
	q = strings.TrimSpace(strings.TrimRight(q, ".?! "))
	for _, filler := range []string{"the word ", "the term ", "the phrase ", "pages about ", "pages that mention ", "mentions of ", "the text "} {
		q = strings.TrimPrefix(q, filler)
	}
	return strings.TrimSpace(strings.Trim(q, `"'“”‘’`+"`"))
}

// slugify turns words into a page slug: lower-case a-z, 0-9 and single
// dashes, at most 64 characters.
func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		default:
			dash = true
		}
		if b.Len() >= 60 {
			break
		}
	}
	return b.String()
}

// sentenceCase capitalises the first letter: "Winter sale".
func sentenceCase(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}
