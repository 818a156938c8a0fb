package tools

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"countersign/engine"
)

func TestWriteTools(t *testing.T) {
	tests := []struct {
		tool    string
		args    string
		want    string
		wantErr error
		errText string
		writes  int
		check   func(t *testing.T, ws *Memory)
	}{
		{tool: "create_page", args: `{"slug":"winter-sale","title":"Winter sale","body":"# Winter sale\n\nHalf price <all> week & more."}`,
			want: `{"slug":"winter-sale","title":"Winter sale","status":"draft"}`, writes: 1,
			check: func(t *testing.T, ws *Memory) {
				p := page(t, ws, "winter-sale")
				if p.Body != "# Winter sale\n\nHalf price <all> week & more." || p.Status != StatusDraft || !p.UpdatedAt.Equal(clock) {
					t.Errorf("stored %+v", p)
				}
			}},
		{tool: "create_page", args: `{"slug":"pricing","title":"Pricing","body":"x"}`,
			wantErr: ErrPageExists, errText: `page "pricing" already exists`},
		{tool: "create_page", args: `{"slug":"Winter Sale","title":"Winter sale","body":"x"}`,
			wantErr: ErrInvalidPage, errText: `slug "Winter Sale"`},
		{tool: "create_page", args: `{"slug":"winter-sale","title":" ","body":"x"}`,
			wantErr: ErrInvalidPage, errText: "title must not be empty"},
		{tool: "create_page", args: `{"slug":"winter-sale","title":"Winter sale"}`,
			wantErr: ErrInvalidArguments, errText: `missing required field "body"`},
		{tool: "create_page", args: `{"slug":"winter-sale","title":"Winter sale","body":"x","status":"published"}`,
			wantErr: ErrInvalidArguments, errText: `unknown field "status"`},

		{tool: "update_page", args: `{"slug":"pricing","body":"Team: $12 per seat."}`,
			want: `{"slug":"pricing","title":"Pricing","status":"published"}`, writes: 1,
			check: func(t *testing.T, ws *Memory) {
				if p := page(t, ws, "pricing"); p.Body != "Team: $12 per seat." || p.Title != "Pricing" {
					t.Errorf("stored %+v", p)
				}
			}},
		{tool: "update_page", args: `{"slug":"about","title":"About Acme"}`,
			want: `{"slug":"about","title":"About Acme","status":"draft"}`, writes: 1,
			check: func(t *testing.T, ws *Memory) {
				if p := page(t, ws, "about"); !strings.HasPrefix(p.Body, "# About us") {
					t.Errorf("body changed: %q", p.Body)
				}
			}},
		{tool: "update_page", args: `{"slug":"about","title":"About","body":""}`,
			want: `{"slug":"about","title":"About","status":"draft"}`, writes: 1},
		{tool: "update_page", args: `{"slug":"pricing"}`,
			wantErr: ErrInvalidArguments, errText: "give a title, a body or both"},
		{tool: "update_page", args: `{"slug":"pricing","title":null,"body":null}`,
			wantErr: ErrInvalidArguments, errText: "give a title, a body or both"},
		{tool: "update_page", args: `{"slug":"pricing","title":""}`,
			wantErr: ErrInvalidPage, errText: "title must not be empty"},
		{tool: "update_page", args: `{"slug":"nope","body":"x"}`,
			wantErr: ErrPageNotFound, errText: `page "nope" not found`},
		{tool: "update_page", args: `{"body":"x"}`,
			wantErr: ErrInvalidArguments, errText: `missing required field "slug"`},

		{tool: "publish_page", args: `{"slug":"about"}`,
			want: `{"slug":"about","title":"About us","status":"published"}`, writes: 1,
			check: func(t *testing.T, ws *Memory) {
				if p := page(t, ws, "about"); p.Status != StatusPublished {
					t.Errorf("status %q", p.Status)
				}
			}},
		{tool: "publish_page", args: `{"slug":"welcome"}`,
			want: `{"slug":"welcome","title":"Welcome to Acme Notes","status":"published"}`, writes: 1},
		{tool: "publish_page", args: `{"slug":"nope"}`,
			wantErr: ErrPageNotFound, errText: `page "nope" not found`},
		{tool: "publish_page", args: `{"slug":"ABOUT"}`, wantErr: ErrInvalidPage},
		{tool: "publish_page", args: `[]`, wantErr: ErrInvalidArguments, errText: "expected a JSON object"},

		{tool: "delete_page", args: `{"slug":"old-announcement"}`,
			want: `{"deleted":"old-announcement"}`, writes: 1,
			check: func(t *testing.T, ws *Memory) {
				if _, err := ws.GetPage(context.Background(), "old-announcement"); !errors.Is(err, ErrPageNotFound) {
					t.Errorf("page still there: %v", err)
				}
			}},
		{tool: "delete_page", args: `{"slug":"nope"}`,
			wantErr: ErrPageNotFound, errText: `page "nope" not found`},
		{tool: "delete_page", args: `{"slug":"faq","force":"yes"}`,
			wantErr: ErrInvalidArguments, errText: `unknown field "force"`},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			ws, tools := seeded(t)
			got, err := call(t, tools[tt.tool], tt.args)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("err = %v, want %v saying %q", err, tt.wantErr, tt.errText)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				decode[any](t, got)
				if got != tt.want {
					t.Errorf("result\n%s\nwant\n%s", got, tt.want)
				}
			}
			if ws.Writes() != tt.writes {
				t.Errorf("Writes() = %d, want %d", ws.Writes(), tt.writes)
			}
			if tt.check != nil {
				tt.check(t, ws)
			}
		})
	}
}

