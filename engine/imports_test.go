package engine

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestEngineImportsNoHTTPOrSQL holds the engine to its design: the standard
// library only, and of it nothing of HTTP or SQL.
func TestEngineImportsNoHTTPOrSQL(t *testing.T) {
	files, err := filepath.Glob("*.go")
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
			first, _, _ := strings.Cut(path, "/")
			switch {
			case strings.Contains(first, "."), strings.HasPrefix(path, "countersign/"):
				t.Errorf("%s imports %s: the engine takes the standard library only", name, path)
			case strings.HasPrefix(path, "net/http"), strings.HasPrefix(path, "database/sql"), path == "net":
				t.Errorf("%s imports %s: the engine knows nothing of HTTP or SQL", name, path)
			}
		}
		checked++
	}
	if checked < 5 {
		t.Fatalf("only %d files checked", checked)
	}
}
