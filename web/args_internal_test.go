package web

import (
	"strings"
	"testing"
)

func TestArgViews(t *testing.T) {
	args := argViews(`{"slug":"about","body":"# Hi\nthere","n":1.50,"tags":["a", "b"]}`)
	if len(args) != 4 || args[0].Key != "slug" || args[1].Value != "# Hi\nthere" || !args[1].Text ||
		args[2].Value != "1.50" || args[2].Text || args[3].Value != `["a","b"]` {
		t.Errorf("argViews: %+v", args)
	}
	for _, raw := range []string{"", "[1]", `{"a":`, `{"a":1} x`, "null"} {
		if got := argViews(raw); got != nil {
			t.Errorf("argViews(%q) = %+v, want nil", raw, got)
		}
	}
	long := strings.Repeat("word ", 100)
	got := callSummary(`{"slug":"about","body":"` + long + `"}`)
	if !strings.HasPrefix(got, `slug: "about", body: "word word`) || !strings.Contains(got, "(500 chars)") || len([]rune(got)) > summaryLen {
		t.Errorf("callSummary: %q", got)
	}
	if got := callSummary(`{}`); got != "" {
		t.Errorf("callSummary of no arguments: %q", got)
	}
}
