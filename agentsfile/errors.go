package agentsfile

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one mistake in an agents file.
type Error struct {
	File string
	// Line is where the mistake is, from 1; zero when the file as a whole
	// is wrong.
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// ErrorList is every mistake of a file, in the order of their lines.
type ErrorList []*Error

func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	if len(l) == 1 {
		return msgs[0]
	}
	return fmt.Sprintf("%d mistakes:\n%s", len(l), strings.Join(msgs, "\n"))
}

// sorted returns l in the order of the lines, keeping the order of
// mistakes on the same line.
func (l ErrorList) sorted() ErrorList {
	out := slices.Clone(l)
	slices.SortStableFunc(out, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
	return out
}
