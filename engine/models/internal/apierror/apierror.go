// Package apierror is the error the model providers return for a failed
// call: classified by what the caller can do about it, told in a sentence
// fit for the run page, and never showing the API key.
//
// Each provider reads the status and message out of its SDK's own error
// type and hands them to Source.Classify; everything else is shared.
package apierror

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind is the class of an Error: what went wrong, as far as the caller can
// act on it.
type Kind string

// The kinds of Error.
const (
	// KindAuth is a 401 or 403: the API key is missing, wrong or not allowed
	// to use the model.
	KindAuth Kind = "auth"
	// KindModelNotFound is a 404: the server does not know the model (or the
	// base URL does not point at the API root).
	KindModelNotFound Kind = "model_not_found"
	// KindRateLimited is a 429 that outlasted the retries.
	KindRateLimited Kind = "rate_limited"
	// KindServer is a 5xx, such as 529 overloaded, that outlasted the
	// retries.
	KindServer Kind = "server"
	// KindTimeout is a request that got no answer within the timeout (on
	// every attempt, where the SDK retries timeouts).
	KindTimeout Kind = "timeout"
	// KindCancelled is a request given up because its context ended; the
	// error wraps the context's error.
	KindCancelled Kind = "cancelled"
	// KindConnection is a server that could not be reached.
	KindConnection Kind = "connection"
	// KindBadRequest is any other refusal (a 4xx), or a request that could
	// not be built.
	KindBadRequest Kind = "bad_request"
	// KindBadResponse is an answer the provider cannot use.
	KindBadResponse Kind = "bad_response"
)

// MaxMessageBytes bounds the provider's explanation kept in an Error.
const MaxMessageBytes = 500

// statusOverloaded is the status Anthropic's API, and some gateways, answer
// when they are overloaded.
const statusOverloaded = 529

// Error is a failed model call. Its text says which kind of failure it is
// and what to check, in a sentence fit for the run page; it never contains
// the API key, which is removed from the provider's message and from the
// cause's text when the Error is made.
type Error struct {
	// Provider names the provider, such as openai; it opens the text.
	Provider string
	// Kind is the class of the failure.
	Kind Kind
	// StatusCode is the HTTP status of the last attempt, zero without one.
	StatusCode int
	// Model is the model name the request was for.
	Model string
	// Message is the provider's explanation, or the cause's text for a
	// connection failure, without the API key; it may be empty.
	Message string
	// Err is the cause: the SDK's error, or the context's for KindCancelled.
	// A cause whose text would show the API key is replaced by its redacted
	// text.
	Err error
}

// Error returns the provider's name, the kind's sentence, then the
// provider's message if any.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Provider != "" {
		b.WriteString(e.Provider)
		b.WriteString(": ")
	}
	b.WriteString(e.summary())
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// summary is the sentence for the kind, with the status when there is one.
func (e *Error) summary() string {
	status := ""
	if e.StatusCode != 0 {
		status = fmt.Sprintf(" (HTTP %d)", e.StatusCode)
	}
	switch e.Kind {
	case KindAuth:
		if e.StatusCode == http.StatusForbidden {
			return "access denied" + status + ": check the API key and that it may use model " + e.Model
		}
		return "authentication failed" + status + ": check the API key"
	case KindModelNotFound:
		return fmt.Sprintf("model %q not found%s: check the model name and the base URL", e.Model, status)
	case KindRateLimited:
		return "rate limited" + status + ": wait a little, or check the account's quota"
	case KindServer:
		if e.StatusCode == statusOverloaded {
			return "the API is overloaded" + status + ": try again later"
		}
		return "the server failed" + status + ": try again later"
	case KindTimeout:
		return "timed out" + status
	case KindCancelled:
		return "request cancelled"
	case KindConnection:
		return "cannot reach the server"
	case KindBadResponse:
		return "unusable response" + status
	default:
		return "request refused" + status
	}
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Source makes the Errors of one model. A provider's Model keeps one, built
// from its configuration.
type Source struct {
	// Provider names the provider; it opens the text of every Error.
	Provider string
	// Model is the model name requests are sent with.
	Model string
	// Timeout bounds each attempt; a timeout's message names it.
	Timeout time.Duration
	// Redact removes the API key from a text; see Redactor. It is a function
	// rather than the key, so that printing a Source cannot show the key.
	Redact func(string) string
}

// New returns an Error of kind caused by err, such as a request that could
// not be built or an answer that could not be read, with err's redacted text
// as its message.
func (s Source) New(kind Kind, err error) *Error {
	return &Error{Provider: s.Provider, Kind: kind, Model: s.Model, Message: s.Redact(err.Error()), Err: err}
}

// Status is what an SDK read from an error answer of the API: its HTTP
// status and the explanation in its body.
type Status struct {
	Code    int
	Message string
}

// Classify turns a failed SDK call into an *Error. err is the SDK's error;
// status is what the SDK read from the API's error answer, nil when err is
// no such answer; res is the last HTTP response, when there was one.
func (s Source) Classify(ctx context.Context, err error, status *Status, res *http.Response) *Error {
	e := &Error{Provider: s.Provider, Model: s.Model, Err: err}
	switch {
	case ctx.Err() != nil:
		e.Kind, e.Err, e.Message = KindCancelled, ctx.Err(), ctx.Err().Error()
	case status != nil:
		e.StatusCode, e.Message = status.Code, status.Message
	case res != nil && res.StatusCode >= 400:
		// An error body the SDK could not read, such as a proxy's HTML page.
		e.StatusCode = res.StatusCode
	case IsTimeout(err):
		e.Kind, e.Message = KindTimeout, fmt.Sprintf("no answer within %s", s.Timeout)
	case res != nil:
		// The server answered, but not with a body the SDK could read.
		e.Kind, e.Message = KindBadResponse, err.Error()
	default:
		e.Kind, e.Message = KindConnection, err.Error()
	}
	if e.StatusCode != 0 {
		e.Kind = KindOf(e.StatusCode)
	}
	if e.StatusCode == http.StatusUnauthorized {
		// Some servers echo part of the rejected key here.
		e.Message = ""
	}
	// Redact before clipping, so that no cut leaves part of the key.
	e.Message = Clip(strings.TrimSpace(s.Redact(e.Message)))
	// A cause whose text holds the key (an error body that echoes it) is
	// replaced by its redacted text, so that no error of the chain shows it.
	if text := e.Err.Error(); s.Redact(text) != text {
		e.Err = errors.New(s.Redact(text))
	}
	return e
}

// KindOf classifies an HTTP error status.
func KindOf(status int) Kind {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return KindAuth
	case status == http.StatusNotFound:
		return KindModelNotFound
	case status == http.StatusTooManyRequests:
		return KindRateLimited
	case status == http.StatusRequestTimeout:
		return KindTimeout
	case status >= 500:
		return KindServer
	default:
		return KindBadRequest
	}
}

// IsTimeout reports whether err is an attempt that ran out of time.
func IsTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Redactor returns a function that replaces key in a text; with no key, it
// returns the text as it is.
func Redactor(key string) func(string) string {
	if key == "" {
		return func(s string) string { return s }
	}
	return func(s string) string { return strings.ReplaceAll(s, key, "[redacted]") }
}

// Clip cuts s to MaxMessageBytes without splitting a rune, and marks the cut
// with an ellipsis.
func Clip(s string) string {
	if len(s) <= MaxMessageBytes {
		return s
	}
	n := MaxMessageBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
