// Package anthropic is a model provider for countersign that speaks the
// Messages API through the official Anthropic Go SDK.
//
// Generate maps the engine's provider-neutral transcript onto the Messages
// API: the system messages joined into the system parameter, user turns as
// text, assistant turns as text and tool_use blocks, and each run of tool
// results as one user message of tool_result blocks in call order, with
// is_error set on error results (a denial among them). It maps the reply
// back: its text, every tool_use block as a tool call with its ID and its
// input as the arguments, the token usage, and whether the reply was cut
// off at the output limit.
//
// Failures come back as *Error, whose Kind says what went wrong. The SDK
// retries rate limits and server errors a bounded number of times, honouring
// Retry-After. No error text ever contains the API key.
package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"countersign/engine"
	"countersign/engine/models/internal/apiconfig"
	"countersign/engine/models/internal/apierror"
)

// Defaults of a Config.
const (
	// DefaultBaseURL is Anthropic's own API.
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultMaxTokens bounds the length of each reply.
	DefaultMaxTokens = 1024
	// DefaultMaxRetries is how many times a request that failed with a rate
	// limit, a server error, a timeout or a lost connection is retried.
	DefaultMaxRetries = apiconfig.DefaultMaxRetries
	// DefaultTimeout bounds each attempt of a request.
	DefaultTimeout = apiconfig.DefaultTimeout
	// MaxRetryDelay bounds the wait before a retry. A server that asks for a
	// longer wait (Retry-After) gets no retry: the error is returned at once.
	MaxRetryDelay = apiconfig.MaxRetryDelay
)

// Config says which model to use and how to reach it.
type Config struct {
	// APIKey authenticates the requests. It is required unless BaseURL
	// points at a gateway of one's own; the key in ANTHROPIC_API_KEY is
	// never used implicitly.
	APIKey string
	// BaseURL is the root of the API, without /v1. DefaultBaseURL when empty.
	BaseURL string
	// Model is the model name, such as claude-sonnet-4-5.
	Model string
	// MaxTokens bounds the length of each reply. Zero means DefaultMaxTokens.
	MaxTokens int
	// HTTPClient sends the requests; the SDK's default client when nil.
	HTTPClient *http.Client
	// MaxRetries bounds the retries of a request that failed with 408, 409,
	// 429, a 5xx status, a timed-out attempt or a lost connection. Zero means
	// DefaultMaxRetries, a negative value no retry at all.
	MaxRetries int
	// Timeout bounds each attempt of a request. Zero means DefaultTimeout.
	Timeout time.Duration
}

// Model is a Claude model behind the Messages API. It is safe for
// concurrent use.
type Model struct {
	client    sdk.Client
	model     string
	maxTokens int
	baseURL   string
	// errs makes the errors of the calls. It keeps a function that removes
	// the API key from a text, not the key, so that printing a Model cannot
	// show it.
	errs apierror.Source
}

var _ engine.Model = (*Model)(nil)

// New returns the model cfg describes. It fails on a missing model name, a
// missing API key for Anthropic's own API, or a base URL that is not an
// absolute http(s) URL; it does not contact the server.
func New(cfg Config) (*Model, error) {
	name := strings.TrimSpace(cfg.Model)
	if name == "" {
		return nil, errors.New("anthropic: no model name")
	}
	base := strings.TrimSpace(cfg.BaseURL)
	if base == "" {
		if cfg.APIKey == "" {
			return nil, errors.New("anthropic: no API key (set ANTHROPIC_API_KEY)")
		}
		base = DefaultBaseURL
	}
	if err := apiconfig.CheckBaseURL(base); err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropic: max tokens %d is negative", cfg.MaxTokens)
	}
	maxTokens := cfg.MaxTokens
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	timeout := apiconfig.Timeout(cfg.Timeout)

	// Nothing comes from the environment: the configuration is all there is.
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base),
		option.WithMaxRetries(apiconfig.Retries(cfg.MaxRetries)),
		option.WithRequestTimeout(timeout),
		option.WithMiddleware(capRetryAfter(MaxRetryDelay)),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Model{
		client:    sdk.NewClient(opts...),
		model:     name,
		maxTokens: maxTokens,
		baseURL:   apiconfig.DisplayURL(base),
		errs:      apierror.Source{Provider: "anthropic", Model: name, Timeout: timeout, Redact: apierror.Redactor(cfg.APIKey)},
	}, nil
}

// Name returns the model name requests are sent with.
func (m *Model) Name() string { return m.model }

// Describe says what the model is and where it runs, for the playground.
func (m *Model) Describe() string {
	return fmt.Sprintf("Anthropic model %s at %s", m.model, m.baseURL)
}

// Generate sends the transcript and the offered tools as one Messages API
// request and returns the reply as one assistant message with its usage.
// Its errors are *Error.
func (m *Model) Generate(ctx context.Context, req engine.ModelRequest) (engine.ModelResponse, error) {
	if err := ctx.Err(); err != nil {
		return engine.ModelResponse{}, m.classify(ctx, err, nil)
	}
	params, err := m.params(req)
	if err != nil {
		return engine.ModelResponse{}, m.errs.New(KindBadRequest, err)
	}
	var res *http.Response
	msg, err := m.client.Messages.New(ctx, params, option.WithResponseInto(&res))
	if err != nil {
		return engine.ModelResponse{}, m.classify(ctx, err, res)
	}
	return response(msg), nil
}
