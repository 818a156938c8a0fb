// Package openai is a model provider for countersign that speaks the Chat
// Completions API through the official OpenAI Go SDK. Given a base URL it
// serves any OpenAI-compatible server as well: Ollama, vLLM, llama.cpp's
// server, LM Studio, OpenRouter.
//
// Generate maps the engine's provider-neutral transcript onto chat messages
// (the system messages joined into one, first; user; assistant with
// tool_calls; one tool message per answered call) and the offered tools onto
// function tools, then maps the reply back: its text, every tool call with
// its ID and its arguments exactly as the model wrote them (malformed JSON
// included: the loop answers such a call with an error result), the token
// usage, and whether the reply was cut off at the output limit.
//
// Failures come back as *Error, whose Kind says what went wrong. The SDK
// retries rate limits and server errors a bounded number of times, honouring
// Retry-After. No error text ever contains the API key.
package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"countersign/engine"
	"countersign/engine/models/internal/apiconfig"
	"countersign/engine/models/internal/apierror"
)

// Defaults of a Config.
const (
	// DefaultBaseURL is OpenAI's own API.
	DefaultBaseURL = "https://api.openai.com/v1"
	// DefaultMaxRetries is how many times a request that failed with a rate
	// limit, a server error or a lost connection is retried.
	DefaultMaxRetries = apiconfig.DefaultMaxRetries
	// DefaultTimeout bounds each attempt of a request.
	DefaultTimeout = apiconfig.DefaultTimeout
	// MaxRetryDelay bounds the wait before a retry. A server that asks for a
	// longer wait (Retry-After) gets no retry: the error is returned at once.
	MaxRetryDelay = apiconfig.MaxRetryDelay
)

// Config says which model to use and how to reach it.
type Config struct {
	// APIKey is sent as a bearer token. It may be empty for a local server
	// that needs none; the key in OPENAI_API_KEY is never used implicitly.
	APIKey string
	// BaseURL is the root of the API, up to and including /v1, such as
	// http://localhost:11434/v1 for Ollama. DefaultBaseURL when empty.
	BaseURL string
	// Model is the model name the server knows, such as gpt-4o-mini or qwen3.
	Model string
	// MaxTokens bounds the length of each reply. Zero leaves it to the
	// server. OpenAI's own API gets it as max_completion_tokens, which its
	// reasoning models require; any other server as max_tokens, which the
	// compatible servers take.
	MaxTokens int
	// Temperature is the sampling temperature, from 0 to 2; the server's
	// default when nil.
	Temperature *float64
	// HTTPClient sends the requests; the SDK's default client when nil.
	HTTPClient *http.Client
	// MaxRetries bounds the retries of a request that failed with 408, 409,
	// 429, a 5xx status or a lost connection. Zero means DefaultMaxRetries,
	// a negative value no retry at all.
	MaxRetries int
	// Timeout bounds each attempt of a request. Zero means DefaultTimeout.
	Timeout time.Duration
}

// Model is a chat model behind the Chat Completions API. It is safe for
// concurrent use.
type Model struct {
	client      sdk.Client
	model       string
	maxTokens   int
	temperature *float64
	// openAI says the server is OpenAI's own API, which takes the output
	// limit as max_completion_tokens.
	openAI  bool
	baseURL string
	// errs makes the errors of the calls. It keeps a function that removes
	// the API key from a text, not the key, so that printing a Model cannot
	// show it.
	errs apierror.Source
}

var _ engine.Model = (*Model)(nil)

// New returns the model cfg describes. It fails on a missing model name, a
// base URL that is not an absolute http(s) URL, a negative MaxTokens or a
// Temperature outside 0 to 2; it does not contact the server.
func New(cfg Config) (*Model, error) {
	name := strings.TrimSpace(cfg.Model)
	if name == "" {
		return nil, errors.New("openai: no model name")
	}
	base := strings.TrimSpace(cfg.BaseURL)
	if base == "" {
		base = DefaultBaseURL
	}
	if err := apiconfig.CheckBaseURL(base); err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("openai: max tokens %d is negative", cfg.MaxTokens)
	}
	var temperature *float64
	if t := cfg.Temperature; t != nil {
		if !(*t >= 0 && *t <= 2) {
			return nil, fmt.Errorf("openai: temperature %g is not between 0 and 2", *t)
		}
		v := *t
		temperature = &v
	}
	timeout := apiconfig.Timeout(cfg.Timeout)

	// The options come after the SDK's environment defaults and override
	// them: an empty key here means no key, not the one in OPENAI_API_KEY.
	opts := []option.RequestOption{
		option.WithAPIKey(cfg.APIKey),
		option.WithBaseURL(base),
		option.WithMaxRetries(apiconfig.Retries(cfg.MaxRetries)),
		option.WithMaxRetryDelay(MaxRetryDelay),
		option.WithRequestTimeout(timeout),
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Model{
		client:      sdk.NewClient(opts...),
		model:       name,
		maxTokens:   cfg.MaxTokens,
		temperature: temperature,
		openAI:      isOpenAI(base),
		baseURL:     apiconfig.DisplayURL(base),
		errs:        apierror.Source{Provider: "openai", Model: name, Timeout: timeout, Redact: apierror.Redactor(cfg.APIKey)},
	}, nil
}

// isOpenAI reports whether base is OpenAI's own API.
func isOpenAI(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

// Name returns the model name requests are sent with.
func (m *Model) Name() string { return m.model }

// Describe says what the model is and where it runs, for the playground.
func (m *Model) Describe() string {
	return fmt.Sprintf("OpenAI-compatible chat model %s at %s", m.model, m.baseURL)
}

// Generate sends the transcript and the offered tools as one chat completion
// request and returns the assistant message of the first choice with its
// usage. Its errors are *Error.
func (m *Model) Generate(ctx context.Context, req engine.ModelRequest) (engine.ModelResponse, error) {
	if err := ctx.Err(); err != nil {
		return engine.ModelResponse{}, m.classify(ctx, err, nil)
	}
	params, err := m.params(req)
	if err != nil {
		return engine.ModelResponse{}, m.errs.New(KindBadRequest, err)
	}
	var res *http.Response
	completion, err := m.client.Chat.Completions.New(ctx, params, option.WithResponseInto(&res))
	if err != nil {
		return engine.ModelResponse{}, m.classify(ctx, err, res)
	}
	resp, err := m.response(completion)
	if err != nil {
		return engine.ModelResponse{}, m.errs.New(KindBadResponse, err)
	}
	return resp, nil
}
