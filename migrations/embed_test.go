package migrations

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

func TestFilesAreNumberedGooseMigrations(t *testing.T) {
	names, err := fs.Glob(FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no migrations embedded")
	}
	numbered := regexp.MustCompile(`^\d{5}_[a-z0-9_]+\.sql$`)
	for _, name := range names {
		if !numbered.MatchString(name) {
			t.Errorf("%s: want NNNNN_name.sql", name)
		}
		b, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if !strings.Contains(text, "-- +goose Up") || !strings.Contains(text, "-- +goose Down") {
			t.Errorf("%s: want goose Up and Down sections", name)
		}
	}
}