// stubWorkspace wraps the Memory errors as package store might, to show that
// the tools still say which page is missing.
type stubWorkspace struct{ *Memory }

func (s stubWorkspace) GetPage(ctx context.Context, slug string) (Page, error) {
	_, err := s.Memory.GetPage(ctx, slug)
	if errors.Is(err, ErrPageNotFound) {
		return Page{}, errors.Join(errors.New("select page"), ErrPageNotFound)
	}
	return s.Memory.GetPage(ctx, slug)
}

func TestToolErrorsNameThePage(t *testing.T) {
	tools := All(stubWorkspace{NewMemory(fixedNow)}, fixedNow)
	for _, name := range []string{"get_page", "word_count"} {
		i := slices.IndexFunc(tools, func(tl engine.Tool) bool { return tl.Name() == name })
		_, err := call(t, tools[i], `{"slug":"x"}`)
		if err == nil || err.Error() != `page "x" not found` || !errors.Is(err, ErrPageNotFound) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func preview(t *testing.T, tl engine.Tool, args string) ([]string, error) {
	t.Helper()
	p, ok := tl.(engine.Previewer)
	if !ok {
		t.Fatalf("%s has no preview", tl.Name())
	}
	return p.Preview(context.Background(), json.RawMessage(args))
}

func TestPreviews(t *testing.T) {
	tests := []struct {
		tool    string
		args    string
		want    []string // the exact lines, when set
		contain []string // lines that must be among them
		wantErr error
		errText string
	}{
		{tool: "create_page", args: `{"slug":"winter-sale","title":"Winter sale","body":"# Winter sale\n\nHalf price all week.\n"}`,
			want: []string{`+ new page winter-sale "Winter sale"`, "+ # Winter sale", "+ ", "+ Half price all week."}},
		{tool: "create_page", args: `{"slug":"empty","title":"Empty","body":""}`,
			want: []string{`+ new page empty "Empty"`}},
		{tool: "create_page", args: `{"slug":"faq","title":"FAQ","body":"x"}`,
			wantErr: ErrPageExists, errText: `page "faq" already exists`},
		{tool: "create_page", args: `{"slug":"no good","title":"FAQ","body":"x"}`, wantErr: ErrInvalidPage},

		{tool: "update_page", args: `{"slug":"pricing","title":"Plans and pricing","body":"` +
			strings.ReplaceAll(strings.ReplaceAll(seedBody("pricing"), "$10", "$12"), "\n", `\n`) + `"}`,
			contain: []string{
				"- title: Pricing",
				"+ title: Plans and pricing",
				"-   The Team plan costs $10 per seat per month, billed monthly or yearly.",
				"+   The Team plan costs $12 per seat per month, billed monthly or yearly.",
				"  - Team: unlimited pages, shared folders and version history.",
			}},
		{tool: "update_page", args: `{"slug":"about","title":"About Acme"}`,
			want: []string{"- title: About us", "+ title: About Acme", "  (body unchanged)"}},
		{tool: "update_page", args: `{"slug":"about","title":"About us","body":"new"}`,
			contain: []string{"  title: About us", "- # About us", "+ new"}},
		{tool: "update_page", args: `{"slug":"nope","body":"x"}`,
			wantErr: ErrPageNotFound, errText: `page "nope" not found`},
		{tool: "update_page", args: `{"slug":"about"}`, wantErr: ErrInvalidArguments},

		{tool: "publish_page", args: `{"slug":"about"}`, want: []string{"publish about: draft -> published"}},
		{tool: "publish_page", args: `{"slug":"welcome"}`, want: []string{"publish welcome: already published, nothing changes"}},
		{tool: "publish_page", args: `{"slug":"nope"}`, wantErr: ErrPageNotFound, errText: `page "nope" not found`},

		{tool: "delete_page", args: `{"slug":"old-announcement"}`,
			want: []string{`- delete page old-announcement "Holiday support hours (December 2023)" (44 words)`}},
		{tool: "delete_page", args: `{"slug":"nope"}`, wantErr: ErrPageNotFound, errText: `page "nope" not found`},
		{tool: "delete_page", args: `{"slug":1}`, wantErr: ErrInvalidArguments},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			ws, tools := seeded(t)
			before, _ := ws.ListPages(context.Background())
			lines, err := preview(t, tools[tt.tool], tt.args)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("err = %v, want %v saying %q", err, tt.wantErr, tt.errText)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if len(tt.want) > 0 && !slices.Equal(lines, tt.want) {
					t.Errorf("preview\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(tt.want, "\n"))
				}
				for _, c := range tt.contain {
					if !slices.Contains(lines, c) {
						t.Errorf("preview\n%s\nlacks %q", strings.Join(lines, "\n"), c)
					}
				}
			}
			after, _ := ws.ListPages(context.Background())
			if ws.Writes() != 0 || !slices.Equal(before, after) {
				t.Errorf("preview wrote: Writes() = %d", ws.Writes())
			}
		})
	}
}

