package web_test

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/pb33f/libopenapi"

	"countersign/app"
)

// TestOpenAPIDocumentIsValid checks the description with libopenapi: it
// parses as OpenAPI 3.1 and validates against the OpenAPI schema.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	v := openAPIValidator(t)
	specMu.Lock()
	ok, errs := v.ValidateDocument()
	specMu.Unlock()
	if !ok {
		for _, e := range errs {
			t.Errorf("openapi.json: %s (%s)", e.Message, e.Reason)
		}
	}
	b, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocument(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.GetVersion(); got != "3.1.0" {
		t.Errorf("OpenAPI version %q, want 3.1.0", got)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("build model: %v", err)
	}
	// Every operation describes its answers, each with a schema.
	for path, item := range model.Model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			if op.Responses == nil || op.Responses.Codes.Len() == 0 {
				t.Errorf("%s %s: no responses", method, path)
				continue
			}
			for code, res := range op.Responses.Codes.FromOldest() {
				if res.Content == nil || res.Content.Len() == 0 {
					t.Errorf("%s %s %s: no content", method, path, code)
					continue
				}
				for mt, media := range res.Content.FromOldest() {
					if media.Schema == nil {
						t.Errorf("%s %s %s %s: no schema", method, path, code, mt)
					}
				}
			}
		}
	}
}

// TestOpenAPIMatchesRoutes checks that every route of the app under /api/v1
// is described and that every described operation is a route.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocument(b)
	if err != nil {
		t.Fatal(err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("build model: %v", err)
	}
	described := map[string]bool{}
	param := regexp.MustCompile(`\{([^}]+)\}`)
	for path, item := range model.Model.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().FromOldest() {
			described[strings.ToUpper(method)+" "+param.ReplaceAllString(path, ":$1")] = true
		}
	}
	routed := map[string]bool{}
	for _, r := range apiRoutesOf(t) {
		routed[r] = true
	}
	for r := range routed {
		if !described[r] {
			t.Errorf("route %s is not in openapi.json", r)
		}
	}
	for d := range described {
		if !routed[d] {
			t.Errorf("openapi.json describes %s, which is not a route", d)
		}
	}
	if len(routed) < 8 {
		t.Errorf("only %d API routes: %v", len(routed), keys(routed))
	}
}

// apiRoutesOf lists the app's routes under /api/v1 as "METHOD /path/:param".
func apiRoutesOf(t *testing.T) []string {
	t.Helper()
	a, err := app.New(t.Context(), app.Config{DBPath: filepath.Join(t.TempDir(), "routes.db"), SessionKey: []byte(testSessionKey),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	defer a.Close()
	e, ok := a.Handler.(*echo.Echo)
	if !ok {
		t.Fatalf("the app's handler is a %T, not Echo", a.Handler)
	}
	var out []string
	for _, r := range e.Routes() {
		if strings.HasPrefix(r.Path, "/api/v1/") && r.Method != echo.RouteNotFound {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return out
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestOpenAPIServed serves the description, without a token, as it is in
// the repository.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	a := newTestApp(t, withoutWorkers())
	res := a.anonymousAPI().call(http.MethodGet, "/api/v1/openapi.json", nil)
	mustAPIStatus(t, res, http.StatusOK)
	want, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(res.body) != string(want) {
		t.Error("the served description differs from openapi.json")
	}
}
