package tools

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// maxSnippet bounds the snippet of a search hit, in characters.
const maxSnippet = 160

// timestamp formats t as the tools' results show times: RFC 3339 in UTC.
func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func listPages(ws Workspace) *tool {
	type item struct {
		Slug      string `json:"slug"`
		Title     string `json:"title"`
		Status    string `json:"status"`
		UpdatedAt string `json:"updated_at"`
	}
	return newTool("list_pages",
		"List every page of the workspace with its slug, title, status (draft or published) and last update.",
		nil,
		func(ctx context.Context, _ args) (string, error) {
			pages, err := ws.ListPages(ctx)
			if err != nil {
				return "", err
			}
			items := make([]item, 0, len(pages))
			for _, p := range pages {
				items = append(items, item{p.Slug, p.Title, p.Status, timestamp(p.UpdatedAt)})
			}
			return compact(items)
		})
}

func getPage(ws Workspace) *tool {
	type result struct {
		Slug      string `json:"slug"`
		Title     string `json:"title"`
		Body      string `json:"body"`
		Status    string `json:"status"`
		UpdatedAt string `json:"updated_at"`
	}
	return newTool("get_page",
		"Read one page: its title, body, status and last update.",
		[]param{slugParam},
		func(ctx context.Context, a args) (string, error) {
			slug, err := slugArg(a)
			if err != nil {
				return "", err
			}
			p, err := ws.GetPage(ctx, slug)
			if err != nil {
				return "", pageError(slug, err)
			}
			return compact(result{p.Slug, p.Title, p.Body, p.Status, timestamp(p.UpdatedAt)})
		})
}

func searchPages(ws Workspace) *tool {
	type hit struct {
		Slug    string `json:"slug"`
		Title   string `json:"title"`
		Snippet string `json:"snippet"`
	}
	return newTool("search_pages",
		"Search the titles and bodies of all pages for some text, ignoring case. Returns each matching page with the line that matched.",
		[]param{{name: "query", description: "The text to look for.", required: true}},
		func(ctx context.Context, a args) (string, error) {
			query := strings.TrimSpace(a.str("query"))
			if query == "" {
				return "", fmt.Errorf("%w: query must not be empty", ErrInvalidArguments)
			}
			pages, err := ws.SearchPages(ctx, query)
			if err != nil {
				return "", err
			}
			hits := make([]hit, 0, len(pages))
			for _, p := range pages {
				hits = append(hits, hit{p.Slug, p.Title, snippet(p, query)})
			}
			return compact(hits)
		})
}

// snippet returns the first body line of p that contains query, ignoring
// case, trimmed and clipped around the match; the title if no line does.
func snippet(p Page, query string) string {
	q := strings.ToLower(query)
	for _, line := range strings.Split(p.Body, "\n") {
		line = strings.TrimSpace(line)
		if strings.Contains(strings.ToLower(line), q) {
			return clip(line, q, maxSnippet)
		}
	}
	return clip(strings.TrimSpace(p.Title), q, maxSnippet)
}

// clip shortens line to at most limit characters, keeping the first match of
// the lower-case query in view and marking each cut with "…".
func clip(line, lowerQuery string, limit int) string {
	r := []rune(line)
	if len(r) <= limit {
		return line
	}
	// strings.ToLower maps rune by rune, so its rune indexes agree with r.
	lower := strings.ToLower(line)
	at := 0
	if i := strings.Index(lower, lowerQuery); i > 0 {
		at = utf8.RuneCountInString(lower[:i])
	}
	end := at + utf8.RuneCountInString(lowerQuery)
	budget := limit - 2
	start := at - budget/4 // the match a quarter in, with context before it
	switch {
	case end <= limit-1 || start <= 0:
		return string(r[:limit-1]) + "…"
	case start+budget >= len(r)-1:
		return "…" + string(r[len(r)-(limit-1):])
	}
	return "…" + string(r[start:start+budget]) + "…"
}

func wordCount(ws Workspace) *tool {
	type result struct {
		Slug  string `json:"slug"`
		Words int    `json:"words"`
	}
	return newTool("word_count",
		"Count the words in the body of one page.",
		[]param{slugParam},
		func(ctx context.Context, a args) (string, error) {
			slug, err := slugArg(a)
			if err != nil {
				return "", err
			}
			p, err := ws.GetPage(ctx, slug)
			if err != nil {
				return "", pageError(slug, err)
			}
			return compact(result{p.Slug, words(p.Body)})
		})
}

// words counts the words of s as runs of non-space characters.
func words(s string) int { return len(strings.Fields(s)) }

func currentTime(now func() time.Time) *tool {
	return newTool("current_time",
		"Tell the current date and time, in UTC.",
		nil,
		func(context.Context, args) (string, error) {
			return compact(struct {
				Time string `json:"time"`
			}{timestamp(now())})
		})
}
