package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"

	"countersign/engine/tools"
)

// Pages is the demo workspace on SQLite: the tools.Workspace the built-in
// tools act on. Every write call appends a page_revision row in the same
// transaction, an audit that also lets tests count side effects.
type Pages struct {
	db *DB
}

var _ tools.Workspace = (*Pages)(nil)

// Pages returns the workspace kept in db.
func (db *DB) Pages() *Pages { return &Pages{db: db} }

// pageRow is a row of page as scanned.
type pageRow struct {
	Slug      string `db:"slug"`
	Title     string `db:"title"`
	Body      string `db:"body"`
	Status    string `db:"status"`
	UpdatedAt int64  `db:"updated_at"`
}

func (r pageRow) page() tools.Page {
	return tools.Page{Slug: r.Slug, Title: r.Title, Body: r.Body, Status: r.Status, UpdatedAt: fromMillis(r.UpdatedAt)}
}

// Revision actions.
const (
	actionCreate  = "create"
	actionUpdate  = "update"
	actionPublish = "publish"
	actionDelete  = "delete"
)

// ListPages returns every page ordered by slug.
func (ps *Pages) ListPages(ctx context.Context) ([]tools.Page, error) {
	pages, err := ps.all(ctx)
	if err != nil {
		return nil, fmt.Errorf("list pages: %w", err)
	}
	return pages, nil
}

func (ps *Pages) all(ctx context.Context) ([]tools.Page, error) {
	const q = `SELECT slug, title, body, status, updated_at FROM page ORDER BY slug`
	var rows []pageRow
	if err := ps.db.db.SelectContext(ctx, &rows, q); err != nil {
		return nil, err
	}
	pages := make([]tools.Page, len(rows))
	for i, r := range rows {
		pages[i] = r.page()
	}
	return pages, nil
}

// GetPage returns one page, or an error wrapping tools.ErrPageNotFound.
func (ps *Pages) GetPage(ctx context.Context, slug string) (tools.Page, error) {
	row, err := getPage(ctx, ps.db.db, slug)
	if err != nil {
		return tools.Page{}, fmt.Errorf("get page %q: %w", slug, err)
	}
	return row.page(), nil
}

// SearchPages returns the pages whose title or body contains query, ignoring
// case, ordered by slug. It folds case in Go rather than with SQLite's LIKE,
// which folds ASCII only; the demo workspace is a handful of pages.
func (ps *Pages) SearchPages(ctx context.Context, query string) ([]tools.Page, error) {
	pages, err := ps.all(ctx)
	if err != nil {
		return nil, fmt.Errorf("search pages: %w", err)
	}
	q := strings.ToLower(query)
	found := pages[:0]
	for _, p := range pages {
		if strings.Contains(strings.ToLower(p.Title), q) || strings.Contains(strings.ToLower(p.Body), q) {
			found = append(found, p)
		}
	}
	return found, nil
}

// CreatePage stores p as a draft and returns it as stored. It refuses a taken
// slug with tools.ErrPageExists and a bad page with tools.ErrInvalidPage.
func (ps *Pages) CreatePage(ctx context.Context, p tools.Page) (tools.Page, error) {
	if err := tools.ValidatePage(p); err != nil {
		return tools.Page{}, fmt.Errorf("create page: %w", err)
	}
	const q = `INSERT INTO page (slug, title, body, status, created_at, updated_at)
		VALUES (?, ?, ?, 'draft', ?, ?)
		ON CONFLICT (slug) DO NOTHING
		RETURNING slug, title, body, status, updated_at`
	now := millis(ps.db.now())
	var row pageRow
	err := ps.db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		err := tx.GetContext(ctx, &row, q, p.Slug, p.Title, p.Body, now, now)
		if errors.Is(err, sql.ErrNoRows) {
			return tools.ErrPageExists
		}
		if err != nil {
			return err
		}
		return insertRevision(ctx, tx, actionCreate, row, now)
	})
	if err != nil {
		return tools.Page{}, fmt.Errorf("create page %q: %w", p.Slug, err)
	}
	return row.page(), nil
}

// UpdatePage changes the title and/or body of a page; nil leaves a field
// unchanged. The status is kept and the page counts as updated either way.
func (ps *Pages) UpdatePage(ctx context.Context, slug string, title, body *string) (tools.Page, error) {
	if !tools.ValidSlug(slug) {
		return tools.Page{}, fmt.Errorf("update page %q: %w", slug, tools.ErrPageNotFound)
	}
	if title != nil {
		if err := tools.ValidatePage(tools.Page{Slug: slug, Title: *title}); err != nil {
			return tools.Page{}, fmt.Errorf("update page %q: %w", slug, err)
		}
	}
	const q = `UPDATE page
		SET title = COALESCE(?, title), body = COALESCE(?, body), updated_at = ?
		WHERE slug = ?
		RETURNING slug, title, body, status, updated_at`
	now := millis(ps.db.now())
	var row pageRow
	err := ps.db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		err := tx.GetContext(ctx, &row, q, title, body, now, slug)
		if errors.Is(err, sql.ErrNoRows) {
			return tools.ErrPageNotFound
		}
		if err != nil {
			return err
		}
		return insertRevision(ctx, tx, actionUpdate, row, now)
	})
	if err != nil {
		return tools.Page{}, fmt.Errorf("update page %q: %w", slug, err)
	}
	return row.page(), nil
}

