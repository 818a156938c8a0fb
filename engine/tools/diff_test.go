package tools

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func numbered(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("line %d", i))
	}
	return out
}

func TestDiffLines(t *testing.T) {
	tests := []struct {
		name string
		a, b []string
		want []string
	}{
		{"same", []string{"a", "b"}, []string{"a", "b"}, []string{"  (body unchanged)"}},
		{"both empty", nil, nil, []string{"  (body unchanged)"}},
		{"changed line", []string{"a", "b", "c"}, []string{"a", "B", "c"},
			[]string{"  a", "- b", "+ B", "  c"}},
		{"added at end", []string{"a"}, []string{"a", "b"}, []string{"  a", "+ b"}},
		{"removed at start", []string{"a", "b"}, []string{"b"}, []string{"- a", "  b"}},
		{"from empty", nil, []string{"a", "b"}, []string{"+ a", "+ b"}},
		{"to empty", []string{"a", "b"}, nil, []string{"- a", "- b"}},
		{"replaced all", []string{"a", "b"}, []string{"c"}, []string{"- a", "- b", "+ c"}},
		{"moved line", []string{"a", "b", "c", "d"}, []string{"b", "c", "a", "d"},
			[]string{"- a", "  b", "  c", "+ a", "  d"}},
		{"interleaved", []string{"x", "a", "y", "b", "z"}, []string{"a", "q", "b"},
			[]string{"- x", "  a", "- y", "+ q", "  b", "- z"}},
		{"folds context",
			numbered(1, 20),
			slices.Concat(numbered(1, 9), []string{"ten"}, numbered(11, 20)),
			[]string{"@@ 6 unchanged lines @@", "  line 7", "  line 8", "  line 9", "- line 10", "+ ten",
				"  line 11", "  line 12", "  line 13", "@@ 7 unchanged lines @@"}},
		{"folds between changes",
			numbered(1, 12),
			slices.Concat([]string{"one"}, numbered(2, 11), []string{"twelve"}),
			[]string{"- line 1", "+ one", "  line 2", "  line 3", "  line 4", "@@ 4 unchanged lines @@",
				"  line 9", "  line 10", "  line 11", "- line 12", "+ twelve"}},
		{"keeps a single line rather than fold it",
			numbered(1, 5),
			slices.Concat([]string{"one"}, numbered(2, 5)),
			[]string{"- line 1", "+ one", "  line 2", "  line 3", "  line 4", "  line 5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := diffLines(tt.a, tt.b)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("diff\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestDiffLinesApplies checks on many pairs that the kept, folded and
// removed lines give back a and the kept, folded and added lines give back b.
func TestDiffLinesApplies(t *testing.T) {
	words := []string{"a", "b", "c", "a", "d", "b"}
	for mask := range 1 << len(words) {
		for shift := range 3 {
			var a, b []string
			for i, w := range words {
				if mask&(1<<i) != 0 {
					a = append(a, w)
				}
				if (mask>>shift)&(1<<i) == 0 {
					b = append(b, w+fmt.Sprint(i%2))
				} else {
					b = append(b, w)
				}
			}
			var gotA, gotB []string
			for _, l := range diffLines(a, b) {
				var n int
				switch {
				case l == "  (body unchanged)":
					gotA, gotB = a, b
				case strings.HasPrefix(l, "  "):
					gotA, gotB = append(gotA, l[2:]), append(gotB, l[2:])
				case strings.HasPrefix(l, "- "):
					gotA = append(gotA, l[2:])
				case strings.HasPrefix(l, "+ "):
					gotB = append(gotB, l[2:])
				default:
					if _, err := fmt.Sscanf(l, "@@ %d unchanged lines @@", &n); err != nil {
						t.Fatalf("unexpected line %q", l)
					}
					kept := a[len(gotA) : len(gotA)+n]
					gotA, gotB = append(gotA, kept...), append(gotB, kept...)
				}
			}
			if !slices.Equal(gotA, a) || !slices.Equal(gotB, b) {
				t.Fatalf("diff of %q and %q does not apply: %q", a, b, diffLines(a, b))
			}
		}
	}
}

func TestDiffLinesIsBounded(t *testing.T) {
	big := numbered(1, maxDiffLines+500)
	other := numbered(1, maxDiffLines+500)
	slices.Reverse(other)
	got := diffLines(big, other)
	want := []string{
		fmt.Sprintf("- (%d lines removed)", len(big)),
		fmt.Sprintf("+ (%d lines added)", len(other)),
	}
	if !slices.Equal(got, want) {
		t.Fatalf("diff = %q, want %q", got, want)
	}

	// A small edit in a long body is still diffed: the shared start and end
	// are not counted against the bound.
	edited := slices.Clone(big)
	edited[1000] = "changed"
	got = diffLines(big, edited)
	if !slices.Contains(got, "- line 1001") || !slices.Contains(got, "+ changed") || len(got) != 10 {
		t.Fatalf("diff = %q", got)
	}

	// A large changed middle with a shared start and end is summarised.
	middle := slices.Concat([]string{"head"}, numbered(1, maxDiffLines+1), []string{"tail"})
	replaced := slices.Concat([]string{"head"}, []string{"x"}, []string{"tail"})
	got = diffLines(middle, replaced)
	want = []string{"  head", fmt.Sprintf("- (%d lines removed)", maxDiffLines+1), "+ (1 line added)", "  tail"}
	if !slices.Equal(got, want) {
		t.Fatalf("diff = %q, want %q", got, want)
	}
}

func TestSplitLines(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{"a\n", []string{"a"}},
		{"a\r\nb\r\n", []string{"a", "b"}},
		{"a\n\nb", []string{"a", "", "b"}},
		{"\n", []string{""}},
	}
	for _, tt := range tests {
		if got := splitLines(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("splitLines(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func BenchmarkDiffLinesWorstCase(b *testing.B) {
	a := numbered(1, maxDiffLines)
	c := numbered(1, maxDiffLines)
	slices.Reverse(c)
	for b.Loop() {
		diffLines(a, c)
	}
}
