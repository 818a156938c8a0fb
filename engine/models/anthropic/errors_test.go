package anthropic

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"countersign/engine"
)

// hello is the smallest request.
var hello = engine.ModelRequest{Messages: []engine.Message{{Role: engine.RoleUser, Content: "Hi"}}}

// asError fails unless err is an *Error of kind and returns it. It checks as
// well that no error of the chain has the API key in its text.
func asError(t *testing.T, err error, kind Kind) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want *Error, got %T: %v", err, err)
	}
	if e.Kind != kind {
		t.Errorf("kind %q, want %q (%v)", e.Kind, kind, err)
	}
	for x := err; x != nil; x = errors.Unwrap(x) {
		if strings.Contains(x.Error(), testKey) {
			t.Errorf("the text of %T in the chain contains the API key: %v", x, x)
		}
	}
	return e
}

// HTTP errors end the run with a model error whose text says what to check,
// without the API key, even where the server echoes it.
func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		name   string
		reply  reply
		kind   Kind
		status int
		says   []string
	}{
		{"unauthorized",
			errorReply(401, "authentication_error", "invalid x-api-key "+testKey),
			KindAuth, 401, []string{"authentication failed (HTTP 401): check the API key"}},
		{"forbidden",
			errorReply(403, "permission_error", "Your API key "+testKey+" does not have permission to use the specified resource."),
			KindAuth, 403, []string{"access denied (HTTP 403)", "check the API key", "does not have permission", "[redacted]"}},
		{"model not found",
			errorReply(404, "not_found_error", "model: claude-sonnet-4-5"),
			KindModelNotFound, 404, []string{`model "claude-sonnet-4-5" not found (HTTP 404)`, "model: claude-sonnet-4-5"}},
		{"invalid request echoing the key",
			errorReply(400, "invalid_request_error", "messages.1: key "+testKey+" is not a tool_use id"),
			KindBadRequest, 400, []string{"request refused (HTTP 400)", "[redacted]"}},
		{"server error",
			errorReply(500, "api_error", "Internal server error"),
			KindServer, 500, []string{"the server failed (HTTP 500)", "try again later"}},
		{"overloaded",
			errorReply(529, "overloaded_error", "Overloaded"),
			KindServer, 529, []string{"the API is overloaded (HTTP 529)"}},
		{"proxy page that is not JSON",
			reply{status: 502, header: map[string]string{"Content-Type": "text/html"}, body: "<html><body><h1>502 Bad Gateway</h1></body></html>"},
			KindServer, 502, []string{"the server failed (HTTP 502)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.reply)
			rec := &events{}
			_, err := newLoop(newModel(t, srv.config()), &journal{}, rec).Run(context.Background(), engine.Request{Prompt: "Count pricing."})
			var runErr *engine.RunError
			if !errors.As(err, &runErr) || runErr.Termination != engine.TermModelError {
				t.Fatalf("want a *engine.RunError ending in %s, got %v", engine.TermModelError, err)
			}
			t.Log(err)
			e := asError(t, err, tt.kind)
			if e.StatusCode != tt.status || e.Model != "claude-sonnet-4-5" {
				t.Errorf("status %d, model %q", e.StatusCode, e.Model)
			}
			for _, s := range tt.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if strings.Contains(rec.text(), testKey) {
				t.Errorf("an event contains the API key:\n%s", rec.text())
			}
			if n := srv.requests(); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

// rateLimited is a 429 that asks to retry after wait seconds.
func rateLimited(wait string) reply {
	r := errorReply(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit.")
	r.header["Retry-After"] = wait
	return r
}

// A 429 is retried after the Retry-After the server asks for, and the run
// goes on.
func TestRateLimitedThenSuccess(t *testing.T) {
	srv := newServer(t, rateLimited("0"), textReply("Hello.", 10, 2))
	cfg := srv.config()
	cfg.MaxRetries = 2
	res, err := newLoop(newModel(t, cfg), &journal{}, nil).Run(context.Background(), engine.Request{Prompt: "Hi"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Answer != "Hello." {
		t.Errorf("answer %q", res.Answer)
	}
	if n := srv.requests(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// A 429 that persists is retried MaxRetries times, then reported.
func TestRateLimitedForever(t *testing.T) {
	srv := newServer(t, rateLimited("0"), rateLimited("0"), rateLimited("0"))
	cfg := srv.config()
	cfg.MaxRetries = 2
	start := time.Now()
	_, err := newModel(t, cfg).Generate(context.Background(), hello)
	e := asError(t, err, KindRateLimited)
	if e.StatusCode != 429 || !strings.Contains(err.Error(), "rate limited (HTTP 429)") {
		t.Errorf("error %v", err)
	}
	if n := srv.requests(); n != 3 {
		t.Errorf("%d requests, want 3 (one and two retries)", n)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %s", d)
	}
}

// A server that asks to wait longer than MaxRetryDelay gets no retry.
func TestRateLimitedTooLong(t *testing.T) {
	srv := newServer(t, rateLimited("3600"))
	cfg := srv.config()
	cfg.MaxRetries = 2
	start := time.Now()
	_, err := newModel(t, cfg).Generate(context.Background(), hello)
	asError(t, err, KindRateLimited)
	if n := srv.requests(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %s", d)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{map[string]string{}, 0, false},
		{map[string]string{"Retry-After": "0"}, 0, true},
		{map[string]string{"Retry-After": "2.5"}, 2500 * time.Millisecond, true},
		{map[string]string{"Retry-After": "1e300"}, time.Duration(1<<63 - 1), true},
		{map[string]string{"Retry-After-Ms": "150", "Retry-After": "9"}, 150 * time.Millisecond, true},
		{map[string]string{"Retry-After": "Sun, 01 Mar 2026 12:01:00 GMT"}, time.Minute, true},
		{map[string]string{"Retry-After": "soon"}, 0, false},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		got, ok := retryAfter(h, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("retryAfter(%v) = %s, %v; want %s, %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}

// Attempts that get no answer within the timeout are a timeout.
func TestTimeout(t *testing.T) {
	srv := newServer(t, reply{hang: true})
	cfg := srv.config()
	cfg.Timeout = 100 * time.Millisecond
	start := time.Now()
	_, err := newModel(t, cfg).Generate(context.Background(), hello)
	e := asError(t, err, KindTimeout)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("errors.Is(err, context.DeadlineExceeded) is false: %v", err)
	}
	if !strings.Contains(e.Error(), "timed out: no answer within 100ms") {
		t.Errorf("error %q", e)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %s", d)
	}
}

// Cancelling the context gives up the request at once; the error wraps
// context.Canceled, and the loop ends the run as cancelled.
func TestCancelled(t *testing.T) {
	srv := newServer(t, reply{hang: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-srv.arrived
		cancel()
	}()
	start := time.Now()
	_, err := newLoop(newModel(t, srv.config()), &journal{}, nil).Run(ctx, engine.Request{Prompt: "Hi"})
	var runErr *engine.RunError
	if !errors.As(err, &runErr) || runErr.Termination != engine.TermCancelled {
		t.Fatalf("want a run cancelled, got %v", err)
	}
	asError(t, err, KindCancelled)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("errors.Is(err, context.Canceled) is false: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %s", d)
	}
}

// A context cancelled before the call sends nothing.
func TestCancelledBefore(t *testing.T) {
	srv := newServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newModel(t, srv.config()).Generate(ctx, hello)
	asError(t, err, KindCancelled)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("errors.Is(err, context.Canceled) is false: %v", err)
	}
	if n := srv.requests(); n != 0 {
		t.Errorf("%d requests, want none", n)
	}
}

// A server that cannot be reached is a connection error.
func TestConnectionRefused(t *testing.T) {
	srv := newServer(t)
	cfg := srv.config()
	srv.srv.Close()
	_, err := newModel(t, cfg).Generate(context.Background(), hello)
	e := asError(t, err, KindConnection)
	if !strings.Contains(e.Error(), "cannot reach the server") {
		t.Errorf("error %q", e)
	}
}

// A success whose body is not JSON is an unusable response.
func TestGarbledResponse(t *testing.T) {
	srv := newServer(t, reply{body: "<html>maintenance</html>"})
	_, err := newModel(t, srv.config()).Generate(context.Background(), hello)
	t.Log(err)
	asError(t, err, KindBadResponse)
}

// A tool schema that is not JSON is refused before anything is sent.
func TestBadToolSchema(t *testing.T) {
	srv := newServer(t)
	req := hello
	req.Tools = []engine.ToolSpec{{Name: "broken", Parameters: []byte("{not json")}}
	_, err := newModel(t, srv.config()).Generate(context.Background(), req)
	asError(t, err, KindBadRequest)
	if n := srv.requests(); n != 0 {
		t.Errorf("%d requests, want none", n)
	}
}

func TestErrorTexts(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Kind: KindAuth, StatusCode: http.StatusUnauthorized, Model: "m"}, "anthropic: authentication failed (HTTP 401): check the API key"},
		{&Error{Kind: KindModelNotFound, StatusCode: 404, Model: "m", Message: "model: m"}, `anthropic: model "m" not found (HTTP 404): check the model name and the base URL: model: m`},
		{&Error{Kind: KindCancelled, Message: "context canceled"}, "anthropic: request cancelled: context canceled"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
