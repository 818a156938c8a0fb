package views

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestViewsImports holds views to its design: the standard library and templ
// only. Handlers fill plain view structs; views knows nothing of the engine,
// the store or the web layer, and no other library.
func TestViewsImports(t *testing.T) {
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
			case path == "github.com/a-h/templ", strings.HasPrefix(path, "github.com/a-h/templ/"):
			case path == "countersign" || strings.HasPrefix(path, "countersign/"):
				t.Errorf("%s imports %s: views knows nothing of the engine, the store or the web layer", name, path)
			case strings.Contains(first, "."):
				t.Errorf("%s imports %s: views takes the standard library and templ only", name, path)
			}
		}
		checked++
	}
	if checked < 5 {
		t.Fatalf("only %d files checked", checked)
	}
}
