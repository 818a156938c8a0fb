package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Memory is a Workspace held in memory and safe for concurrent use. Tests and
// the demo use it; it counts its successful writes so a test can prove that a
// side effect ran once, or never.
type Memory struct {
	now func() time.Time

	mu     sync.Mutex
	pages  map[string]Page
	writes int
}

var _ Workspace = (*Memory)(nil)

// NewMemory returns a Memory holding pages. now stamps UpdatedAt on writes
// and on given pages that have none; nil means time.Now. A page without a
// status is a draft. NewMemory panics on a page that fails ValidatePage or a
// repeated slug, since either is a mistake in the caller's fixture.
func NewMemory(now func() time.Time, pages ...Page) *Memory {
	if now == nil {
		now = time.Now
	}
	m := &Memory{now: now, pages: make(map[string]Page, len(pages))}
	for _, p := range pages {
		if err := ValidatePage(p); err != nil {
			panic(fmt.Sprintf("tools: NewMemory: %v", err))
		}
		if _, ok := m.pages[p.Slug]; ok {
			panic(fmt.Sprintf("tools: NewMemory: repeated slug %q", p.Slug))
		}
		if p.Status == "" {
			p.Status = StatusDraft
		}
		if p.UpdatedAt.IsZero() {
			p.UpdatedAt = now()
		}
		m.pages[p.Slug] = p
	}
	return m
}

// Writes returns how many create, update, publish and delete calls have
// succeeded.
func (m *Memory) Writes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writes
}

// ListPages returns every page ordered by slug.
func (m *Memory) ListPages(ctx context.Context) ([]Page, error) {
	return m.filter(ctx, func(Page) bool { return true })
}

// GetPage returns the page named by slug.
func (m *Memory) GetPage(ctx context.Context, slug string) (Page, error) {
	if err := ctx.Err(); err != nil {
		return Page{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pages[slug]
	if !ok {
		return Page{}, &notFoundError{slug: slug}
	}
	return p, nil
}

// SearchPages returns the pages whose title or body contains query, ignoring
// case, ordered by slug.
func (m *Memory) SearchPages(ctx context.Context, query string) ([]Page, error) {
	q := strings.ToLower(query)
	return m.filter(ctx, func(p Page) bool {
		return strings.Contains(strings.ToLower(p.Title), q) || strings.Contains(strings.ToLower(p.Body), q)
	})
}

func (m *Memory) filter(ctx context.Context, keep func(Page) bool) ([]Page, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	pages := make([]Page, 0, len(m.pages))
	for _, p := range m.pages {
		if keep(p) {
			pages = append(pages, p)
		}
	}
	slices.SortFunc(pages, func(a, b Page) int { return strings.Compare(a.Slug, b.Slug) })
	return pages, nil
}

// CreatePage stores p as a draft and returns it as stored.
func (m *Memory) CreatePage(ctx context.Context, p Page) (Page, error) {
	if err := ctx.Err(); err != nil {
		return Page{}, err
	}
	if err := ValidatePage(p); err != nil {
		return Page{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pages[p.Slug]; ok {
		return Page{}, &existsError{slug: p.Slug}
	}
	p.Status = StatusDraft
	p.UpdatedAt = m.now()
	m.pages[p.Slug] = p
	m.writes++
	return p, nil
}

// UpdatePage changes the title and/or body of a page; nil leaves a field
// unchanged.
func (m *Memory) UpdatePage(ctx context.Context, slug string, title, body *string) (Page, error) {
	if err := ctx.Err(); err != nil {
		return Page{}, err
	}
	if title != nil {
		if err := validateTitle(*title); err != nil {
			return Page{}, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pages[slug]
	if !ok {
		return Page{}, &notFoundError{slug: slug}
	}
	if title != nil {
		p.Title = *title
	}
	if body != nil {
		p.Body = *body
	}
	p.UpdatedAt = m.now()
	m.pages[slug] = p
	m.writes++
	return p, nil
}

// PublishPage sets a page's status to published. Publishing a published page
// changes nothing but still counts as a write call.
func (m *Memory) PublishPage(ctx context.Context, slug string) (Page, error) {
	if err := ctx.Err(); err != nil {
		return Page{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pages[slug]
	if !ok {
		return Page{}, &notFoundError{slug: slug}
	}
	if p.Status != StatusPublished {
		p.Status = StatusPublished
		p.UpdatedAt = m.now()
		m.pages[slug] = p
	}
	m.writes++
	return p, nil
}

// DeletePage removes a page.
func (m *Memory) DeletePage(ctx context.Context, slug string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pages[slug]; !ok {
		return &notFoundError{slug: slug}
	}
	delete(m.pages, slug)
	m.writes++
	return nil
}
