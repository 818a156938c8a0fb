package static

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

func serve(t *testing.T, h http.Handler, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

func TestEmbeddedAssets(t *testing.T) {
	a, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"app.css", "app.js"} {
		if !a.Has(name) {
			t.Fatalf("Has(%q) = false", name)
		}
	}
	if a.Has("vendor/README.md") || a.URL("vendor/README.md") != "" {
		t.Error("the vendor README is served")
	}
	if a.Has("nope.css") || a.URL("nope.css") != "" {
		t.Error("an unknown name has a URL")
	}
	if !regexp.MustCompile(`^/static/app\.[0-9a-f]{8}\.css$`).MatchString(a.URL("app.css")) {
		t.Errorf("URL(app.css) = %q", a.URL("app.css"))
	}
}

func TestServe(t *testing.T) {
	fsys := fstest.MapFS{
		"app.css":            {Data: []byte("body { color: red; }")},
		"app.js":             {Data: []byte("console.log(1)")},
		"vendor/htmx.min.js": {Data: []byte("var htmx = {}")},
		"vendor/README.md":   {Data: []byte("placeholder")},
	}
	a, err := NewFS(fsys)
	if err != nil {
		t.Fatal(err)
	}
	// The hash is of the content: a different file gets a different URL.
	b, err := NewFS(fstest.MapFS{"app.css": {Data: []byte("body { color: blue; }")}})
	if err != nil {
		t.Fatal(err)
	}
	if a.URL("app.css") == b.URL("app.css") {
		t.Errorf("changed content kept its URL %q", a.URL("app.css"))
	}
	htmx := a.URL("vendor/htmx.min.js")
	if !regexp.MustCompile(`^/static/vendor/htmx\.min\.[0-9a-f]{8}\.js$`).MatchString(htmx) {
		t.Errorf("URL(vendor/htmx.min.js) = %q", htmx)
	}

	tests := []struct {
		name, path, contentType, body string
	}{
		{"css", a.URL("app.css"), "text/css", "body { color: red; }"},
		{"js", a.URL("app.js"), "javascript", "console.log(1)"},
		{"vendor", htmx, "javascript", "var htmx = {}"},
		{"prefix stripped", strings.TrimPrefix(a.URL("app.css"), "/static"), "text/css", "body { color: red; }"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, a, http.MethodGet, tt.path)
			if rec.Code != http.StatusOK {
				t.Fatalf("GET %s: status %d", tt.path, rec.Code)
			}
			if got := rec.Header().Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
				t.Errorf("Cache-Control = %q", got)
			}
			if got := rec.Header().Get("Content-Type"); !strings.Contains(got, tt.contentType) {
				t.Errorf("Content-Type = %q, want %q", got, tt.contentType)
			}
			if rec.Body.String() != tt.body {
				t.Errorf("body = %q", rec.Body.String())
			}
		})
	}

	t.Run("not modified", func(t *testing.T) {
		rec := serve(t, a, http.MethodGet, a.URL("app.css"))
		req := httptest.NewRequest(http.MethodGet, a.URL("app.css"), nil)
		req.Header.Set("If-None-Match", rec.Header().Get("ETag"))
		rec = httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		if rec.Code != http.StatusNotModified {
			t.Errorf("status %d, want 304", rec.Code)
		}
	})

	for _, path := range []string{
		"/static/nope.3f2a9c1b.css",
		"/static/app.css",          // plain name
		"/static/app.00000000.css", // stale hash
		strings.Replace(a.URL("app.css"), "/static/app.", "/static/app.x", 1),
		"/static/vendor/README.md",
		"/static/",
	} {
		if rec := serve(t, a, http.MethodGet, path); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", path, rec.Code)
		}
	}

	if rec := serve(t, a, http.MethodPost, a.URL("app.css")); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: status %d, want 405", rec.Code)
	}
	if rec := serve(t, a, http.MethodHead, a.URL("app.css")); rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Errorf("HEAD: status %d, body %d bytes", rec.Code, rec.Body.Len())
	}
}
