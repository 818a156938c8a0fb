package importcheck

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that keeps failures instead of failing.
type recorder struct {
	testing.TB
	errors int
	fatal  bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.errors++ }
func (r *recorder) Fatalf(string, ...any) { r.fatal = true }
func (r *recorder) Fatal(...any)          { r.fatal = true }

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", "package p\nimport (\n\t\"fmt\"\n\t\"countersign/web\"\n)\n")
	write("b.go", "package p\nimport \"github.com/x/y\"\n")
	write("c_test.go", "package p\nimport \"countersign/store\"\n")
	refuse := func(path string) string {
		if Standard(path) {
			return ""
		}
		return "not allowed"
	}
	r := &recorder{TB: t}
	Check(r, dir, 2, refuse)
	if r.errors != 2 || r.fatal {
		t.Fatalf("errors %d fatal %v, want the two forbidden imports of the non-test files", r.errors, r.fatal)
	}
	r = &recorder{TB: t}
	Check(r, dir, 3, refuse)
	if !r.fatal {
		t.Fatal("fewer files than the minimum passed")
	}
}
