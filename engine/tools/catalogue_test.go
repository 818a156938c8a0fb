package tools

import (
	"maps"
	"slices"
	"testing"

	"countersign/engine"
)

func TestCatalogue(t *testing.T) {
	cat := Catalogue(NewMemory(fixedNow), fixedNow)
	want := []string{"ask_operator", "create_page", "current_time", "delete_page", "get_page", "list_pages",
		"publish_page", "search_pages", "update_page", "word_count"}
	if got := slices.Sorted(maps.Keys(cat)); !slices.Equal(got, want) {
		t.Fatalf("catalogue %v, want %v", got, want)
	}
	for name, tl := range cat {
		if tl.Name() != name {
			t.Errorf("%s holds the tool %s", name, tl.Name())
		}
	}
	if engine.KindOf(cat["ask_operator"]) != engine.CallQuestion || engine.KindOf(cat["delete_page"]) != engine.CallWrite ||
		engine.KindOf(cat["get_page"]) != engine.CallRead {
		t.Error("the catalogue's tools lost their kinds")
	}
}
