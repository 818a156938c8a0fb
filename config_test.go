package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"countersign/app"
)

// envOf is a getenv over a fixed set of variables.
func envOf(vars map[string]string) func(string) string {
	return func(key string) string { return vars[key] }
}

func TestModelsConfig(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		want    []string // model names offered, in order
		wantErr string
		warns   []string
	}{
		{name: "demo only by default", env: nil, want: []string{"demo"}},
		{name: "openai with a key", env: map[string]string{"COUNTERSIGN_MODELS": "openai:gpt-4o-mini", "OPENAI_API_KEY": "sk-test-123"},
			want: []string{"demo", "openai:gpt-4o-mini"}},
		{name: "openai-compatible server without a key", env: map[string]string{"COUNTERSIGN_MODELS": "openai:qwen3", "OPENAI_BASE_URL": "http://localhost:8000/v1"},
			want: []string{"demo", "openai:qwen3"}},
		{name: "unconfigured providers are left out", env: map[string]string{"COUNTERSIGN_MODELS": "openai:gpt-4o-mini, anthropic:claude-sonnet-4-5"},
			want: []string{"demo"}, warns: []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY"}},
		{name: "anthropic and ollama", env: map[string]string{"COUNTERSIGN_MODELS": "anthropic:claude-sonnet-4-5,ollama:qwen3,ollama:qwen3",
			"ANTHROPIC_API_KEY": "sk-ant-secret", "OLLAMA_HOST": "127.0.0.1:11434"},
			want: []string{"demo", "anthropic:claude-sonnet-4-5", "ollama:qwen3"}},
		{name: "unknown provider", env: map[string]string{"COUNTERSIGN_MODELS": "mistral:large"}, wantErr: "provider openai, anthropic or ollama"},
		{name: "no model name", env: map[string]string{"COUNTERSIGN_MODELS": "openai:"}, wantErr: "COUNTERSIGN_MODELS"},
		{name: "bad base URL", env: map[string]string{"COUNTERSIGN_MODELS": "openai:x", "OPENAI_BASE_URL": "not a url"}, wantErr: "model openai:x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			getenv := envOf(tc.env)
			cfg, err := loadConfig(getenv)
			var logs bytes.Buffer
			var names []string
			if err == nil {
				var opts []string
				models, berr := app.BuildModels(cfg.models, getenv, slog.New(slog.NewTextHandler(&logs, nil)))
				err = berr
				for _, m := range models {
					opts = append(opts, m.Name)
					if m.Model == nil || m.Description == "" {
						t.Fatalf("option %s has no model or description", m.Name)
					}
				}
				names = opts
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(names, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("models %v, want %v", names, tc.want)
			}
			for _, w := range tc.warns {
				if !strings.Contains(logs.String(), w) {
					t.Fatalf("no warning naming %s in %q", w, logs.String())
				}
			}
			for _, secret := range []string{"sk-test-123", "sk-ant-secret"} {
				if strings.Contains(logs.String(), secret) {
					t.Fatal("an API key reached the log")
				}
			}
		})
	}
}

