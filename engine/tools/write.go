package tools

import (
	"context"
	"errors"
	"fmt"
)

// pageResult is what create_page, update_page and publish_page return.
type pageResult struct {
	Slug   string `json:"slug"`
	Title  string `json:"title"`
	Status string `json:"status"`
}

func resultOf(p Page) (string, error) { return compact(pageResult{p.Slug, p.Title, p.Status}) }

var (
	titleParam = param{name: "title", description: "The page's title, one line.", required: true}
	bodyParam  = param{name: "body", description: "The page's body, as Markdown.", required: true}
)

// optional returns a copy of p that may be left out.
func optional(p param, description string) param {
	p.required = false
	p.description = description
	return p
}

func createPage(ws Workspace) *writeTool {
	newPage := func(a args) (Page, error) {
		slug, err := slugArg(a)
		if err != nil {
			return Page{}, err
		}
		p := Page{Slug: slug, Title: a.str("title"), Body: a.str("body")}
		return p, ValidatePage(p)
	}
	return &writeTool{
		tool: newTool("create_page",
			"Create a new page as a draft. Requires a person's approval.",
			[]param{slugParam, titleParam, bodyParam},
			func(ctx context.Context, a args) (string, error) {
				p, err := newPage(a)
				if err != nil {
					return "", err
				}
				p, err = ws.CreatePage(ctx, p)
				if err != nil {
					return "", pageError(a.str("slug"), err)
				}
				return resultOf(p)
			}),
		preview: func(ctx context.Context, a args) ([]string, error) {
			p, err := newPage(a)
			if err != nil {
				return nil, err
			}
			switch _, err := ws.GetPage(ctx, p.Slug); {
			case err == nil:
				return nil, &existsError{slug: p.Slug}
			case !errors.Is(err, ErrPageNotFound):
				return nil, err
			}
			lines := []string{fmt.Sprintf("+ new page %s %q", p.Slug, p.Title)}
			return append(lines, prefixed("+ ", splitLines(p.Body))...), nil
		},
	}
}

// prefixed returns lines each with prefix, showing at most maxDiffLines of
// them and then how many more there are.
func prefixed(prefix string, lines []string) []string {
	out := make([]string, 0, min(len(lines), maxDiffLines)+1)
	for i, l := range lines {
		if i == maxDiffLines {
			out = append(out, fmt.Sprintf("@@ %s more @@", plural(len(lines)-i, "line")))
			break
		}
		out = append(out, prefix+l)
	}
	return out
}

func updatePage(ws Workspace) *writeTool {
	params := []param{
		slugParam,
		optional(titleParam, "The new title, one line; leave out to keep the title."),
		optional(bodyParam, "The new body, as Markdown, replacing the whole body; leave out to keep the body."),
	}
	check := func(a args) (string, error) {
		slug, err := slugArg(a)
		if err != nil {
			return "", err
		}
		if a.opt("title") == nil && a.opt("body") == nil {
			return "", fmt.Errorf("%w: give a title, a body or both", ErrInvalidArguments)
		}
		if t := a.opt("title"); t != nil {
			if err := validateTitle(*t); err != nil {
				return "", err
			}
		}
		return slug, nil
	}
	return &writeTool{
		tool: newTool("update_page",
			"Change the title and/or the body of a page; the status is kept, so a published page changes live. Requires a person's approval.",
			params,
			func(ctx context.Context, a args) (string, error) {
				slug, err := check(a)
				if err != nil {
					return "", err
				}
				p, err := ws.UpdatePage(ctx, slug, a.opt("title"), a.opt("body"))
				if err != nil {
					return "", pageError(slug, err)
				}
				return resultOf(p)
			}),
		preview: func(ctx context.Context, a args) ([]string, error) {
			slug, err := check(a)
			if err != nil {
				return nil, err
			}
			p, err := ws.GetPage(ctx, slug)
			if err != nil {
				return nil, pageError(slug, err)
			}
			var lines []string
			if t := a.opt("title"); t != nil && *t != p.Title {
				lines = append(lines, "- title: "+p.Title, "+ title: "+*t)
			} else {
				lines = append(lines, "  title: "+p.Title)
			}
			if b := a.opt("body"); b != nil {
				return append(lines, diffLines(splitLines(p.Body), splitLines(*b))...), nil
			}
			return append(lines, "  (body unchanged)"), nil
		},
	}
}

func publishPage(ws Workspace) *writeTool {
	return &writeTool{
		tool: newTool("publish_page",
			"Publish a draft page so that everyone can read it. Requires a person's approval.",
			[]param{slugParam},
			func(ctx context.Context, a args) (string, error) {
				slug, err := slugArg(a)
				if err != nil {
					return "", err
				}
				p, err := ws.PublishPage(ctx, slug)
				if err != nil {
					return "", pageError(slug, err)
				}
				return resultOf(p)
			}),
		preview: func(ctx context.Context, a args) ([]string, error) {
			slug, err := slugArg(a)
			if err != nil {
				return nil, err
			}
			p, err := ws.GetPage(ctx, slug)
			if err != nil {
				return nil, pageError(slug, err)
			}
			if p.Status == StatusPublished {
				return []string{fmt.Sprintf("publish %s: already published, nothing changes", slug)}, nil
			}
			return []string{fmt.Sprintf("publish %s: %s -> %s", slug, p.Status, StatusPublished)}, nil
		},
	}
}

func deletePage(ws Workspace) *writeTool {
	return &writeTool{
		tool: newTool("delete_page",
			"Delete a page for good. Requires a person's approval.",
			[]param{slugParam},
			func(ctx context.Context, a args) (string, error) {
				slug, err := slugArg(a)
				if err != nil {
					return "", err
				}
				if err := ws.DeletePage(ctx, slug); err != nil {
					return "", pageError(slug, err)
				}
				return compact(struct {
					Deleted string `json:"deleted"`
				}{slug})
			}),
		preview: func(ctx context.Context, a args) ([]string, error) {
			slug, err := slugArg(a)
			if err != nil {
				return nil, err
			}
			p, err := ws.GetPage(ctx, slug)
			if err != nil {
				return nil, pageError(slug, err)
			}
			return []string{fmt.Sprintf("- delete page %s %q (%d words)", p.Slug, p.Title, words(p.Body))}, nil
		},
	}
}
