// Package apiconfig is the part of the model providers' configuration that
// does not depend on the provider: the retry and timeout defaults, and how a
// base URL is checked and shown.
package apiconfig

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Defaults the providers share; each provider exports them under its own
// name, documented for its SDK.
const (
	// DefaultMaxRetries is how many times a failed request that may succeed
	// on another attempt is retried.
	DefaultMaxRetries = 2
	// DefaultTimeout bounds each attempt of a request.
	DefaultTimeout = 2 * time.Minute
	// MaxRetryDelay bounds the wait before a retry. A server that asks for a
	// longer wait (Retry-After) gets no retry: the error is returned at once.
	MaxRetryDelay = 30 * time.Second
)

// Retries returns how many retries a configured MaxRetries of n asks for:
// zero means DefaultMaxRetries, a negative value no retry at all.
func Retries(n int) int {
	switch {
	case n == 0:
		return DefaultMaxRetries
	case n < 0:
		return 0
	}
	return n
}

// Timeout returns the attempt timeout a configured Timeout of d asks for:
// DefaultTimeout unless d is positive.
func Timeout(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultTimeout
	}
	return d
}

// CheckBaseURL returns an error unless raw is an absolute http(s) URL. The
// error shows the URL as DisplayURL does.
func CheckBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("base URL %q is not an absolute http(s) URL", DisplayURL(raw))
	}
	return nil
}

// DisplayURL returns raw without user information, query or fragment, which
// may hold credentials, and without a trailing slash.
func DisplayURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "an unparsable URL"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return strings.TrimSuffix(u.String(), "/")
}
