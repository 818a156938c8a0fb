package tools

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestReadTools(t *testing.T) {
	tests := []struct {
		tool    string
		args    string
		want    string // the exact result, when set
		contain []string
		wantErr error
		errText string
	}{
		{tool: "list_pages", args: `{}`, contain: []string{
			`[{"slug":"about","title":"About us","status":"draft","updated_at":"2026-01-08T09:30:00Z"},`,
			`{"slug":"welcome","title":"Welcome to Acme Notes","status":"published","updated_at":"2025-09-02T09:30:00Z"}]`,
		}},
		{tool: "list_pages", args: ``, contain: []string{`"slug":"about"`}},
		{tool: "list_pages", args: `{"all":"yes"}`, wantErr: ErrInvalidArguments, errText: `unknown field "all"`},
		{tool: "get_page", args: `{"slug":"faq"}`, contain: []string{
			`{"slug":"faq","title":"Frequently asked questions","body":"# Frequently asked questions\n`,
			`refund within 30 days`,
			`"status":"published","updated_at":"2025-10-21T09:30:00Z"}`,
		}},
		{tool: "get_page", args: `{"slug":"nope"}`, wantErr: ErrPageNotFound, errText: `page "nope" not found`},
		{tool: "get_page", args: `{"slug":"Bad Slug"}`, wantErr: ErrInvalidPage, errText: `slug "Bad Slug"`},
		{tool: "get_page", args: `{}`, wantErr: ErrInvalidArguments, errText: `missing required field "slug"`},
		{tool: "get_page", args: `{"slug":7}`, wantErr: ErrInvalidArguments, errText: `field "slug" must be a string`},
		{tool: "get_page", args: `{"slug":"faq","page":"x"}`, wantErr: ErrInvalidArguments, errText: `unknown field "page"`},
		{tool: "search_pages", args: `{"query":"REFUND"}`,
			want: `[{"slug":"faq","title":"Frequently asked questions","snippet":"## How do refunds work?"}]`},
		{tool: "search_pages", args: `{"query":"Refund Within"}`,
			want: `[{"slug":"faq","title":"Frequently asked questions","snippet":"If you are not happy, ask for a refund within 30 days of your first payment and we return it in full."}]`},
		{tool: "search_pages", args: `{"query":"team plan costs"}`,
			want: `[{"slug":"pricing","title":"Pricing","snippet":"The Team plan costs $10 per seat per month, billed monthly or yearly."}]`},
		{tool: "search_pages", args: `{"query":"frequently"}`,
			want: `[{"slug":"faq","title":"Frequently asked questions","snippet":"# Frequently asked questions"}]`},
		{tool: "search_pages", args: `{"query":"zebra"}`, want: `[]`},
		{tool: "search_pages", args: `{"query":"  "}`, wantErr: ErrInvalidArguments, errText: "query must not be empty"},
		{tool: "search_pages", args: `{}`, wantErr: ErrInvalidArguments, errText: `missing required field "query"`},
		{tool: "word_count", args: `{"slug":"old-announcement"}`, want: `{"slug":"old-announcement","words":44}`},
		{tool: "word_count", args: `{"slug":"gone"}`, wantErr: ErrPageNotFound, errText: `page "gone" not found`},
		{tool: "word_count", args: `{"slug":""}`, wantErr: ErrInvalidPage},
		{tool: "current_time", args: `{}`, want: `{"time":"2026-03-01T12:00:00Z"}`},
		{tool: "current_time", args: `{"zone":"UTC"}`, wantErr: ErrInvalidArguments},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			ws, tools := seeded(t)
			got, err := call(t, tools[tt.tool], tt.args)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("err = %v, want %v saying %q", err, tt.wantErr, tt.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			decode[any](t, got)
			if tt.want != "" && got != tt.want {
				t.Errorf("result\n%s\nwant\n%s", got, tt.want)
			}
			for _, c := range tt.contain {
				if !strings.Contains(got, c) {
					t.Errorf("result %s\nlacks %s", got, c)
				}
			}
			if ws.Writes() != 0 {
				t.Errorf("a read tool wrote: Writes() = %d", ws.Writes())
			}
		})
	}
}

