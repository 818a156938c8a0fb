package tools

import (
	"errors"
	"strings"
	"testing"
)

func TestValidSlug(t *testing.T) {
	tests := []struct {
		slug string
		want bool
	}{
		{"welcome", true},
		{"release-notes", true},
		{"v1-2", true},
		{"a", true},
		{"-", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"Welcome", false},
		{"two words", false},
		{"under_score", false},
		{"dot.page", false},
		{"slash/page", false},
		{"café", false},
		{" welcome", false},
	}
	for _, tt := range tests {
		if got := ValidSlug(tt.slug); got != tt.want {
			t.Errorf("ValidSlug(%q) = %v, want %v", tt.slug, got, tt.want)
		}
	}
}

func TestValidatePage(t *testing.T) {
	tests := []struct {
		name string
		page Page
		ok   bool
	}{
		{"valid", Page{Slug: "new", Title: "New"}, true},
		{"empty body is fine", Page{Slug: "new", Title: "New", Body: ""}, true},
		{"bad slug", Page{Slug: "New Page", Title: "New"}, false},
		{"empty title", Page{Slug: "new", Title: ""}, false},
		{"blank title", Page{Slug: "new", Title: "  \t"}, false},
		{"two-line title", Page{Slug: "new", Title: "New\npage"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidatePage(tt.page)
			if tt.ok {
				if err != nil {
					t.Fatalf("ValidatePage: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidPage) {
				t.Fatalf("ValidatePage = %v, want ErrInvalidPage", err)
			}
		})
	}
}

func TestSeedPages(t *testing.T) {
	pages := SeedPages()
	want := map[string]string{
		"welcome":          StatusPublished,
		"pricing":          StatusPublished,
		"about":            StatusDraft,
		"faq":              StatusPublished,
		"release-notes":    StatusDraft,
		"old-announcement": StatusDraft,
	}
	if len(pages) != len(want) {
		t.Fatalf("got %d pages, want %d", len(pages), len(want))
	}
	for _, p := range pages {
		status, ok := want[p.Slug]
		if !ok {
			t.Errorf("unexpected page %q", p.Slug)
			continue
		}
		if p.Status != status {
			t.Errorf("%s: status %q, want %q", p.Slug, p.Status, status)
		}
		if err := ValidatePage(p); err != nil {
			t.Errorf("%s: %v", p.Slug, err)
		}
		if p.UpdatedAt.IsZero() {
			t.Errorf("%s: no UpdatedAt", p.Slug)
		}
		if n := len(splitLines(p.Body)); n < 5 || n > 15 {
			t.Errorf("%s: %d body lines, want 5 to 15", p.Slug, n)
		}
	}
	bodies := make(map[string]string)
	for _, p := range pages {
		bodies[p.Slug] = p.Body
	}
	for slug, text := range map[string]string{
		"pricing":       "The Team plan costs $10 per seat per month",
		"faq":           "refund within 30 days",
		"release-notes": "1.2",
	} {
		if !strings.Contains(bodies[slug], text) {
			t.Errorf("%s does not mention %q", slug, text)
		}
	}
	// The seed is a fresh copy each time.
	pages[0].Title = "changed"
	if SeedPages()[0].Title == "changed" {
		t.Error("SeedPages shares its slice")
	}
}
