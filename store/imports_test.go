package store

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// storeLibraries are the only modules outside the standard library and the
// project that the store may import. A new one is a decision: add it here.
var storeLibraries = []string{
	"github.com/jmoiron/sqlx",
	"github.com/mattn/go-sqlite3",
	"github.com/pressly/goose/v3",
	"github.com/oklog/ulid/v2",
	"golang.org/x/crypto/bcrypt",
}

// TestStoreImports holds the store to its design: the standard library, the
// engine (and its sub-packages, whose interfaces it implements), the embedded
// migrations and the libraries above. Never the web layer or the views.
func TestStoreImports(t *testing.T) {
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
			if !storeMayImport(path) {
				t.Errorf("%s imports %s: the store takes the standard library, countersign/engine, "+
					"countersign/migrations and %s only", name, path, strings.Join(storeLibraries, ", "))
			}
		}
		checked++
	}
	if checked < 5 {
		t.Fatalf("only %d files checked", checked)
	}
}

func storeMayImport(path string) bool {
	switch {
	case path == "countersign/engine", strings.HasPrefix(path, "countersign/engine/"),
		path == "countersign/migrations":
		return true
	case path == "countersign" || strings.HasPrefix(path, "countersign/"):
		return false
	}
	for _, lib := range storeLibraries {
		if path == lib {
			return true
		}
	}
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".") // the standard library
}
