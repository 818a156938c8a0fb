package views

import (
	"strings"
	"testing"

	"countersign/internal/importcheck"
)

// TestViewsImports holds views to its design: the standard library and templ
// only. Handlers fill plain view structs; views knows nothing of the engine,
// the store or the web layer, and no other library.
func TestViewsImports(t *testing.T) {
	importcheck.Check(t, ".", 5, func(path string) string {
		switch {
		case path == "github.com/a-h/templ", strings.HasPrefix(path, "github.com/a-h/templ/"), importcheck.Standard(path):
			return ""
		case path == "countersign" || strings.HasPrefix(path, "countersign/"):
			return "views knows nothing of the engine, the store or the web layer"
		}
		return "views takes the standard library and templ only"
	})
}