// Which entries are offered, which are left out with a warning, and which
// stop the start-up with an error naming the entry.
func TestModelEntriesOffered(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		want    []string
		wantErr []string
		warns   []string
	}{
		{name: "an entry's own base URL needs no key",
			env:  map[string]string{"COUNTERSIGN_MODELS": "openai:qwen3?base_url=http://localhost:8000/v1"},
			want: []string{"demo", "openai:qwen3"}},
		{name: "ANTHROPIC_BASE_URL alone serves a gateway",
			env:  map[string]string{"COUNTERSIGN_MODELS": "anthropic:claude-sonnet-4-5", "ANTHROPIC_BASE_URL": "http://localhost:9000"},
			want: []string{"demo", "anthropic:claude-sonnet-4-5"}},
		{name: "api_key_env names an empty variable",
			env: map[string]string{"COUNTERSIGN_MODELS": "openai:qwen/qwen3-8b?base_url=https://openrouter.ai/api/v1&api_key_env=OPENROUTER_API_KEY",
				"OPENAI_API_KEY": "sk-test-123"},
			want: []string{"demo"}, warns: []string{"OPENROUTER_API_KEY"}},
		{name: "the same entry twice is offered once",
			env:  map[string]string{"COUNTERSIGN_MODELS": "ollama:qwen3?max_tokens=10,ollama:qwen3?max_tokens=10"},
			want: []string{"demo", "ollama:qwen3"}},
		{name: "one name with two sets of options",
			env:     map[string]string{"COUNTERSIGN_MODELS": "ollama:qwen3,ollama:qwen3?max_tokens=10"},
			wantErr: []string{"COUNTERSIGN_MODELS", "ollama:qwen3", "twice"}},
		{name: "an unusable base_url",
			env:     map[string]string{"COUNTERSIGN_MODELS": "openai:x?base_url=localhost:8000/v1"},
			wantErr: []string{"model openai:x", "base URL"}},
		{name: "an unknown option",
			env:     map[string]string{"COUNTERSIGN_MODELS": "openai:gpt-4o-mini?max_token=10", "OPENAI_API_KEY": "sk-test-123"},
			wantErr: []string{"COUNTERSIGN_MODELS", "openai:gpt-4o-mini", `unknown option "max_token"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			getenv := envOf(tc.env)
			var logs bytes.Buffer
			var names []string
			cfg, err := loadConfig(getenv)
			if err == nil {
				var models []app.Model
				models, err = app.BuildModels(cfg.models, getenv, slog.New(slog.NewTextHandler(&logs, nil)))
				for _, m := range models {
					names = append(names, m.Name)
				}
			}
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, want one with %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(names, tc.want) {
				t.Errorf("models %q, want %q", names, tc.want)
			}
			for _, w := range tc.warns {
				if !strings.Contains(logs.String(), w) {
					t.Errorf("no warning naming %s in %q", w, logs.String())
				}
			}
			if strings.Contains(logs.String(), "sk-test-123") {
				t.Error("an API key reached the log")
			}
		})
	}
}

// TestLoadConfig checks the defaults and the exact messages of the
// settings read as durations and numbers.
func TestLoadConfig(t *testing.T) {
	c, err := loadConfig(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.addr != ":8080" || c.dbPath != "./data/countersign.db" || c.retention != 30*24*time.Hour || c.workers != 4 ||
		c.lease != 30*time.Second || c.reapEvery != time.Second || c.fourEyes || c.fault != "" || c.logLevel != slog.LevelInfo ||
		c.agentsFile != "" {
		t.Errorf("defaults %+v", c)
	}
	c, err = loadConfig(envOf(map[string]string{"COUNTERSIGN_RETENTION": "1ns", "COUNTERSIGN_LEASE": "1s",
		"COUNTERSIGN_REAP_INTERVAL": "100ms", "COUNTERSIGN_WORKERS": "256", "COUNTERSIGN_FOUR_EYES": "true",
		"COUNTERSIGN_AGENTS": "/etc/countersign/agents.yaml"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.retention != 1 || c.lease != time.Second || c.reapEvery != 100*time.Millisecond || c.workers != 256 || !c.fourEyes ||
		c.agentsFile != "/etc/countersign/agents.yaml" {
		t.Errorf("the smallest values allowed give %+v", c)
	}
	for _, tc := range []struct{ key, val, want string }{
		{"COUNTERSIGN_RETENTION", "0s", `COUNTERSIGN_RETENTION: want a positive duration such as 720h, got "0s"`},
		{"COUNTERSIGN_RETENTION", "a month", `COUNTERSIGN_RETENTION: want a positive duration such as 720h, got "a month"`},
		{"COUNTERSIGN_LEASE", "999ms", `COUNTERSIGN_LEASE: want a duration of at least 1s, got "999ms"`},
		{"COUNTERSIGN_REAP_INTERVAL", "99ms", `COUNTERSIGN_REAP_INTERVAL: want a duration of at least 100ms, got "99ms"`},
		{"COUNTERSIGN_REAP_INTERVAL", "1", `COUNTERSIGN_REAP_INTERVAL: want a duration of at least 100ms, got "1"`},
		{"COUNTERSIGN_WORKERS", "0", `COUNTERSIGN_WORKERS: want 1 to 256, got "0"`},
		{"COUNTERSIGN_FOUR_EYES", "maybe", `COUNTERSIGN_FOUR_EYES: want true or false, got "maybe"`},
		{"COUNTERSIGN_FAULT", "write_started", `COUNTERSIGN_FAULT: want point:N such as write_started:1, got "write_started"`},
	} {
		_, err := loadConfig(envOf(map[string]string{tc.key: tc.val}))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s=%q: error %v, want %q", tc.key, tc.val, err, tc.want)
		}
	}
}

// A bad agents file stops the server before it listens, with each mistake
// at its line.
func TestServeRefusesABadAgentsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "agents.yaml")
	if err := os.WriteFile(file, []byte("agents:\n  - name: a\n    titel: A\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"COUNTERSIGN_DB": filepath.Join(dir, "cs.db"), "COUNTERSIGN_ADDR": "127.0.0.1:0",
		"COUNTERSIGN_AGENTS": file}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, []string{"countersign"}, envOf(vars), &out)
	for _, want := range []string{file + ":2: missing key title", file + `:3: an agent: unknown key "titel"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("run() = %v, want %q", err, want)
		}
	}
	if strings.Contains(out.String(), "listening") {
		t.Error("the server listened on a bad agents file")
	}
	// The first admin's password is shown once: not on a start that fails.
	if strings.Contains(out.String(), "password") {
		t.Errorf("a failed start used up the first admin's password:\n%s", out.String())
	}
}
