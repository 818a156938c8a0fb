package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/content"
	verrors "github.com/pb33f/libopenapi-validator/errors"
)

// The OpenAPI description, loaded once for every API test: each exchange
// of the API tests is validated against it.
var (
	specOnce      sync.Once
	specValidator validator.Validator
	specErr       error
	specMu        sync.Mutex // the validator is not documented as safe for concurrent use
)

// mimeNDJSON is the media type of the audit record.
const mimeNDJSON = "application/x-ndjson"

// openAPIValidator returns the validator of web/openapi.json.
func openAPIValidator(t testing.TB) validator.Validator {
	t.Helper()
	specOnce.Do(func() {
		b, err := os.ReadFile("openapi.json")
		if err != nil {
			specErr = err
			return
		}
		doc, err := libopenapi.NewDocument(b)
		if err != nil {
			specErr = err
			return
		}
		// JSON lines are text to the description (OpenAPI 3.1 has no
		// schema per line); the tests parse each line themselves.
		v, errs := validator.NewValidator(doc, config.WithBodyDecoder(mimeNDJSON, content.TextDecoder()))
		if len(errs) > 0 {
			specErr = errs[0]
			return
		}
		specValidator = v
	})
	if specErr != nil {
		t.Fatalf("load openapi.json: %v", specErr)
	}
	return specValidator
}

// apiClient calls the JSON API with a bearer token, and checks every
// request it sends as valid (unless told it is not) and every answer
// against the OpenAPI description.
type apiClient struct {
	t       testing.TB
	app     *testApp
	token   string
	tokenID int64
}

// api returns a client of the API with a new token of the user name.
func (a *testApp) api(name string) *apiClient {
	a.t.Helper()
	u, ok := a.users[name]
	if !ok {
		a.t.Fatalf("no user %s", name)
	}
	tok, secret, err := a.db.CreateToken(context.Background(), u.ID, "test")
	if err != nil {
		a.t.Fatalf("create token for %s: %v", name, err)
	}
	return &apiClient{t: a.t, app: a, token: secret, tokenID: tok.ID}
}

// anonymousAPI returns a client of the API without a token.
func (a *testApp) anonymousAPI() *apiClient { return &apiClient{t: a.t, app: a} }

// with returns the client for a subtest.
func (c *apiClient) with(t *testing.T) *apiClient {
	return &apiClient{t: t, app: c.app, token: c.token}
}

// apiResponse is an answer of the API with its body read.
type apiResponse struct {
	*http.Response
	body []byte
}

// decode decodes the answer's JSON into v.
func (r *apiResponse) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("%s %s: decode %s: %v", r.Request.Method, r.Request.URL.Path, clip(string(r.body), 500), err)
	}
}

// problem decodes the answer as a problem.
func (r *apiResponse) problem(t testing.TB) apiProblem {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Fatalf("%s %s: Content-Type %q, want application/problem+json", r.Request.Method, r.Request.URL.Path, ct)
	}
	var p apiProblem
	r.decode(t, &p)
	return p
}

