package anthropic

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// capRetryAfter returns a middleware that stops the SDK from retrying a
// response whose Retry-After (or Retry-After-Ms) asks for a wait longer than
// limit. The SDK honours any wait the server asks for; a run should rather
// fail at once with a clear error than sit out an hour-long rate limit.
func capRetryAfter(limit time.Duration) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(req)
		if err == nil && res != nil {
			if wait, ok := retryAfter(res.Header, time.Now()); ok && wait > limit {
				res.Header.Set("X-Should-Retry", "false")
			}
		}
		return res, err
	}
}

// retryAfter reads the wait a response asks for, as the SDK does: first
// Retry-After-Ms in milliseconds, then Retry-After in seconds or as an HTTP
// date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			return duration(ms, time.Millisecond), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return duration(s, time.Second), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return t.Sub(now), true
	}
	return 0, false
}

// duration returns n units, saturating instead of overflowing.
func duration(n float64, unit time.Duration) time.Duration {
	d := n * float64(unit)
	switch {
	case math.IsNaN(d):
		return 0
	case d >= math.MaxInt64:
		return math.MaxInt64
	case d <= math.MinInt64:
		return math.MinInt64
	}
	return time.Duration(d)
}