func seedBody(slug string) string {
	for _, p := range SeedPages() {
		if p.Slug == slug {
			return p.Body
		}
	}
	panic("no seed page " + slug)
}

// TestUpdatePreviewDiff pins the whole preview of the demo's price change.
func TestUpdatePreviewDiff(t *testing.T) {
	_, tools := seeded(t)
	body := strings.Replace(seedBody("pricing"), "$10", "$12", 1)
	args, _ := json.Marshal(map[string]string{"slug": "pricing", "body": body})
	lines, err := preview(t, tools["update_page"], string(args))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"  title: Pricing",
		"@@ 3 unchanged lines @@",
		"  ",
		"  - Free: up to 3 users and 100 pages.",
		"  - Team: unlimited pages, shared folders and version history.",
		"-   The Team plan costs $10 per seat per month, billed monthly or yearly.",
		"+   The Team plan costs $12 per seat per month, billed monthly or yearly.",
		"  - Enterprise: custom pricing, single sign-on and an uptime SLA.",
		"  ",
		"  Yearly billing saves two months on the Team plan.",
		"  Every paid plan starts with a 14-day free trial; no credit card needed.",
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("preview\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestPreviewThenCallWritesOnce(t *testing.T) {
	ws, tools := seeded(t)
	for _, name := range []string{"create_page", "update_page", "publish_page", "delete_page"} {
		args := map[string]string{
			"create_page":  `{"slug":"sale","title":"Sale","body":"Half price."}`,
			"update_page":  `{"slug":"sale","body":"Two for one."}`,
			"publish_page": `{"slug":"sale"}`,
			"delete_page":  `{"slug":"sale"}`,
		}[name]
		before := ws.Writes()
		if _, err := preview(t, tools[name], args); err != nil {
			t.Fatalf("%s preview: %v", name, err)
		}
		if ws.Writes() != before {
			t.Fatalf("%s preview wrote", name)
		}
		if _, err := call(t, tools[name], args); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ws.Writes() != before+1 {
			t.Fatalf("%s: Writes() = %d, want %d", name, ws.Writes(), before+1)
		}
	}
}

func TestCreatePreviewIsBounded(t *testing.T) {
	_, tools := seeded(t)
	body := strings.Join(numbered(1, maxDiffLines+3), "\n")
	args, _ := json.Marshal(map[string]string{"slug": "long", "title": "Long", "body": body})
	lines, err := preview(t, tools["create_page"], string(args))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != maxDiffLines+2 || lines[len(lines)-1] != "@@ 3 lines more @@" {
		t.Fatalf("%d lines ending %q", len(lines), lines[len(lines)-1])
	}
}
