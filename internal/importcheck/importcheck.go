// Package importcheck lets a package's tests hold it to the imports its
// design allows, so that a forbidden import fails a test rather than a
// review.
package importcheck

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Check reads the imports of the non-test Go files in dir and fails t for
// each one that refuse returns a reason for. It also fails when fewer than
// min files were read, so that a wrong dir cannot pass silently.
func Check(t testing.TB, dir string, min int, refuse func(path string) (reason string)) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if why := refuse(path); why != "" {
				t.Errorf("%s imports %s: %s", filepath.Base(name), path, why)
			}
		}
		checked++
	}
	if checked < min {
		t.Fatalf("only %d files checked in %s", checked, dir)
	}
}

// Standard reports whether path is in the standard library: its first
// element has no dot.
func Standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".") && first != "countersign"
}
