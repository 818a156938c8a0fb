package apierror

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

const key = "sk-test-COUNTERSIGN-7f3a9c1e5b"

// source is the Source of the tests' errors.
var source = Source{Provider: "openai", Model: "m", Timeout: 100 * time.Millisecond, Redact: Redactor(key)}

func TestErrorTexts(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Provider: "openai", Kind: KindAuth, StatusCode: 401, Model: "m"}, "openai: authentication failed (HTTP 401): check the API key"},
		{&Error{Provider: "openai", Kind: KindAuth, StatusCode: 403, Model: "m"}, "openai: access denied (HTTP 403): check the API key and that it may use model m"},
		{&Error{Provider: "openai", Kind: KindModelNotFound, StatusCode: 404, Model: "m", Message: "no such model"}, `openai: model "m" not found (HTTP 404): check the model name and the base URL: no such model`},
		{&Error{Provider: "openai", Kind: KindRateLimited, StatusCode: 429}, "openai: rate limited (HTTP 429): wait a little, or check the account's quota"},
		{&Error{Provider: "anthropic", Kind: KindServer, StatusCode: 500}, "anthropic: the server failed (HTTP 500): try again later"},
		{&Error{Provider: "anthropic", Kind: KindServer, StatusCode: 529, Message: "Overloaded"}, "anthropic: the API is overloaded (HTTP 529): try again later: Overloaded"},
		{&Error{Provider: "openai", Kind: KindServer, StatusCode: 529}, "openai: the API is overloaded (HTTP 529): try again later"},
		{&Error{Provider: "openai", Kind: KindTimeout, Message: "no answer within 1s"}, "openai: timed out: no answer within 1s"},
		{&Error{Provider: "openai", Kind: KindCancelled, Message: "context canceled"}, "openai: request cancelled: context canceled"},
		{&Error{Provider: "openai", Kind: KindConnection}, "openai: cannot reach the server"},
		{&Error{Provider: "openai", Kind: KindBadResponse, StatusCode: 200}, "openai: unusable response (HTTP 200)"},
		{&Error{Provider: "openai", Kind: KindBadRequest, StatusCode: 400}, "openai: request refused (HTTP 400)"},
		{&Error{Kind: KindBadRequest}, "request refused"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestKindOf(t *testing.T) {
	tests := map[int]Kind{
		400: KindBadRequest, 401: KindAuth, 403: KindAuth, 404: KindModelNotFound, 408: KindTimeout,
		409: KindBadRequest, 422: KindBadRequest, 429: KindRateLimited, 500: KindServer, 502: KindServer, 529: KindServer,
	}
	for status, want := range tests {
		if got := KindOf(status); got != want {
			t.Errorf("KindOf(%d) = %q, want %q", status, got, want)
		}
	}
}

// timeoutError is a net.Error that timed out.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestClassify(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	sdkErr := errors.New("POST /v1: 401 Unauthorized " + key)
	tests := []struct {
		name    string
		ctx     context.Context
		err     error
		status  *Status
		res     *http.Response
		kind    Kind
		code    int
		message string
	}{
		{"cancelled wins", cancelled, sdkErr, &Status{Code: 500}, nil, KindCancelled, 0, "context canceled"},
		{"API error", context.Background(), sdkErr, &Status{Code: 404, Message: " no model " + key + " "}, nil, KindModelNotFound, 404, "no model [redacted]"},
		{"401 drops the message", context.Background(), sdkErr, &Status{Code: 401, Message: "bad key " + key}, nil, KindAuth, 401, ""},
		{"unreadable error body", context.Background(), errors.New("garbled"), nil, &http.Response{StatusCode: 502}, KindServer, 502, ""},
		{"deadline", context.Background(), context.DeadlineExceeded, nil, nil, KindTimeout, 0, "no answer within 100ms"},
		{"net timeout", context.Background(), timeoutError{}, nil, nil, KindTimeout, 0, "no answer within 100ms"},
		{"unreadable success", context.Background(), errors.New("invalid character '<'"), nil, &http.Response{StatusCode: 200}, KindBadResponse, 0, "invalid character '<'"},
		{"unreachable", context.Background(), errors.New("connection refused"), nil, nil, KindConnection, 0, "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := source.Classify(tt.ctx, tt.err, tt.status, tt.res)
			if e.Kind != tt.kind || e.StatusCode != tt.code || e.Message != tt.message || e.Provider != "openai" || e.Model != "m" {
				t.Errorf("got %+v", e)
			}
			for x := error(e); x != nil; x = errors.Unwrap(x) {
				if strings.Contains(x.Error(), key) {
					t.Errorf("the text of %T in the chain contains the key: %v", x, x)
				}
			}
		})
	}
}

// A cancelled call wraps the context's error; any other wraps the SDK's.
func TestClassifyKeepsCause(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if e := source.Classify(cancelled, errors.New("sdk"), nil, nil); !errors.Is(e, context.Canceled) {
		t.Errorf("cancelled: %v does not wrap context.Canceled", e)
	}
	cause := errors.New("sdk")
	if e := source.Classify(context.Background(), cause, &Status{Code: 500}, nil); !errors.Is(e, cause) {
		t.Errorf("%v does not wrap its cause", e)
	}
}

// The message is redacted before it is clipped, so that no cut leaves part
// of the key.
func TestClassifyRedactsBeforeClipping(t *testing.T) {
	msg := strings.Repeat("x", MaxMessageBytes-5) + key
	e := source.Classify(context.Background(), errors.New("sdk"), &Status{Code: 400, Message: msg}, nil)
	if strings.Contains(e.Message, key[:5]) {
		t.Errorf("message keeps part of the key: %q", e.Message)
	}
}

func TestNew(t *testing.T) {
	cause := errors.New("tool " + key + " has no schema")
	e := source.New(KindBadRequest, cause)
	if e.Kind != KindBadRequest || e.Model != "m" || e.Message != "tool [redacted] has no schema" || !errors.Is(e, cause) {
		t.Errorf("got %+v", e)
	}
	if got, want := e.Error(), "openai: request refused: tool [redacted] has no schema"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestRedactor(t *testing.T) {
	if got := Redactor(key)("a " + key + " b " + key); got != "a [redacted] b [redacted]" {
		t.Errorf("Redactor(key) gave %q", got)
	}
	if got := Redactor("")("a b"); got != "a b" {
		t.Errorf("Redactor(\"\") gave %q", got)
	}
}

func TestClipKeepsRunes(t *testing.T) {
	s := strings.Repeat("é", MaxMessageBytes)
	got := Clip(s)
	if !strings.HasSuffix(got, "…") || len(got) > MaxMessageBytes+len("…") || !strings.HasPrefix(s, strings.TrimSuffix(got, "…")) {
		t.Errorf("Clip cut badly: %d bytes", len(got))
	}
	if short := "short"; Clip(short) != short {
		t.Errorf("Clip changed a short text")
	}
}
