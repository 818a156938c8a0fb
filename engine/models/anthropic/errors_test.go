package anthropic

import (
	"net/http"
	"testing"
	"time"

	"countersign/engine/models/internal/providertest"
)

func TestHTTPErrors(t *testing.T) {
	providertest.HTTPErrors(t, provider, []providertest.HTTPError{{
		Name:   "unauthorized",
		Reply:  errorReply(401, "authentication_error", "invalid x-api-key "+providertest.Key),
		Kind:   KindAuth,
		Status: 401,
		Says:   []string{"authentication failed (HTTP 401): check the API key"},
	}, {
		Name:   "forbidden",
		Reply:  errorReply(403, "permission_error", "Your API key "+providertest.Key+" does not have permission to use the specified resource."),
		Kind:   KindAuth,
		Status: 403,
		Says:   []string{"access denied (HTTP 403)", "check the API key", "does not have permission", "[redacted]"},
	}, {
		Name:   "model not found",
		Reply:  errorReply(404, "not_found_error", "model: claude-sonnet-4-5"),
		Kind:   KindModelNotFound,
		Status: 404,
		Says:   []string{`model "claude-sonnet-4-5" not found (HTTP 404)`, "model: claude-sonnet-4-5"},
	}, {
		Name:   "invalid request echoing the key",
		Reply:  errorReply(400, "invalid_request_error", "messages.1: key "+providertest.Key+" is not a tool_use id"),
		Kind:   KindBadRequest,
		Status: 400,
		Says:   []string{"request refused (HTTP 400)", "[redacted]"},
	}, {
		Name:   "server error",
		Reply:  errorReply(500, "api_error", "Internal server error"),
		Kind:   KindServer,
		Status: 500,
		Says:   []string{"the server failed (HTTP 500)", "try again later"},
	}, {
		Name:   "overloaded",
		Reply:  errorReply(529, "overloaded_error", "Overloaded"),
		Kind:   KindServer,
		Status: 529,
		Says:   []string{"the API is overloaded (HTTP 529)"},
	}, {
		Name:   "proxy page that is not JSON",
		Reply:  providertest.BadGateway,
		Kind:   KindServer,
		Status: 502,
		Says:   []string{"the server failed (HTTP 502)"},
	}})
}

// rateLimited is a 429 that asks to retry after wait seconds.
func rateLimited(wait string) providertest.Reply {
	r := errorReply(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit.")
	r.Header["Retry-After"] = wait
	return r
}

func TestRateLimitedThenSuccess(t *testing.T) {
	providertest.RateLimitedThenSuccess(t, provider, rateLimited("0"), textReply("Hello.", 10, 2))
}

func TestRateLimitedForever(t *testing.T) {
	providertest.RateLimitedForever(t, provider, rateLimited("0"))
}

func TestRateLimitedTooLong(t *testing.T) {
	providertest.RateLimitedTooLong(t, provider, rateLimited("3600"))
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

func TestTimeout(t *testing.T)           { providertest.Timeout(t, provider) }
func TestCancelled(t *testing.T)         { providertest.Cancelled(t, provider) }
func TestCancelledBefore(t *testing.T)   { providertest.CancelledBefore(t, provider) }
func TestConnectionRefused(t *testing.T) { providertest.ConnectionRefused(t, provider) }
func TestGarbledResponse(t *testing.T)   { providertest.GarbledResponse(t, provider) }
func TestBadToolSchema(t *testing.T)     { providertest.BadToolSchema(t, provider) }

// Error, an alias of apierror.Error, reads as this package's errors always
// have, its Provider in front.
func TestErrorTexts(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Provider: "anthropic", Kind: KindAuth, StatusCode: http.StatusUnauthorized, Model: "m"}, "anthropic: authentication failed (HTTP 401): check the API key"},
		{&Error{Provider: "anthropic", Kind: KindModelNotFound, StatusCode: 404, Model: "m", Message: "model: m"}, `anthropic: model "m" not found (HTTP 404): check the model name and the base URL: model: m`},
		{&Error{Provider: "anthropic", Kind: KindCancelled, Message: "context canceled"}, "anthropic: request cancelled: context canceled"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
