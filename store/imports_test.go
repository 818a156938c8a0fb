package store

import (
	"slices"
	"strings"
	"testing"

	"countersign/internal/importcheck"
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
	importcheck.Check(t, ".", 5, func(path string) string {
		if storeMayImport(path) {
			return ""
		}
		return "the store takes the standard library, countersign/engine, countersign/migrations and " +
			strings.Join(storeLibraries, ", ") + " only"
	})
}

func storeMayImport(path string) bool {
	switch {
	case path == "countersign/engine", strings.HasPrefix(path, "countersign/engine/"),
		path == "countersign/migrations":
		return true
	case path == "countersign" || strings.HasPrefix(path, "countersign/"):
		return false
	}
	return slices.Contains(storeLibraries, path) || importcheck.Standard(path)
}
