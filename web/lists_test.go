package web_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"countersign/engine"
)

// TestInbox: the inbox lists the waiting runs oldest first with their pending
// tools, and the badge counts them.
func TestInbox(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	vera := a.as(veraName)

	empty := vera.get("/inbox")
	mustStatus(t, empty, http.StatusOK)
	if empty.doc.Find(testid("inbox-empty")).Length() != 1 || empty.doc.Find(testid("inbox-item")).Length() != 0 {
		t.Error("an empty inbox is not said to be empty")
	}
	badge := vera.get("/inbox/count")
	mustStatus(t, badge, http.StatusOK)
	if got := text(badge.doc, testid("inbox-badge")); got != "0" || !badge.doc.Find(testid("inbox-badge")).HasClass("is-zero") {
		t.Errorf("empty badge %q", got)
	}

	want := []struct{ prompt, by, tool string }{
		{publishAbout, olgaName, "publish_page"},
		{deleteOld, oscarName, "delete_page"},
		{updatePricing, olgaName, "update_page"},
	}
	var ids []string
	for _, w := range want {
		r := a.startRun("editor", w.prompt, w.by)
		ids = append(ids, r.ID)
	}
	done := a.startRun("researcher", readOnlyPrompt, oscarName)
	for _, id := range ids {
		a.waitStatus(id, engine.StatusWaiting)
	}
	a.waitStatus(done.ID, engine.StatusCompleted)

	page := vera.get("/inbox")
	mustStatus(t, page, http.StatusOK)
	if got := attr(page.doc, testid("nav-inbox"), "aria-current"); got != "page" {
		t.Error("inbox nav entry not marked current")
	}
	rows := page.doc.Find(testid("inbox-item"))
	var got []string
	rows.Each(func(i int, s *goquery.Selection) {
		got = append(got, s.AttrOr("data-run-id", ""))
		if i >= len(want) {
			return
		}
		if tool := strings.TrimSpace(s.Find(".tool-name").Text()); tool != want[i].tool {
			t.Errorf("row %d: pending %q, want %q", i, tool, want[i].tool)
		}
		if by := strings.TrimSpace(s.Find(testid("inbox-started-by")).Text()); by != want[i].by {
			t.Errorf("row %d: started by %q, want %q", i, by, want[i].by)
		}
		if p := strings.TrimSpace(s.Find(testid("inbox-prompt")).Text()); p != want[i].prompt {
			t.Errorf("row %d: prompt %q", i, p)
		}
		if href := s.Find(testid("inbox-run-link")).AttrOr("href", ""); href != "/runs/"+ids[i] {
			t.Errorf("row %d links to %q", i, href)
		}
	})
	if !slices.Equal(got, ids) {
		t.Errorf("inbox %v, want oldest first %v", got, ids)
	}
	if got := text(vera.get("/inbox/count").doc, testid("inbox-badge")); got != "3" {
		t.Errorf("badge %q, want 3", got)
	}
	if got := attr(vera.get("/runs").doc, testid("inbox-badge"), "aria-label"); got != "3 runs waiting" {
		t.Errorf("nav badge label %q", got)
	}

	// Deciding one takes it out.
	olga := a.as(olgaName)
	mustRedirect(t, decide(t, olga, ids[1], "deny", "not now"), "/runs/"+ids[1])
	a.waitStatus(ids[1], engine.StatusCompleted)
	got = nil
	vera.get("/inbox").doc.Find(testid("inbox-item")).Each(func(_ int, s *goquery.Selection) {
		got = append(got, s.AttrOr("data-run-id", ""))
	})
	if want := []string{ids[0], ids[2]}; !slices.Equal(got, want) {
		t.Errorf("inbox %v, want %v", got, want)
	}
	if got := text(vera.get("/inbox/count").doc, testid("inbox-badge")); got != "2" {
		t.Errorf("badge %q, want 2", got)
	}
}

// historyRun is a run the history test stores, with what it expects of it.
type historyRun struct {
	id, agent, by, prompt string
	status                engine.Status
}

