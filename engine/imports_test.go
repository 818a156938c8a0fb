package engine

import (
	"strings"
	"testing"

	"countersign/internal/importcheck"
)

// TestEngineImportsNoHTTPOrSQL holds the engine to its design: the standard
// library only, and of it nothing of HTTP or SQL.
func TestEngineImportsNoHTTPOrSQL(t *testing.T) {
	importcheck.Check(t, ".", 5, func(path string) string {
		switch {
		case !importcheck.Standard(path):
			return "the engine takes the standard library only"
		case strings.HasPrefix(path, "net/http"), strings.HasPrefix(path, "database/sql"), path == "net":
			return "the engine knows nothing of HTTP or SQL"
		}
		return ""
	})
}
