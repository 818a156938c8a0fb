package openai

import (
	"context"
	"net/http"
	"testing"

	"countersign/engine/models/internal/providertest"
)

func TestHTTPErrors(t *testing.T) {
	providertest.HTTPErrors(t, provider, []providertest.HTTPError{{
		Name:   "unauthorized",
		Reply:  errorReply(401, "Incorrect API key provided: "+providertest.Key+". You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_request_error", "invalid_api_key"),
		Kind:   KindAuth,
		Status: 401,
		Says:   []string{"authentication failed (HTTP 401): check the API key"},
	}, {
		Name:   "forbidden",
		Reply:  errorReply(403, "Project does not have access to model gpt-4o-mini (key "+providertest.Key+").", "invalid_request_error", "model_not_allowed"),
		Kind:   KindAuth,
		Status: 403,
		Says:   []string{"access denied (HTTP 403)", "check the API key", "Project does not have access", "[redacted]"},
	}, {
		Name:   "model not found",
		Reply:  errorReply(404, "The model `gpt-4o-mini` does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"),
		Kind:   KindModelNotFound,
		Status: 404,
		Says:   []string{`model "gpt-4o-mini" not found (HTTP 404)`, "does not exist"},
	}, {
		Name:   "bad request echoing the key",
		Reply:  errorReply(400, "Invalid header value 'Bearer "+providertest.Key+"'.", "invalid_request_error", ""),
		Kind:   KindBadRequest,
		Status: 400,
		Says:   []string{"request refused (HTTP 400)", "[redacted]"},
	}, {
		Name:   "server error",
		Reply:  errorReply(500, "The server had an error while processing your request. Sorry about that!", "server_error", ""),
		Kind:   KindServer,
		Status: 500,
		Says:   []string{"the server failed (HTTP 500)", "try again later"},
	}, {
		Name:   "proxy page that is not JSON",
		Reply:  providertest.BadGateway,
		Kind:   KindServer,
		Status: 502,
		Says:   []string{"the server failed (HTTP 502)"},
	}})
}

// rateLimited is a 429 with this message, type and code that asks to retry
// after wait seconds.
func rateLimited(wait, message, typ, code string) providertest.Reply {
	r := errorReply(429, message, typ, code)
	r.Header = map[string]string{"Retry-After": wait}
	return r
}

func TestRateLimitedThenSuccess(t *testing.T) {
	limited := rateLimited("0", "Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3, Requested 1.", "requests", "rate_limit_exceeded")
	providertest.RateLimitedThenSuccess(t, provider, limited, textReply("Hello.", 10, 2))
}

func TestRateLimitedForever(t *testing.T) {
	providertest.RateLimitedForever(t, provider, rateLimited("0", "Rate limit reached.", "requests", "rate_limit_exceeded"))
}

func TestRateLimitedTooLong(t *testing.T) {
	providertest.RateLimitedTooLong(t, provider, rateLimited("3600", "You exceeded your current quota.", "insufficient_quota", "insufficient_quota"))
}

func TestTimeout(t *testing.T)           { providertest.Timeout(t, provider) }
func TestCancelled(t *testing.T)         { providertest.Cancelled(t, provider) }
func TestCancelledBefore(t *testing.T)   { providertest.CancelledBefore(t, provider) }
func TestConnectionRefused(t *testing.T) { providertest.ConnectionRefused(t, provider) }
func TestGarbledResponse(t *testing.T)   { providertest.GarbledResponse(t, provider) }
func TestBadToolSchema(t *testing.T)     { providertest.BadToolSchema(t, provider) }

// A completion without choices is an unusable response.
func TestNoChoices(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Body: `{"id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini", "choices": []}`})
	_, err := newModel(t, config(srv)).Generate(context.Background(), providertest.Hello())
	providertest.AsError(t, provider, err, KindBadResponse)
}

// Error, an alias of apierror.Error, reads as this package's errors always
// have, its Provider in front.
func TestErrorTexts(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Provider: "openai", Kind: KindAuth, StatusCode: http.StatusUnauthorized, Model: "m"}, "openai: authentication failed (HTTP 401): check the API key"},
		{&Error{Provider: "openai", Kind: KindModelNotFound, StatusCode: 404, Model: "m", Message: "no such model"}, `openai: model "m" not found (HTTP 404): check the model name and the base URL: no such model`},
		{&Error{Provider: "openai", Kind: KindCancelled, Message: "context canceled"}, "openai: request cancelled: context canceled"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
