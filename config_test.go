package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

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
				options, byName, berr := buildModels(cfg.models, getenv, slog.New(slog.NewTextHandler(&logs, nil)))
				err = berr
				for _, o := range options {
					opts = append(opts, o.Name)
					if byName[o.Name] == nil || o.Description == "" {
						t.Fatalf("option %s has no model or description", o.Name)
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
