package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Page is one page of the demo workspace.
type Page struct {
	Slug      string
	Title     string
	Body      string
	Status    string
	UpdatedAt time.Time
}

// The statuses of a page. A page is created as a draft and published once.
const (
	StatusDraft     = "draft"
	StatusPublished = "published"
)

// Errors of the workspace. Implementations may wrap them; callers test with
// errors.Is.
var (
	// ErrPageNotFound is returned for a slug that names no page.
	ErrPageNotFound = errors.New("page not found")
	// ErrPageExists refuses to create a page whose slug is taken.
	ErrPageExists = errors.New("page already exists")
	// ErrInvalidPage refuses a bad slug or an empty title.
	ErrInvalidPage = errors.New("invalid page")
)

// maxSlugLen bounds a slug; see ValidSlug.
const maxSlugLen = 64

// ValidSlug reports whether s is a valid page slug: 1 to 64 characters of
// lower-case a-z, 0-9 and '-'.
func ValidSlug(s string) bool {
	if len(s) == 0 || len(s) > maxSlugLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// ValidatePage checks the slug and title of p and returns an error wrapping
// ErrInvalidPage if either is bad: the slug must pass ValidSlug and the title
// must be neither blank nor span lines. Every Workspace applies these rules.
func ValidatePage(p Page) error {
	if !ValidSlug(p.Slug) {
		return slugError(p.Slug)
	}
	return validateTitle(p.Title)
}

func slugError(slug string) error {
	return fmt.Errorf("%w: slug %q must be 1 to %d characters of a-z, 0-9 and -", ErrInvalidPage, slug, maxSlugLen)
}

func validateTitle(title string) error {
	if strings.TrimSpace(title) == "" {
		return fmt.Errorf("%w: title must not be empty", ErrInvalidPage)
	}
	if strings.ContainsAny(title, "\r\n") {
		return fmt.Errorf("%w: title must be a single line", ErrInvalidPage)
	}
	return nil
}

// notFoundError says which page was not found; it matches ErrPageNotFound.
type notFoundError struct{ slug string }

func (e *notFoundError) Error() string { return fmt.Sprintf("page %q not found", e.slug) }
func (e *notFoundError) Unwrap() error { return ErrPageNotFound }

// existsError says which page already exists; it matches ErrPageExists.
type existsError struct{ slug string }

func (e *existsError) Error() string { return fmt.Sprintf("page %q already exists", e.slug) }
func (e *existsError) Unwrap() error { return ErrPageExists }

// pageError turns the not-found and exists errors of any Workspace into the
// plain sentence a model reads, keeping them testable with errors.Is.
func pageError(slug string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrPageNotFound):
		return &notFoundError{slug: slug}
	case errors.Is(err, ErrPageExists):
		return &existsError{slug: slug}
	}
	return err
}

// Workspace is the store of pages the tools act on. Package store implements
// it on SQLite; Memory implements it in memory.
type Workspace interface {
	// ListPages returns every page ordered by slug.
	ListPages(ctx context.Context) ([]Page, error)
	// GetPage returns one page, or an error wrapping ErrPageNotFound.
	GetPage(ctx context.Context, slug string) (Page, error)
	// SearchPages returns the pages whose title or body contains query,
	// ignoring case, ordered by slug.
	SearchPages(ctx context.Context, query string) ([]Page, error)
	// CreatePage stores p as a draft and returns it as stored. It refuses
	// a taken slug with ErrPageExists and a bad page with ErrInvalidPage.
	CreatePage(ctx context.Context, p Page) (Page, error)
	// UpdatePage changes the title and/or body of a page; nil leaves a
	// field unchanged. The status is kept.
	UpdatePage(ctx context.Context, slug string, title, body *string) (Page, error)
	// PublishPage sets a page's status to published; publishing a
	// published page changes nothing.
	PublishPage(ctx context.Context, slug string) (Page, error)
	// DeletePage removes a page.
	DeletePage(ctx context.Context, slug string) error
}
