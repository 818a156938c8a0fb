package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"countersign/engine"
)

// fakeAPI answers every chat completion and every Messages API request with
// a short reply, and keeps each request.
type fakeAPI struct {
	srv *httptest.Server

	mu   sync.Mutex
	reqs []fakeRequest
}

type fakeRequest struct {
	path   string
	header http.Header
	body   []byte
}

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, fakeRequest{path: r.URL.Path, header: r.Header.Clone(), body: body})
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/messages") {
			io.WriteString(w, `{"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [{"type": "text", "text": "ok"}],
			  "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}}`)
			return
		}
		io.WriteString(w, `{"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
		  "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
		  "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}`)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) url() string { return f.srv.URL }

// take returns the requests that arrived since the last call.
func (f *fakeAPI) take() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	reqs := f.reqs
	f.reqs = nil
	return reqs
}

func assertJSON(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: invalid JSON %s", what, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: invalid want %s", what, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// Entries with their own options, side by side: a hosted OpenAI-compatible
// server (OPENAI_BASE_URL and OPENAI_API_KEY), a local one named by the
// entry, another named by the entry with a key of its own, Anthropic behind
// ANTHROPIC_BASE_URL, and Ollama at the local server. Each request goes to
// its entry's server with its entry's max_tokens and temperature and only
// the key meant for that server; the names shown and stored leave the
// options out.
func TestModelEntriesOnTheWire(t *testing.T) {
	hosted, local, router, claude := newFakeAPI(t), newFakeAPI(t), newFakeAPI(t), newFakeAPI(t)
	env := map[string]string{
		"COUNTERSIGN_MODELS": strings.Join([]string{
			"openai:gpt-4o-mini?max_tokens=2048&temperature=0.3",
			"openai:Qwen/Qwen3-8B?base_url=" + local.url() + "/v1&max_tokens=4096&temperature=0",
			"openai:qwen/qwen3-8b?base_url=" + router.url() + "/api/v1&api_key_env=ROUTER_KEY",
			"anthropic:claude-sonnet-4-5?max_tokens=8192",
			"ollama:qwen3:8b?base_url=" + local.url() + "/v1",
		}, ","),
		"OPENAI_BASE_URL":    hosted.url() + "/v1",
		"OPENAI_API_KEY":     "sk-hosted-secret",
		"ROUTER_KEY":         "sk-router-secret",
		"ANTHROPIC_BASE_URL": claude.url(),
		"ANTHROPIC_API_KEY":  "sk-ant-secret",
	}
	getenv := func(key string) string { return env[key] }
	entries, err := ParseModelSpecs(env["COUNTERSIGN_MODELS"])
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	models, err := BuildModels(entries, getenv, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	descs := map[string]string{}
	byName := map[string]engine.Model{}
	for _, m := range models {
		names = append(names, m.Name)
		descs[m.Name] = m.Description
		byName[m.Name] = m.Model
	}
	want := []string{"demo", "openai:gpt-4o-mini", "openai:Qwen/Qwen3-8B", "openai:qwen/qwen3-8b", "anthropic:claude-sonnet-4-5", "ollama:qwen3:8b"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("models %q, want %q (log: %s)", names, want, logs.String())
	}
	if d := descs["openai:Qwen/Qwen3-8B"]; !strings.Contains(d, local.url()+"/v1") || !strings.Contains(d, "max_tokens 4096, temperature 0") {
		t.Errorf("description %q does not say where the model runs and how", d)
	}
	if d := descs["anthropic:claude-sonnet-4-5"]; !strings.Contains(d, claude.url()) || !strings.Contains(d, "max_tokens 8192") {
		t.Errorf("description %q does not say where the model runs and how", d)
	}

	hello := engine.ModelRequest{Messages: []engine.Message{{Role: engine.RoleUser, Content: "Hi"}}}
	chatHello := `"messages": [{"role": "user", "content": "Hi"}]`
	for _, tc := range []struct {
		name     string
		server   *fakeAPI
		path     string
		key      string // the key the request must carry, if any
		wantBody string
	}{
		{"openai:gpt-4o-mini", hosted, "/v1/chat/completions", "sk-hosted-secret",
			`{"model": "gpt-4o-mini", ` + chatHello + `, "max_tokens": 2048, "temperature": 0.3}`},
		{"openai:Qwen/Qwen3-8B", local, "/v1/chat/completions", "",
			`{"model": "Qwen/Qwen3-8B", ` + chatHello + `, "max_tokens": 4096, "temperature": 0}`},
		{"openai:qwen/qwen3-8b", router, "/api/v1/chat/completions", "sk-router-secret",
			`{"model": "qwen/qwen3-8b", ` + chatHello + `}`},
		{"anthropic:claude-sonnet-4-5", claude, "/v1/messages", "sk-ant-secret",
			`{"model": "claude-sonnet-4-5", "max_tokens": 8192, "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]}`},
		{"ollama:qwen3:8b", local, "/v1/chat/completions", "",
			`{"model": "qwen3:8b", ` + chatHello + `}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := byName[tc.name]
			if m == nil {
				t.Fatalf("no model %s", tc.name)
			}
			if _, err := m.Generate(context.Background(), hello); err != nil {
				t.Fatalf("Generate: %v", err)
			}
			reqs := tc.server.take()
			if len(reqs) != 1 || reqs[0].path != tc.path {
				t.Fatalf("requests at the server: %+v, want one at %s", reqs, tc.path)
			}
			assertJSON(t, "request", reqs[0].body, tc.wantBody)
			auth := reqs[0].header.Get("Authorization") + reqs[0].header.Get("X-Api-Key")
			for _, key := range []string{"sk-hosted-secret", "sk-router-secret", "sk-ant-secret"} {
				if strings.Contains(auth, key) != (key == tc.key) {
					t.Errorf("credentials %q, want only %q", auth, tc.key)
				}
			}
		})
	}
	for _, f := range []*fakeAPI{hosted, local, router, claude} {
		if reqs := f.take(); len(reqs) != 0 {
			t.Errorf("stray requests: %+v", reqs)
		}
	}
}

func TestParseModelSpec(t *testing.T) {
	tests := []struct {
		spec    string
		want    ModelEntry
		wantErr string // a part of the error; the error always names the entry
	}{
		{spec: "openai:gpt-4o-mini", want: ModelEntry{provider: "openai", model: "gpt-4o-mini"}},
		{spec: " anthropic:claude-sonnet-4-5 ", want: ModelEntry{provider: "anthropic", model: "claude-sonnet-4-5"}},
		// The model name runs to the first "?": it may hold "/" and ":".
		{spec: "openai:Qwen/Qwen3-8B", want: ModelEntry{provider: "openai", model: "Qwen/Qwen3-8B"}},
		{spec: "ollama:qwen3:8b", want: ModelEntry{provider: "ollama", model: "qwen3:8b"}},
		{spec: "openai:Qwen/Qwen3-8B?base_url=http://localhost:8000/v1&max_tokens=4096&temperature=0.2",
			want: ModelEntry{provider: "openai", model: "Qwen/Qwen3-8B", baseURL: "http://localhost:8000/v1", maxTokens: 4096, temperature: 0.2, hasTemperature: true}},
		{spec: "ollama:qwen3:8b?temperature=0", want: ModelEntry{provider: "ollama", model: "qwen3:8b", hasTemperature: true}},
		{spec: "openai:gpt-4o-mini?temperature=2&max_tokens=1", want: ModelEntry{provider: "openai", model: "gpt-4o-mini", temperature: 2, hasTemperature: true, maxTokens: 1}},
		{spec: "anthropic:claude-sonnet-4-5?max_tokens=8192&base_url=http://localhost:9000",
			want: ModelEntry{provider: "anthropic", model: "claude-sonnet-4-5", maxTokens: 8192, baseURL: "http://localhost:9000"}},
		{spec: "openai:qwen/qwen3-8b?base_url=https://openrouter.ai/api/v1&api_key_env=OPENROUTER_API_KEY",
			want: ModelEntry{provider: "openai", model: "qwen/qwen3-8b", baseURL: "https://openrouter.ai/api/v1", keyEnv: "OPENROUTER_API_KEY"}},
		// Values are percent-decoded, so a base URL may hold "&" or ",".
		{spec: "openai:m?base_url=http://gw.local/v1%3Fa%3D1%26b%3D2%2C3", want: ModelEntry{provider: "openai", model: "m", baseURL: "http://gw.local/v1?a=1&b=2,3"}},

		{spec: "mistral:large", wantErr: "provider openai, anthropic or ollama"},
		{spec: "openai", wantErr: "provider openai, anthropic or ollama"},
		{spec: "openai:", wantErr: "no model name"},
		{spec: "openai:?max_tokens=1", wantErr: "no model name"},
		{spec: "openai:m?", wantErr: `option "" is not name=value`},
		{spec: "openai:m?max_tokens", wantErr: `option "max_tokens" is not name=value`},
		{spec: "openai:m?max_tokens=1&", wantErr: `option "" is not name=value`},
		{spec: "openai:m?maxtokens=1", wantErr: `unknown option "maxtokens" (want base_url, max_tokens, temperature or api_key_env)`},
		{spec: "openai:m?max_tokens=1&max_tokens=2", wantErr: "max_tokens is given twice"},
		{spec: "openai:m?max_tokens=abc", wantErr: `max_tokens: want a whole number of at least 1, got "abc"`},
		{spec: "openai:m?max_tokens=0", wantErr: "max_tokens: want a whole number of at least 1"},
		{spec: "openai:m?max_tokens=-5", wantErr: "max_tokens: want a whole number of at least 1"},
		{spec: "openai:m?max_tokens=1.5", wantErr: "max_tokens: want a whole number of at least 1"},
		{spec: "openai:m?temperature=abc", wantErr: `temperature: want a number from 0 to 2, got "abc"`},
		{spec: "openai:m?temperature=2.5", wantErr: "temperature: want a number from 0 to 2"},
		{spec: "openai:m?temperature=-0.1", wantErr: "temperature: want a number from 0 to 2"},
		{spec: "openai:m?temperature=NaN", wantErr: "temperature: want a number from 0 to 2"},
		{spec: "openai:m?temperature=Inf", wantErr: "temperature: want a number from 0 to 2"},
		{spec: "anthropic:claude-sonnet-4-5?temperature=0.5", wantErr: "temperature: the Anthropic API takes none"},
		{spec: "openai:m?base_url=", wantErr: "base_url: empty"},
		{spec: "openai:m?base_url=http://h/%zz", wantErr: "base_url: bad percent-encoding"},
		{spec: "openai:m?api_key_env=my-key", wantErr: "api_key_env: want the name of an environment variable"},
	}
	for _, tc := range tests {
		got, err := parseModelSpec(tc.spec)
		if tc.wantErr != "" {
			if err == nil {
				t.Errorf("parseModelSpec(%q) = %+v, want an error", tc.spec, got)
				continue
			}
			entry, _, _ := strings.Cut(strings.TrimSpace(tc.spec), "?")
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), entry) {
				t.Errorf("parseModelSpec(%q): error %q, want one naming %s that says %q", tc.spec, err, entry, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseModelSpec(%q): %v", tc.spec, err)
			continue
		}
		if got != tc.want {
			t.Errorf("parseModelSpec(%q) = %+v, want %+v", tc.spec, got, tc.want)
		}
	}
}

// The name a run records and the playground shows is provider:model: the
// options stay out of it, so that runs keep resolving when they change.
func TestModelEntryName(t *testing.T) {
	for _, spec := range []string{"openai:Qwen/Qwen3-8B", "openai:Qwen/Qwen3-8B?max_tokens=4096", "openai:Qwen/Qwen3-8B?base_url=http://localhost:8000/v1&temperature=0.2"} {
		e, err := parseModelSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		if e.name() != "openai:Qwen/Qwen3-8B" {
			t.Errorf("name of %q = %q", spec, e.name())
		}
	}
}
