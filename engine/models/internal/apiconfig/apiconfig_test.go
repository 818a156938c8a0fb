package apiconfig

import (
	"strings"
	"testing"
	"time"
)

func TestRetries(t *testing.T) {
	for n, want := range map[int]int{0: DefaultMaxRetries, -1: 0, -5: 0, 1: 1, 7: 7} {
		if got := Retries(n); got != want {
			t.Errorf("Retries(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestTimeout(t *testing.T) {
	for d, want := range map[time.Duration]time.Duration{0: DefaultTimeout, -time.Second: DefaultTimeout, time.Second: time.Second} {
		if got := Timeout(d); got != want {
			t.Errorf("Timeout(%s) = %s, want %s", d, got, want)
		}
	}
}

func TestCheckBaseURL(t *testing.T) {
	for _, ok := range []string{"https://api.openai.com/v1", "http://localhost:11434/v1"} {
		if err := CheckBaseURL(ok); err != nil {
			t.Errorf("CheckBaseURL(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"localhost:11434/v1", "ftp://example.com", "https://", "http://[::1"} {
		if err := CheckBaseURL(bad); err == nil {
			t.Errorf("CheckBaseURL(%q) succeeded", bad)
		}
	}
	err := CheckBaseURL("ftp://user:secret@example.com/?token=abc")
	if err == nil || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "abc") {
		t.Errorf("error shows the credentials: %v", err)
	}
}

func TestDisplayURL(t *testing.T) {
	tests := map[string]string{
		"http://user:secret@localhost:11434/v1/?token=abc#x": "http://localhost:11434/v1",
		"https://api.anthropic.com":                          "https://api.anthropic.com",
		"http://[::1":                                        "an unparsable URL",
	}
	for in, want := range tests {
		if got := DisplayURL(in); got != want {
			t.Errorf("DisplayURL(%q) = %q, want %q", in, got, want)
		}
	}
}