// seedHistory stores n runs straight through the store, one second apart
// (three of them in the same millisecond), in a mix of statuses, agents,
// initiators and prompts. It returns them newest first, as the history
// lists them.
func seedHistory(t *testing.T, a *testApp, n int) []historyRun {
	t.Helper()
	ctx := context.Background()
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	agents := []string{"editor", "editor-4eyes", "researcher"}
	var runs []historyRun
	for i := range n {
		at := base.Add(time.Duration(i) * time.Second)
		if i >= 21 && i <= 23 {
			at = base.Add(20 * time.Second) // ties on created_at: the id orders them
		}
		h := historyRun{agent: agents[i%3], by: olgaName, prompt: fmt.Sprintf("Run %02d about the FAQ", i), status: engine.StatusQueued}
		if i >= 55 {
			h.by = oscarName
		}
		if i%4 == 0 {
			h.prompt = fmt.Sprintf("Run %02d about the Pricing page", i)
		}
		if i == 7 {
			h.prompt = "Run 07: 100% off_sale"
		}
		r := a.createRun(h.agent, h.prompt, h.by, at)
		h.id = r.ID
		now := at.Add(time.Second)
		switch i % 5 {
		case 0:
			h.status = engine.StatusCompleted
			if err := a.db.FinishRun(ctx, r.ID, "", engine.Finish{Status: engine.StatusCompleted, Termination: engine.TermCompleted,
				Now: now, Event: engine.Event{Kind: engine.EventFinished, Text: "ok"}}); err != nil {
				t.Fatal(err)
			}
		case 1:
			h.status = engine.StatusCancelled
			if _, err := a.db.RequestCancel(ctx, r.ID, engine.Event{Kind: engine.EventFailed, Termination: engine.TermCancelled}, now); err != nil {
				t.Fatal(err)
			}
		case 2:
			h.status = engine.StatusRunning
			if _, err := a.db.AcquireRun(ctx, r.ID, "test-worker", now, now.Add(24*time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		runs = append(runs, h)
	}
	slices.Reverse(runs)
	return runs
}

// historyPage reads one page of the history: the run ids, the match count
// and the next-page link.
func historyPage(t *testing.T, c *client, path string) (ids []string, count, next string, res *response) {
	t.Helper()
	res = c.get(path)
	mustStatus(t, res, http.StatusOK)
	res.doc.Find(testid("run-row")).Each(func(_ int, s *goquery.Selection) { ids = append(ids, s.AttrOr("data-run-id", "")) })
	next, _ = res.doc.Find(testid("next-page")).Attr("href")
	return ids, text(res.doc, testid("match-count")), next, res
}

// walkHistory follows the next-page links from path and returns every run id.
func walkHistory(t *testing.T, c *client, path string) (all []string, pages int) {
	t.Helper()
	for path != "" {
		ids, _, next, _ := historyPage(t, c, path)
		all = append(all, ids...)
		pages++
		if pages > 10 {
			t.Fatal("the next-page links do not end")
		}
		path = next
	}
	return all, pages
}

func matchCount(n int) string {
	if n == 1 {
		return "1 run matches"
	}
	return fmt.Sprintf("%d runs match", n)
}

// TestHistory: filters narrow the rows and the count; the next-page links
// walk every run once; a bad cursor or status is 400.
func TestHistory(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	runs := seedHistory(t, a, 60)
	vera := a.as(veraName)
	idsOf := func(keep func(historyRun) bool) []string {
		var ids []string
		for _, r := range runs {
			if keep(r) {
				ids = append(ids, r.id)
			}
		}
		return ids
	}

	t.Run("all, page by page", func(t *testing.T) {
		vera := vera.with(t)
		ids, count, next, _ := historyPage(t, vera, "/runs")
		if count != "60 runs match" || len(ids) != 50 || next == "" {
			t.Fatalf("first page: %d rows, %q, next %q", len(ids), count, next)
		}
		all, pages := walkHistory(t, vera, "/runs")
		want := idsOf(func(historyRun) bool { return true })
		if pages != 2 || !slices.Equal(all, want) {
			t.Errorf("%d pages, %d runs; want 2 pages and every run once, newest first\ngot  %v\nwant %v", pages, len(all), all, want)
		}
	})

	filters := []struct {
		name  string
		query url.Values
		keep  func(historyRun) bool
	}{
		{"status", url.Values{"status": {"completed"}}, func(r historyRun) bool { return r.status == engine.StatusCompleted }},
		{"agent", url.Values{"agent": {"researcher"}}, func(r historyRun) bool { return r.agent == "researcher" }},
		{"initiator", url.Values{"initiator": {oscarName}}, func(r historyRun) bool { return r.by == oscarName }},
		{"text, any case", url.Values{"q": {"PRICING"}}, func(r historyRun) bool { return strings.Contains(r.prompt, "Pricing") }},
		{"text with wildcards", url.Values{"q": {"100% off_"}}, func(r historyRun) bool { return strings.Contains(r.prompt, "100% off_") }},
		{"underscore is literal", url.Values{"q": {"_"}}, func(r historyRun) bool { return strings.Contains(r.prompt, "_") }},
		{"combined", url.Values{"status": {"queued"}, "agent": {"editor"}, "q": {"faq"}},
			func(r historyRun) bool {
				return r.status == engine.StatusQueued && r.agent == "editor" && strings.Contains(r.prompt, "FAQ")
			}},
		{"nothing", url.Values{"q": {"no such words"}}, func(historyRun) bool { return false }},
		{"initiator over two pages", url.Values{"initiator": {olgaName}}, func(r historyRun) bool { return r.by == olgaName }},
	}
	for _, f := range filters {
		t.Run(f.name, func(t *testing.T) {
			vera := vera.with(t)
			want := idsOf(f.keep)
			path := "/runs?" + f.query.Encode()
			ids, count, next, res := historyPage(t, vera, path)
			if count != matchCount(len(want)) {
				t.Errorf("match count %q, want %q", count, matchCount(len(want)))
			}
			if len(want) == 0 && res.doc.Find(testid("history-empty")).Length() != 1 {
				t.Error("no empty-history notice")
			}
			if len(want) > 50 {
				for k := range f.query {
					if u, _ := url.Parse(next); u == nil || u.Query().Get(k) != f.query.Get(k) {
						t.Errorf("next-page link %q drops the filter %s", next, k)
					}
				}
			}
			all, _ := walkHistory(t, vera, path)
			if !slices.Equal(all, want) {
				t.Errorf("rows\n%v\nwant\n%v", all, want)
			}
			if len(ids) > 0 && ids[0] != want[0] {
				t.Errorf("first row %s, want %s", ids[0], want[0])
			}
			if st := f.query.Get("status"); st != "" {
				res.doc.Find(testid("row-status")).Each(func(_ int, s *goquery.Selection) {
					if s.AttrOr("data-status", "") != st {
						t.Errorf("row status %q in a %s filter", s.AttrOr("data-status", ""), st)
					}
				})
				if got := attr(res.doc, testid("filter-status")+" option[selected]", "value"); got != st {
					t.Errorf("status filter shows %q", got)
				}
			}
			if q := f.query.Get("q"); q != "" && attr(res.doc, testid("filter-q"), "value") != q {
				t.Errorf("text filter not refilled: %q", attr(res.doc, testid("filter-q"), "value"))
			}
			if by := f.query.Get("initiator"); by != "" && attr(res.doc, testid("filter-initiator"), "value") != by {
				t.Error("initiator filter not refilled")
			}
		})
	}

	t.Run("bad requests", func(t *testing.T) {
		vera := vera.with(t)
		for _, q := range []string{
			"before=!!!",
			"before=" + base64.RawURLEncoding.EncodeToString([]byte("no-dot")),
			"before=" + base64.RawURLEncoding.EncodeToString([]byte("abc.01J")),
			"status=exploded",
		} {
			mustCleanError(t, vera.get("/runs?"+q), http.StatusBadRequest)
		}
	})
}