func TestWordCountMatchesFields(t *testing.T) {
	_, tools := seeded(t)
	for _, p := range SeedPages() {
		got, err := call(t, tools["word_count"], `{"slug":"`+p.Slug+`"}`)
		if err != nil {
			t.Fatal(err)
		}
		r := decode[struct {
			Slug  string `json:"slug"`
			Words int    `json:"words"`
		}](t, got)
		if r.Slug != p.Slug || r.Words != len(strings.Fields(p.Body)) || r.Words == 0 {
			t.Errorf("%s: %+v", p.Slug, r)
		}
	}
}

func TestCurrentTimeUsesClockInUTC(t *testing.T) {
	local := clock.In(mustZone(t, "Asia/Tokyo", 9*3600))
	tl := ReadTools(NewMemory(fixedNow), func() time.Time { return local })[4]
	got, err := call(t, tl, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if got != `{"time":"2026-03-01T12:00:00Z"}` {
		t.Fatalf("current_time = %s", got)
	}
}

func mustZone(t *testing.T, name string, offset int) *time.Location {
	t.Helper()
	return time.FixedZone(name, offset)
}

func TestSearchSnippetIsClipped(t *testing.T) {
	long := strings.Repeat("word ", 60) + "NEEDLE in a haystack " + strings.Repeat("more ", 60)
	ws := NewMemory(fixedNow,
		Page{Slug: "long", Title: "Long", Body: "intro\n   " + long + "   \noutro"},
		Page{Slug: "short", Title: "Needle title", Body: "nothing here"},
	)
	tl := ReadTools(ws, fixedNow)[2]
	got, err := call(t, tl, `{"query":"needle"}`)
	if err != nil {
		t.Fatal(err)
	}
	hits := decode[[]struct{ Slug, Title, Snippet string }](t, got)
	if len(hits) != 2 {
		t.Fatalf("hits = %+v", hits)
	}
	s := hits[0].Snippet
	if n := utf8.RuneCountInString(s); n > maxSnippet {
		t.Errorf("snippet has %d characters, want at most %d", n, maxSnippet)
	}
	if !strings.Contains(s, "NEEDLE in a haystack") || !strings.HasPrefix(s, "…") || !strings.HasSuffix(s, "…") {
		t.Errorf("snippet %q does not show the match between cuts", s)
	}
	if hits[1].Snippet != "Needle title" {
		t.Errorf("title-only hit has snippet %q", hits[1].Snippet)
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		line, query string
		max         int
		want        string
	}{
		{"short line", "line", 20, "short line"},
		{"abcdefghij", "b", 5, "abcd…"},
		{"abcdefghij", "j", 5, "…ghij"},
		{"abcdefghijklmnopqrst", "k", 8, "…jklmno…"},
		{"abcdefghijklmnopqrst", "zz", 8, "abcdefg…"},
		{"abcdefghijklmnopqrst", "abcdefghijkl", 8, "abcdefg…"},
		{"ééééééééééxé", "x", 6, "…éééxé"},
	}
	for _, tt := range tests {
		got := clip(tt.line, tt.query, tt.max)
		if got != tt.want {
			t.Errorf("clip(%q, %q, %d) = %q, want %q", tt.line, tt.query, tt.max, got, tt.want)
		}
		if utf8.RuneCountInString(got) > tt.max {
			t.Errorf("clip(%q) is too long: %q", tt.line, got)
		}
	}
}

func TestClipKeepsShortMatchesInView(t *testing.T) {
	line := strings.Repeat("é", 40) + strings.Repeat("a", 40)
	for at := 0; at < 78; at++ {
		r := []rune(line)
		with := string(r[:at]) + "XY" + string(r[at+2:])
		for _, max := range []int{8, 9, 20} {
			got := clip(with, "xy", max)
			if n := utf8.RuneCountInString(got); n != max {
				t.Fatalf("clip at %d max %d: %q has %d characters", at, max, got, n)
			}
			if !strings.Contains(got, "XY") {
				t.Fatalf("clip at %d max %d: %q lost the match", at, max, got)
			}
		}
	}
}
