package tools

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func ptr(s string) *string { return &s }

func slugs(pages []Page) []string {
	out := make([]string, 0, len(pages))
	for _, p := range pages {
		out = append(out, p.Slug)
	}
	return out
}

func TestMemoryListIsOrderedBySlug(t *testing.T) {
	ws := NewMemory(fixedNow, SeedPages()...)
	pages, err := ws.ListPages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(slugs(pages))
	want := "[about faq old-announcement pricing release-notes welcome]"
	if got != want {
		t.Fatalf("ListPages = %s, want %s", got, want)
	}
}

func TestMemorySearchPages(t *testing.T) {
	ws := NewMemory(fixedNow, SeedPages()...)
	tests := []struct {
		query string
		want  string
	}{
		{"refund", "[faq]"},
		{"REFUND", "[faq]"},
		{"ReFuNd WiThIn", "[faq]"},
		{"team PLAN", "[pricing]"},
		{"pricing", "[pricing]"}, // title only
		{"holiday support", "[old-announcement]"},
		{"acme notes", "[about faq old-announcement pricing welcome]"},
		{"no such text", "[]"},
	}
	for _, tt := range tests {
		pages, err := ws.SearchPages(context.Background(), tt.query)
		if err != nil {
			t.Fatalf("SearchPages(%q): %v", tt.query, err)
		}
		if got := fmt.Sprint(slugs(pages)); got != tt.want {
			t.Errorf("SearchPages(%q) = %s, want %s", tt.query, got, tt.want)
		}
	}
}

func TestMemoryWrites(t *testing.T) {
	ctx := context.Background()
	later := clock.Add(time.Hour)
	now := clock
	ws := NewMemory(func() time.Time { return now }, SeedPages()...)
	now = later

	steps := []struct {
		name    string
		do      func() error
		wantErr error
		writes  int
	}{
		{"create", func() error {
			p, err := ws.CreatePage(ctx, Page{Slug: "sale", Title: "Winter sale", Body: "Half price.", Status: StatusPublished})
			if err == nil && (p.Status != StatusDraft || !p.UpdatedAt.Equal(later)) {
				return fmt.Errorf("created %+v, want a draft stamped %v", p, later)
			}
			return err
		}, nil, 1},
		{"create taken slug", func() error {
			_, err := ws.CreatePage(ctx, Page{Slug: "sale", Title: "Again"})
			return err
		}, ErrPageExists, 1},
		{"create bad slug", func() error {
			_, err := ws.CreatePage(ctx, Page{Slug: "Winter Sale", Title: "Winter sale"})
			return err
		}, ErrInvalidPage, 1},
		{"create empty title", func() error {
			_, err := ws.CreatePage(ctx, Page{Slug: "sale-2", Title: " "})
			return err
		}, ErrInvalidPage, 1},
		{"update body", func() error {
			p, err := ws.UpdatePage(ctx, "pricing", nil, ptr("New body"))
			if err == nil && (p.Title != "Pricing" || p.Body != "New body" || p.Status != StatusPublished) {
				return fmt.Errorf("updated %+v", p)
			}
			return err
		}, nil, 2},
		{"update title", func() error {
			p, err := ws.UpdatePage(ctx, "pricing", ptr("Plans"), nil)
			if err == nil && (p.Title != "Plans" || p.Body != "New body") {
				return fmt.Errorf("updated %+v", p)
			}
			return err
		}, nil, 3},
		{"update empty title", func() error {
			_, err := ws.UpdatePage(ctx, "pricing", ptr(""), nil)
			return err
		}, ErrInvalidPage, 3},
		{"update missing", func() error {
			_, err := ws.UpdatePage(ctx, "nope", ptr("x"), nil)
			return err
		}, ErrPageNotFound, 3},
		{"publish", func() error {
			p, err := ws.PublishPage(ctx, "about")
			if err == nil && p.Status != StatusPublished {
				return fmt.Errorf("published %+v", p)
			}
			return err
		}, nil, 4},
		{"publish missing", func() error {
			_, err := ws.PublishPage(ctx, "nope")
			return err
		}, ErrPageNotFound, 4},
		{"delete", func() error { return ws.DeletePage(ctx, "old-announcement") }, nil, 5},
		{"delete again", func() error { return ws.DeletePage(ctx, "old-announcement") }, ErrPageNotFound, 5},
		{"get deleted", func() error {
			_, err := ws.GetPage(ctx, "old-announcement")
			return err
		}, ErrPageNotFound, 5},
	}
	for _, s := range steps {
		err := s.do()
		if s.wantErr == nil && err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if s.wantErr != nil && !errors.Is(err, s.wantErr) {
			t.Fatalf("%s: err = %v, want %v", s.name, err, s.wantErr)
		}
		if got := ws.Writes(); got != s.writes {
			t.Fatalf("%s: Writes() = %d, want %d", s.name, got, s.writes)
		}
	}
}

func TestMemoryNotFoundMessage(t *testing.T) {
	ws := NewMemory(fixedNow)
	_, err := ws.GetPage(context.Background(), "x")
	if err == nil || err.Error() != `page "x" not found` {
		t.Fatalf("err = %v", err)
	}
}

func TestMemoryCancelledContext(t *testing.T) {
	ws := NewMemory(fixedNow, SeedPages()...)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ws.CreatePage(ctx, Page{Slug: "x", Title: "X"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("CreatePage = %v, want context.Canceled", err)
	}
	if err := ws.DeletePage(ctx, "about"); !errors.Is(err, context.Canceled) {
		t.Fatalf("DeletePage = %v, want context.Canceled", err)
	}
	if ws.Writes() != 0 {
		t.Fatalf("Writes() = %d after cancelled calls", ws.Writes())
	}
}

func TestNewMemoryDefaults(t *testing.T) {
	ws := NewMemory(fixedNow, Page{Slug: "a", Title: "A"})
	p := page(t, ws, "a")
	if p.Status != StatusDraft || !p.UpdatedAt.Equal(clock) {
		t.Fatalf("page = %+v, want a draft stamped now", p)
	}
}

func TestNewMemoryPanicsOnBadFixture(t *testing.T) {
	for name, pages := range map[string][]Page{
		"bad slug": {{Slug: "A", Title: "A"}},
		"repeated": {{Slug: "a", Title: "A"}, {Slug: "a", Title: "B"}},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("NewMemory did not panic")
				}
			}()
			NewMemory(fixedNow, pages...)
		})
	}
}

func TestMemoryConcurrentWrites(t *testing.T) {
	ws := NewMemory(nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			slug := fmt.Sprintf("p-%d", i)
			if _, err := ws.CreatePage(ctx, Page{Slug: slug, Title: slug}); err != nil {
				t.Error(err)
			}
			if _, err := ws.PublishPage(ctx, slug); err != nil {
				t.Error(err)
			}
			if _, err := ws.ListPages(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := ws.Writes(); got != 40 {
		t.Fatalf("Writes() = %d, want 40", got)
	}
}