// PublishPage sets a page's status to published. Publishing a published page
// changes nothing but still counts as a write call.
func (ps *Pages) PublishPage(ctx context.Context, slug string) (tools.Page, error) {
	const q = `UPDATE page
		SET status = 'published',
			updated_at = CASE WHEN status = 'published' THEN updated_at ELSE ? END
		WHERE slug = ?
		RETURNING slug, title, body, status, updated_at`
	now := millis(ps.db.now())
	var row pageRow
	err := ps.db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		err := tx.GetContext(ctx, &row, q, now, slug)
		if errors.Is(err, sql.ErrNoRows) {
			return tools.ErrPageNotFound
		}
		if err != nil {
			return err
		}
		return insertRevision(ctx, tx, actionPublish, row, now)
	})
	if err != nil {
		return tools.Page{}, fmt.Errorf("publish page %q: %w", slug, err)
	}
	return row.page(), nil
}

// DeletePage removes a page; its revisions remain.
func (ps *Pages) DeletePage(ctx context.Context, slug string) error {
	const q = `DELETE FROM page WHERE slug = ?
		RETURNING slug, title, body, status, updated_at`
	now := millis(ps.db.now())
	err := ps.db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		var row pageRow
		err := tx.GetContext(ctx, &row, q, slug)
		if errors.Is(err, sql.ErrNoRows) {
			return tools.ErrPageNotFound
		}
		if err != nil {
			return err
		}
		return insertRevision(ctx, tx, actionDelete, row, now)
	})
	if err != nil {
		return fmt.Errorf("delete page %q: %w", slug, err)
	}
	return nil
}

// Revisions counts the write calls the workspace has ever performed.
func (ps *Pages) Revisions(ctx context.Context) (int, error) {
	var n int
	if err := ps.db.db.GetContext(ctx, &n, `SELECT count(*) FROM page_revision`); err != nil {
		return 0, fmt.Errorf("count page revisions: %w", err)
	}
	return n, nil
}

// SeedPages stores pages on first start, without revisions, and reports
// whether it did. First start means no page and no revision: a workspace
// whose pages were all deleted is not seeded again. A page without a status
// is a draft; one without UpdatedAt is stamped now. A page that fails
// tools.ValidatePage stores nothing.
func (ps *Pages) SeedPages(ctx context.Context, pages []tools.Page) (bool, error) {
	const used = `SELECT EXISTS (SELECT 1 FROM page) OR EXISTS (SELECT 1 FROM page_revision)`
	const insert = `INSERT INTO page (slug, title, body, status, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)`
	for _, p := range pages {
		if err := tools.ValidatePage(p); err != nil {
			return false, fmt.Errorf("seed pages: %w", err)
		}
	}
	now := ps.db.now()
	seeded := false
	err := ps.db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		var inUse bool
		if err := tx.GetContext(ctx, &inUse, used); err != nil {
			return err
		}
		if inUse {
			return nil
		}
		for _, p := range pages {
			if p.Status == "" {
				p.Status = tools.StatusDraft
			}
			if p.UpdatedAt.IsZero() {
				p.UpdatedAt = now
			}
			if _, err := tx.ExecContext(ctx, insert, p.Slug, p.Title, p.Body, p.Status, millis(now), millis(p.UpdatedAt)); err != nil {
				return fmt.Errorf("page %q: %w", p.Slug, err)
			}
		}
		seeded = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("seed pages: %w", err)
	}
	return seeded, nil
}

// getPage reads one page, or tools.ErrPageNotFound.
func getPage(ctx context.Context, q sqlx.QueryerContext, slug string) (pageRow, error) {
	const query = `SELECT slug, title, body, status, updated_at FROM page WHERE slug = ?`
	var row pageRow
	if err := sqlx.GetContext(ctx, q, &row, query, slug); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return pageRow{}, tools.ErrPageNotFound
		}
		return pageRow{}, err
	}
	return row, nil
}

// insertRevision appends the page as it stands after action (before it, for
// a delete) to the audit.
func insertRevision(ctx context.Context, tx writeTx, action string, p pageRow, at int64) error {
	const q = `INSERT INTO page_revision (slug, action, title, body, at) VALUES (?, ?, ?, ?, ?)`
	if _, err := tx.ExecContext(ctx, q, p.Slug, action, p.Title, p.Body, at); err != nil {
		return fmt.Errorf("insert %s revision: %w", action, err)
	}
	return nil
}