// apiProblem is a problem answer as the tests read it.
type apiProblem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Instance  string `json:"instance"`
	DecidedBy string `json:"decided_by"`
	Errors    []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"errors"`
}

// field returns the first field the problem names.
func (p apiProblem) field() string {
	if len(p.Errors) == 0 {
		return ""
	}
	return p.Errors[0].Field
}

// callOpt changes a request of the API before it is sent.
type callOpt func(*callOpts)

type callOpts struct {
	invalid     bool
	undoc       bool
	contentType string
	headers     map[string]string
	raw         []byte
}

// invalidRequest marks a request the test sends on purpose against the
// description: only its answer is validated.
func invalidRequest() callOpt { return func(o *callOpts) { o.invalid = true } }

// undocumented marks a request to an address or method the description
// does not have: the exchange is not validated, only checked by the test.
func undocumented() callOpt { return func(o *callOpts) { o.undoc = true } }

// withContentType sends the body with another Content-Type.
func withContentType(ct string) callOpt { return func(o *callOpts) { o.contentType = ct } }

// withHeader sets a request header.
func withHeader(k, v string) callOpt {
	return func(o *callOpts) {
		if o.headers == nil {
			o.headers = map[string]string{}
		}
		o.headers[k] = v
	}
}

// rawBody sends b as the body as it is.
func rawBody(b []byte) callOpt { return func(o *callOpts) { o.raw = b } }

// call sends a request to the API: body, when not nil, as JSON. It fails
// the test when the request (unless invalidRequest) or the answer does not
// match the OpenAPI description.
func (c *apiClient) call(method, path string, body any, opts ...callOpt) *apiResponse {
	c.t.Helper()
	o := callOpts{contentType: "application/json"}
	for _, opt := range opts {
		opt(&o)
	}
	var payload []byte
	switch {
	case o.raw != nil:
		payload = o.raw
	case body != nil:
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatalf("encode body: %v", err)
		}
		payload = b
	}
	req, err := http.NewRequest(method, c.app.srv.URL+path, bytes.NewReader(payload))
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	if payload != nil && o.contentType != "" {
		req.Header.Set("Content-Type", o.contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range o.headers {
		req.Header.Set(k, v)
	}
	client := &http.Client{Timeout: 60 * time.Second}
	res, err := client.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	if !o.undoc {
		c.validate(req, payload, res, got, !o.invalid)
	}
	return &apiResponse{Response: res, body: got}
}

// validate checks an exchange against the OpenAPI description.
func (c *apiClient) validate(req *http.Request, payload []byte, res *http.Response, body []byte, checkRequest bool) {
	c.t.Helper()
	v := openAPIValidator(c.t)
	vreq := req.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(payload))
	vres := *res
	vres.Body = io.NopCloser(bytes.NewReader(body))
	vres.Request = vreq
	specMu.Lock()
	defer specMu.Unlock()
	if checkRequest {
		if ok, errs := v.ValidateHttpRequest(vreq); !ok {
			for _, e := range errs {
				c.t.Errorf("%s %s: request does not match openapi.json: %s (%s)%s", req.Method, req.URL.Path, e.Message, e.Reason,
					schemaFailures(e))
			}
		}
		vreq.Body = io.NopCloser(bytes.NewReader(payload))
	}
	if ok, errs := v.ValidateHttpResponse(vreq, &vres); !ok {
		for _, e := range errs {
			c.t.Errorf("%s %s: %d answer does not match openapi.json: %s (%s)%s\n%s", req.Method, req.URL.Path, res.StatusCode,
				e.Message, e.Reason, schemaFailures(e), clip(string(body), 1000))
		}
	}
}

// schemaFailures lists where a body fails its schema.
func schemaFailures(e *verrors.ValidationError) string {
	var b strings.Builder
	for _, f := range e.SchemaValidationErrors {
		fmt.Fprintf(&b, "\n\t%s: %s", f.FieldPath, f.Reason)
	}
	return b.String()
}

// mustAPIStatus fails the test unless the answer has status want.
func mustAPIStatus(t testing.TB, r *apiResponse, want int) {
	t.Helper()
	if r.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d\n%s", r.Request.Method, r.Request.URL.Path, r.StatusCode, want, clip(string(r.body), 2000))
	}
}

// mustProblem fails the test unless the answer is a problem with status
// want that leaks no internals; it returns the problem.
func mustProblem(t testing.TB, r *apiResponse, want int) apiProblem {
	t.Helper()
	mustAPIStatus(t, r, want)
	p := r.problem(t)
	if p.Status != want || p.Title == "" || p.Detail == "" || !strings.HasPrefix(p.Type, "urn:countersign:problem:") ||
		p.Instance != r.Request.URL.Path {
		t.Errorf("%s %s: problem %+v is not complete", r.Request.Method, r.Request.URL.Path, p)
	}
	for _, bad := range []string{"goroutine", "panic", ".go:", "sqlite3", "SELECT "} {
		if strings.Contains(string(r.body), bad) {
			t.Errorf("%s %s: problem leaks %q: %s", r.Request.Method, r.Request.URL.Path, bad, r.body)
		}
	}
	return p
}

// ---- shapes the tests read ----

type apiRunBody struct {
	ID          string  `json:"id"`
	Agent       string  `json:"agent"`
	Status      string  `json:"status"`
	InitiatedBy string  `json:"initiated_by"`
	FinalAnswer *string `json:"final_answer"`
	LastSeq     int64   `json:"last_seq"`
	Outcome     struct {
		Label     string   `json:"label"`
		DecidedBy []string `json:"decided_by"`
	} `json:"outcome"`
	Pending *struct {
		Digest        string `json:"digest"`
		YouMayApprove bool   `json:"you_may_approve"`
		Calls         []struct {
			ID            string          `json:"id"`
			Tool          string          `json:"tool"`
			Kind          string          `json:"kind"`
			NeedsApproval bool            `json:"needs_approval"`
			Arguments     json.RawMessage `json:"arguments"`
			Preview       *struct {
				Text    string `json:"text"`
				Warning bool   `json:"warning"`
			} `json:"preview"`
		} `json:"calls"`
	} `json:"pending"`
	Audit *struct {
		Intact bool `json:"intact"`
	} `json:"audit"`
}

type apiEventsBody struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`
	Events []struct {
		Seq  int64  `json:"seq"`
		Kind string `json:"kind"`
		Text string `json:"text"`
		By   string `json:"by"`
	} `json:"events"`
	NextAfter int64 `json:"next_after"`
}

// getRun reads a run through the API.
func (c *apiClient) getRun(id string) apiRunBody {
	c.t.Helper()
	res := c.call(http.MethodGet, "/api/v1/runs/"+id, nil)
	mustAPIStatus(c.t, res, http.StatusOK)
	var r apiRunBody
	res.decode(c.t, &r)
	return r
}
