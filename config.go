package main

import (
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"countersign/app"
)

// config is everything countersign reads from its environment.
type config struct {
	addr       string
	dbPath     string
	sessionKey string
	retention  time.Duration
	workers    int
	fourEyes   bool
	lease      time.Duration
	reapEvery  time.Duration
	logLevel   slog.Level
	// fault is a fault-injection point for the crash tests, as point:N:
	// the Nth time the process reaches point it says so and stops there
	// until it is killed. Empty in production.
	fault string
	// models lists the models offered besides the demo model, from the
	// entries of COUNTERSIGN_MODELS, each name once.
	models []app.ModelEntry
	// agentsFile is the agents file (COUNTERSIGN_AGENTS); empty takes the
	// built-in one. It is read, and checked, when the server starts.
	agentsFile string
}

// loadConfig reads the COUNTERSIGN_* variables, with defaults that serve a
// demo on one machine.
func loadConfig(getenv func(string) string) (config, error) {
	c := config{
		addr:      ":8080",
		dbPath:    "./data/countersign.db",
		retention: 30 * 24 * time.Hour,
		workers:   4,
		lease:     30 * time.Second,
		reapEvery: time.Second,
	}
	str := func(key string, dst *string) {
		if v := getenv(key); v != "" {
			*dst = v
		}
	}
	// duration reads a duration of at least least; want says so in words.
	duration := func(key string, least time.Duration, want string, dst *time.Duration) error {
		v := getenv(key)
		if v == "" {
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < least {
			return fmt.Errorf("%s: want %s, got %q", key, want, v)
		}
		*dst = d
		return nil
	}
	str("COUNTERSIGN_ADDR", &c.addr)
	str("COUNTERSIGN_DB", &c.dbPath)
	str("COUNTERSIGN_SESSION_KEY", &c.sessionKey)
	str("COUNTERSIGN_AGENTS", &c.agentsFile)
	if err := duration("COUNTERSIGN_RETENTION", time.Nanosecond, "a positive duration such as 720h", &c.retention); err != nil {
		return c, err
	}
	if v := getenv("COUNTERSIGN_WORKERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 256 {
			return c, fmt.Errorf("COUNTERSIGN_WORKERS: want 1 to 256, got %q", v)
		}
		c.workers = n
	}
	if v := getenv("COUNTERSIGN_FOUR_EYES"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("COUNTERSIGN_FOUR_EYES: want true or false, got %q", v)
		}
		c.fourEyes = b
	}
	if err := duration("COUNTERSIGN_LEASE", time.Second, "a duration of at least 1s", &c.lease); err != nil {
		return c, err
	}
	models, err := app.ParseModelSpecs(getenv("COUNTERSIGN_MODELS"))
	if err != nil {
		return c, fmt.Errorf("COUNTERSIGN_MODELS: %w", err)
	}
	c.models = models
	if err := duration("COUNTERSIGN_REAP_INTERVAL", 100*time.Millisecond, "a duration of at least 100ms", &c.reapEvery); err != nil {
		return c, err
	}
	if v := getenv("COUNTERSIGN_FAULT"); v != "" {
		if _, _, err := parseFault(v); err != nil {
			return c, err
		}
		c.fault = v
	}
	if v := getenv("COUNTERSIGN_LOG_LEVEL"); v != "" {
		if err := c.logLevel.UnmarshalText([]byte(v)); err != nil {
			return c, fmt.Errorf("COUNTERSIGN_LOG_LEVEL: %w", err)
		}
	}
	return c, nil
}

// parseFault reads a fault-injection setting "point:N".
func parseFault(v string) (string, int, error) {
	point, nth, ok := strings.Cut(v, ":")
	n, err := strconv.Atoi(nth)
	if !ok || point == "" || err != nil || n < 1 {
		return "", 0, fmt.Errorf("COUNTERSIGN_FAULT: want point:N such as write_started:1, got %q", v)
	}
	return point, n, nil
}

// faultHook returns the runtime's fault hook for a "point:N" setting: the
// Nth time the point is reached it prints "fault point reached" and blocks
// forever, so that a crash test can kill the process exactly there.
func faultHook(setting string, stdout io.Writer) func(string) {
	if setting == "" {
		return nil
	}
	point, n, _ := parseFault(setting)
	var mu sync.Mutex
	seen := 0
	return func(p string) {
		if p != point {
			return
		}
		mu.Lock()
		seen++
		hit := seen == n
		mu.Unlock()
		if hit {
			fmt.Fprintf(stdout, "fault point reached: %s:%d\n", point, n)
			select {}
		}
	}
}
