package store

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"countersign/engine/tools"
)

func slugs(pages []tools.Page) []string {
	s := make([]string, len(pages))
	for i, p := range pages {
		s[i] = p.Slug
	}
	return s
}

func ptr(s string) *string { return &s }

func TestPages(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	ps := db.Pages()
	revisions := func() int {
		t.Helper()
		n, err := ps.Revisions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	created, err := ps.CreatePage(ctx, tools.Page{Slug: "pricing", Title: "Pricing", Body: "Team costs $10.", Status: tools.StatusPublished})
	if err != nil {
		t.Fatal(err)
	}
	want := tools.Page{Slug: "pricing", Title: "Pricing", Body: "Team costs $10.", Status: tools.StatusDraft, UpdatedAt: t0}
	if created != want {
		t.Fatalf("created = %+v, want %+v (always a draft)", created, want)
	}
	if got, err := ps.GetPage(ctx, "pricing"); err != nil || got != want {
		t.Fatalf("get = %+v, %v", got, err)
	}
	if _, err := ps.CreatePage(ctx, tools.Page{Slug: "about", Title: "About Café", Body: "ÜBER uns"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.CreatePage(ctx, tools.Page{Slug: "faq", Title: "FAQ", Body: "50% off_today"}); err != nil {
		t.Fatal(err)
	}
	if n := revisions(); n != 3 {
		t.Fatalf("revisions = %d, want 3", n)
	}

	t.Run("refusals change nothing", func(t *testing.T) {
		tests := []struct {
			name string
			call func() error
			want error
		}{
			{"create taken slug", func() error {
				_, err := ps.CreatePage(ctx, tools.Page{Slug: "pricing", Title: "Again"})
				return err
			}, tools.ErrPageExists},
			{"create bad slug", func() error {
				_, err := ps.CreatePage(ctx, tools.Page{Slug: "Bad Slug", Title: "x"})
				return err
			}, tools.ErrInvalidPage},
			{"create blank title", func() error {
				_, err := ps.CreatePage(ctx, tools.Page{Slug: "blank", Title: "  "})
				return err
			}, tools.ErrInvalidPage},
			{"update multi-line title", func() error {
				_, err := ps.UpdatePage(ctx, "pricing", ptr("a\nb"), nil)
				return err
			}, tools.ErrInvalidPage},
			{"get unknown", func() error { _, err := ps.GetPage(ctx, "nope"); return err }, tools.ErrPageNotFound},
			{"update unknown", func() error { _, err := ps.UpdatePage(ctx, "nope", nil, ptr("x")); return err }, tools.ErrPageNotFound},
			{"update bad slug", func() error { _, err := ps.UpdatePage(ctx, "NOPE", nil, ptr("x")); return err }, tools.ErrPageNotFound},
			{"publish unknown", func() error { _, err := ps.PublishPage(ctx, "nope"); return err }, tools.ErrPageNotFound},
			{"delete unknown", func() error { return ps.DeletePage(ctx, "nope") }, tools.ErrPageNotFound},
		}
		for _, tt := range tests {
			if err := tt.call(); !errors.Is(err, tt.want) {
				t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
			}
		}
		if n := revisions(); n != 3 {
			t.Errorf("revisions = %d after refusals, want 3", n)
		}
	})

	t.Run("list and search", func(t *testing.T) {
		all, err := ps.ListPages(ctx)
		if err != nil || !slices.Equal(slugs(all), []string{"about", "faq", "pricing"}) {
			t.Fatalf("list = %v, %v", slugs(all), err)
		}
		for _, tt := range []struct {
			query string
			want  []string
		}{
			{"pricing", []string{"pricing"}},
			{"$10", []string{"pricing"}},
			{"CAFÉ", []string{"about"}},
			{"über", []string{"about"}},
			{"%", []string{"faq"}},
			{"_", []string{"faq"}},
			{"", []string{"about", "faq", "pricing"}},
			{"nothing like it", []string{}},
		} {
			got, err := ps.SearchPages(ctx, tt.query)
			if err != nil || !slices.Equal(slugs(got), tt.want) {
				t.Errorf("search %q = %v, %v; want %v", tt.query, slugs(got), err, tt.want)
			}
		}
	})

	t.Run("update, publish, delete", func(t *testing.T) {
		later := t0.Add(time.Hour)
		db.now = func() time.Time { return later }
		defer func() { db.now = func() time.Time { return t0 } }()

		p, err := ps.UpdatePage(ctx, "pricing", nil, ptr("Team costs $12."))
		if err != nil || p.Title != "Pricing" || p.Body != "Team costs $12." || !p.UpdatedAt.Equal(later) {
			t.Fatalf("update body = %+v, %v", p, err)
		}
		p, err = ps.PublishPage(ctx, "pricing")
		if err != nil || p.Status != tools.StatusPublished {
			t.Fatalf("publish = %+v, %v", p, err)
		}
		db.now = func() time.Time { return later.Add(time.Hour) }
		p, err = ps.PublishPage(ctx, "pricing")
		if err != nil || p.Status != tools.StatusPublished || !p.UpdatedAt.Equal(later) {
			t.Fatalf("publish again = %+v, %v; want unchanged", p, err)
		}
		p, err = ps.UpdatePage(ctx, "pricing", ptr("Plans"), nil)
		if err != nil || p.Title != "Plans" || p.Body != "Team costs $12." || p.Status != tools.StatusPublished {
			t.Fatalf("update title = %+v, %v; want status kept", p, err)
		}
		if err := ps.DeletePage(ctx, "faq"); err != nil {
			t.Fatal(err)
		}
		if _, err := ps.GetPage(ctx, "faq"); !errors.Is(err, tools.ErrPageNotFound) {
			t.Fatalf("get deleted: err = %v", err)
		}
		// 3 creates, update, publish, publish, update, delete.
		if n := revisions(); n != 8 {
			t.Errorf("revisions = %d, want 8", n)
		}
		var actions []string
		if err := db.db.Select(&actions, `SELECT action FROM page_revision ORDER BY id`); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(actions, ","); got != "create,create,create,update,publish,publish,update,delete" {
			t.Errorf("actions = %s", got)
		}
	})
}

func TestPagesThroughTheTools(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	ps := db.Pages()
	byName := map[string]interface {
		Call(context.Context, json.RawMessage) (string, error)
	}{}
	for _, tool := range tools.All(ps, func() time.Time { return t0 }) {
		byName[tool.Name()] = tool
	}
	create, ok := byName["create_page"]
	if !ok {
		t.Fatal("no create_page tool")
	}
	args := json.RawMessage(`{"slug":"launch","title":"Launch","body":"We launch on Monday."}`)
	if _, err := create.Call(ctx, args); err != nil {
		t.Fatalf("create_page: %v", err)
	}
	if _, err := create.Call(ctx, args); !errors.Is(err, tools.ErrPageExists) {
		t.Fatalf("create_page again: err = %v, want ErrPageExists", err)
	}
	if n, err := ps.Revisions(ctx); err != nil || n != 1 {
		t.Errorf("revisions = %d, %v; want 1", n, err)
	}
}

func TestSeedPagesOnlyOnFirstStart(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	ps := db.Pages()
	seed := tools.SeedPages()

	if seeded, err := ps.SeedPages(ctx, seed); err != nil || !seeded {
		t.Fatalf("first seed = %v, %v; want true", seeded, err)
	}
	got, err := ps.ListPages(ctx)
	if err != nil || len(got) != len(seed) {
		t.Fatalf("seeded %d pages, %v; want %d", len(got), err, len(seed))
	}
	for _, want := range seed {
		p, err := ps.GetPage(ctx, want.Slug)
		if err != nil || p.Title != want.Title || p.Body != want.Body || p.Status != want.Status || !p.UpdatedAt.Equal(want.UpdatedAt) {
			t.Errorf("seeded %s = %+v, %v", want.Slug, p, err)
		}
	}
	if n, err := ps.Revisions(ctx); err != nil || n != 0 {
		t.Errorf("revisions after seeding = %d, %v; want 0", n, err)
	}
	if seeded, err := ps.SeedPages(ctx, seed); err != nil || seeded {
		t.Fatalf("second seed = %v, %v; want false", seeded, err)
	}
	// A workspace emptied by its users is not seeded again.
	for _, p := range seed {
		if err := ps.DeletePage(ctx, p.Slug); err != nil {
			t.Fatal(err)
		}
	}
	if seeded, err := ps.SeedPages(ctx, seed); err != nil || seeded {
		t.Fatalf("seed after deleting every page = %v, %v; want false", seeded, err)
	}

	bad := newTestDB(t).Pages()
	if _, err := bad.SeedPages(ctx, []tools.Page{{Slug: "ok", Title: "ok"}, {Slug: "Not OK", Title: "x"}}); !errors.Is(err, tools.ErrInvalidPage) {
		t.Fatalf("seed with a bad page: err = %v", err)
	}
	if pages, _ := bad.ListPages(ctx); len(pages) != 0 {
		t.Errorf("a bad seed stored %d pages", len(pages))
	}
}
