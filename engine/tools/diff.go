package tools

import (
	"fmt"
	"strings"
)

// The bounds of a preview's line diff. The changed middle of a body (after
// the lines both versions share at the start and the end) is diffed only if
// neither side has more than maxDiffLines, which bounds the LCS table to
// about 8 MB; beyond that the preview shows how many lines go and come.
// diffContext unchanged lines are shown around each change.
const (
	maxDiffLines = 2000
	diffContext  = 3
)

// splitLines splits a body into lines, ignoring the final newline and the
// carriage returns of CRLF text.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// edit is one line of a diff: op is ' ' (kept), '-' (removed), '+' (added),
// or '!' for a change too large to diff, whose counts are removed and added.
type edit struct {
	op             byte
	line           string
	removed, added int
}

// diffLines returns the unified-style diff of two versions of a body: "  "
// before kept lines, "- " before removed ones and "+ " before added ones,
// with runs of unchanged lines beyond the context folded into an
// "@@ n unchanged lines @@" line.
func diffLines(a, b []string) []string {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	am, bm := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(am) == 0 && len(bm) == 0 {
		return []string{"  (body unchanged)"}
	}

	edits := make([]edit, 0, len(a)+len(bm))
	for _, l := range a[:pre] {
		edits = append(edits, edit{op: ' ', line: l})
	}
	if len(am) > maxDiffLines || len(bm) > maxDiffLines {
		edits = append(edits, edit{op: '!', removed: len(am), added: len(bm)})
	} else {
		edits = append(edits, lcsDiff(am, bm)...)
	}
	for _, l := range a[len(a)-suf:] {
		edits = append(edits, edit{op: ' ', line: l})
	}
	return render(edits)
}

// lcsDiff diffs a and b through their longest common subsequence. Both are
// at most maxDiffLines long, so lengths fit in uint16.
func lcsDiff(a, b []string) []edit {
	n, m := len(a), len(b)
	w := m + 1
	// lcs[i*w+j] is the length of the LCS of a[i:] and b[j:].
	lcs := make([]uint16, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			switch {
			case a[i] == b[j]:
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			case lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
				lcs[i*w+j] = lcs[(i+1)*w+j]
			default:
				lcs[i*w+j] = lcs[i*w+j+1]
			}
		}
	}
	edits := make([]edit, 0, n+m)
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			edits = append(edits, edit{op: ' ', line: a[i]})
			i++
			j++
		case j == m || (i < n && lcs[(i+1)*w+j] >= lcs[i*w+j+1]):
			edits = append(edits, edit{op: '-', line: a[i]})
			i++
		default:
			edits = append(edits, edit{op: '+', line: b[j]})
			j++
		}
	}
	return edits
}

// render writes edits as lines, folding the unchanged runs.
func render(edits []edit) []string {
	var out []string
	// Only runs that leave two or more lines to fold are folded: folding one
	// line into a marker line saves nothing.
	fold := func(n int) {
		out = append(out, fmt.Sprintf("@@ %d unchanged lines @@", n))
	}
	keep := func(run []edit) {
		for _, e := range run {
			out = append(out, "  "+e.line)
		}
	}
	for i := 0; i < len(edits); {
		if edits[i].op != ' ' {
			e := edits[i]
			switch e.op {
			case '!':
				out = append(out,
					fmt.Sprintf("- (%s removed)", plural(e.removed, "line")),
					fmt.Sprintf("+ (%s added)", plural(e.added, "line")))
			default:
				out = append(out, string(e.op)+" "+e.line)
			}
			i++
			continue
		}
		j := i
		for j < len(edits) && edits[j].op == ' ' {
			j++
		}
		run := edits[i:j]
		switch {
		case i == 0 && len(run) > diffContext+1:
			fold(len(run) - diffContext)
			keep(run[len(run)-diffContext:])
		case j == len(edits) && len(run) > diffContext+1:
			keep(run[:diffContext])
			fold(len(run) - diffContext)
		case i > 0 && j < len(edits) && len(run) > 2*diffContext+1:
			keep(run[:diffContext])
			fold(len(run) - 2*diffContext)
			keep(run[len(run)-diffContext:])
		default:
			keep(run)
		}
		i = j
	}
	return out
}

// plural returns n and the noun, with an "s" unless n is one.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// LineDiff returns the diff of two versions of a text as a preview shows
// it (see diffLines), for previews of tools outside this package.
func LineDiff(before, after string) []string {
	return diffLines(splitLines(before), splitLines(after))
}
