package app

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"

	"countersign/engine"
	"countersign/engine/models/anthropic"
	"countersign/engine/models/demo"
	"countersign/engine/models/openai"
)

// Model is a model the playground offers: the name runs record, what the
// model picker says of it, and the model.
type Model struct {
	Name        string
	Description string
	Model       engine.Model
}

// ModelEntry is one entry of COUNTERSIGN_MODELS, written
//
//	provider:model[?option=value&option=value...]
//
// The model name runs from the first ":" to the first "?", so it may hold
// "/" and ":" (openai:Qwen/Qwen3-8B, ollama:qwen3:8b); no model name holds
// "?". The options are name=value pairs joined by "&", each value
// percent-decoded (a comma is %2C, "&" is %26). The entry's name, which the
// playground shows and a run records, is provider:model without the
// options: a run still resolves after a restart in which they changed.
type ModelEntry struct {
	provider string
	model    string
	// baseURL (base_url) is the entry's own server, in place of the one
	// from the provider's variable (OPENAI_BASE_URL, OLLAMA_HOST,
	// ANTHROPIC_BASE_URL).
	baseURL string
	// keyEnv (api_key_env) names the variable that holds the entry's API
	// key. Without it an entry with its own base URL gets no key: the
	// provider's key is meant for the provider's server.
	keyEnv string
	// maxTokens (max_tokens) bounds each reply; zero leaves the provider's
	// default (none for OpenAI-compatible servers, 1024 for Anthropic).
	maxTokens int
	// temperature (temperature), from 0 to 2, when hasTemperature.
	temperature    float64
	hasTemperature bool
}

// provider is a kind of model server an entry may name.
type provider struct {
	name string
	// noTemperature, when set, says why the provider's entries take no
	// temperature.
	noTemperature string
	// model returns the entry's model or, when the provider lacks what it
	// needs, no model and what to set.
	model func(e ModelEntry, getenv func(string) string) (describedModel, string, error)
}

// providers lists every provider an entry may name, in the order messages
// give them. It is the one list of them.
var providers = []provider{
	{name: "openai", model: openAIModel},
	// The SDK speaks API version 2026-10-21, which refuses any temperature,
	// even the default, with a 400.
	{name: "anthropic", model: anthropicModel, noTemperature: "the Anthropic API takes none since version 2026-10-21"},
	{name: "ollama", model: ollamaModel},
}

// providerNamed returns the provider called name.
func providerNamed(name string) (provider, bool) {
	for _, p := range providers {
		if p.name == name {
			return p, true
		}
	}
	return provider{}, false
}

// providerNames lists the providers as a sentence does: "a, b or c".
func providerNames() string {
	names := make([]string, len(providers))
	for i, p := range providers {
		names[i] = p.name
	}
	last := len(names) - 1
	if last == 0 {
		return names[0]
	}
	return strings.Join(names[:last], ", ") + " or " + names[last]
}

// name returns the entry's name, provider:model.
func (e ModelEntry) name() string { return e.provider + ":" + e.model }

// settings describes the entry's output limit and temperature, if it sets
// them, for the playground's model picker.
func (e ModelEntry) settings() string {
	var s []string
	if e.maxTokens > 0 {
		s = append(s, "max_tokens "+strconv.Itoa(e.maxTokens))
	}
	if e.hasTemperature {
		s = append(s, "temperature "+strconv.FormatFloat(e.temperature, 'g', -1, 64))
	}
	return strings.Join(s, ", ")
}

// temp returns the entry's temperature, nil when it sets none.
func (e ModelEntry) temp() *float64 {
	if !e.hasTemperature {
		return nil
	}
	t := e.temperature
	return &t
}

// apiKey returns the key the entry's requests carry: the one in the
// variable its api_key_env names; else none for an entry with its own base
// URL, whose server is not the provider's; else the one in the variable
// fallback names, if any.
func (e ModelEntry) apiKey(getenv func(string) string, fallback string) string {
	switch {
	case e.keyEnv != "":
		return getenv(e.keyEnv)
	case e.baseURL != "" || fallback == "":
		return ""
	}
	return getenv(fallback)
}

// ParseModelSpecs parses the comma-separated entries of COUNTERSIGN_MODELS.
// An entry given twice counts once; one name given twice with different
// options is refused, since runs find their model by name.
func ParseModelSpecs(v string) ([]ModelEntry, error) {
	var entries []ModelEntry
	seen := map[string]ModelEntry{}
	for _, spec := range strings.Split(v, ",") {
		if strings.TrimSpace(spec) == "" {
			continue
		}
		e, err := parseModelSpec(spec)
		if err != nil {
			return nil, err
		}
		if prev, ok := seen[e.name()]; ok {
			if prev != e {
				return nil, fmt.Errorf("entry %q is given twice with different options; give each provider:model once", e.name())
			}
			continue
		}
		seen[e.name()] = e
		entries = append(entries, e)
	}
	return entries, nil
}

// parseModelSpec parses one entry of COUNTERSIGN_MODELS (see ModelEntry).
// Its errors name the entry by its provider:model part, never by its
// options, which may hold a URL with credentials.
func parseModelSpec(spec string) (ModelEntry, error) {
	head, opts, hasOpts := strings.Cut(strings.TrimSpace(spec), "?")
	name, model, ok := strings.Cut(head, ":")
	p, known := providerNamed(name)
	if !ok || !known {
		return ModelEntry{}, fmt.Errorf("entry %q: want provider:model with provider %s", head, providerNames())
	}
	if model == "" {
		return ModelEntry{}, fmt.Errorf("entry %q: no model name", head)
	}
	e := ModelEntry{provider: p.name, model: model}
	if !hasOpts {
		return e, nil
	}
	given := map[string]bool{}
	for _, opt := range strings.Split(opts, "&") {
		key, raw, ok := strings.Cut(opt, "=")
		if !ok || key == "" {
			return ModelEntry{}, fmt.Errorf("entry %q: option %q is not name=value", head, key)
		}
		if given[key] {
			return ModelEntry{}, fmt.Errorf("entry %q: %s is given twice", head, key)
		}
		given[key] = true
		val, err := url.PathUnescape(raw)
		if err != nil {
			return ModelEntry{}, fmt.Errorf("entry %q: %s: bad percent-encoding", head, key)
		}
		switch key {
		case "base_url":
			if val == "" {
				return ModelEntry{}, fmt.Errorf("entry %q: base_url: empty", head)
			}
			e.baseURL = val
		case "api_key_env":
			if !isEnvName(val) {
				return ModelEntry{}, fmt.Errorf("entry %q: api_key_env: want the name of an environment variable, got %q", head, val)
			}
			e.keyEnv = val
		case "max_tokens":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return ModelEntry{}, fmt.Errorf("entry %q: max_tokens: want a whole number of at least 1, got %q", head, val)
			}
			e.maxTokens = n
		case "temperature":
			if p.noTemperature != "" {
				return ModelEntry{}, fmt.Errorf("entry %q: temperature: %s", head, p.noTemperature)
			}
			t, err := strconv.ParseFloat(val, 64)
			if err != nil || !(t >= 0 && t <= 2) {
				return ModelEntry{}, fmt.Errorf("entry %q: temperature: want a number from 0 to 2, got %q", head, val)
			}
			e.temperature, e.hasTemperature = t, true
		default:
			return ModelEntry{}, fmt.Errorf("entry %q: unknown option %q (want base_url, max_tokens, temperature or api_key_env)", head, key)
		}
	}
	return e, nil
}

// isEnvName reports whether s is a portable environment variable name.
func isEnvName(s string) bool {
	for i, r := range s {
		if !(r == '_' || 'A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return s != ""
}

// describedModel is a model that says what it is and where it runs.
type describedModel interface {
	engine.Model
	Describe() string
}

// BuildModels returns the models the playground offers: the demo model
// first, then each entry whose provider has what it needs (an API key, or a
// base URL for a local server). An entry without it is left out with a
// warning; keys are never logged. Runs store the entry's name as their
// model, so a run resumed after a restart continues on the same one.
func BuildModels(entries []ModelEntry, getenv func(string) string, log *slog.Logger) ([]Model, error) {
	models := []Model{{Name: demo.Name, Description: demo.Description, Model: demo.New()}}
	seen := map[string]bool{demo.Name: true}
	for _, e := range entries {
		name := e.name()
		if seen[name] {
			continue
		}
		m, missing, err := entryModel(e, getenv)
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", name, err)
		}
		if missing != "" {
			log.Warn("model not offered: "+missing, "model", name)
			continue
		}
		desc := m.Describe()
		if s := e.settings(); s != "" {
			desc += " (" + s + ")"
		}
		seen[name] = true
		models = append(models, Model{Name: name, Description: desc, Model: m})
	}
	return models, nil
}

// entryModel returns the model of an entry. When the entry's provider lacks
// what it needs, it returns no model and says what to set.
func entryModel(e ModelEntry, getenv func(string) string) (describedModel, string, error) {
	if e.keyEnv != "" && getenv(e.keyEnv) == "" {
		return nil, "set " + e.keyEnv + ", the variable its api_key_env names", nil
	}
	p, ok := providerNamed(e.provider)
	if !ok {
		return nil, "", fmt.Errorf("unknown provider %q", e.provider)
	}
	return p.model(e, getenv)
}

// openAIModel is the model of an openai entry: the hosted API or any
// OpenAI-compatible server.
func openAIModel(e ModelEntry, getenv func(string) string) (describedModel, string, error) {
	base := cmp.Or(e.baseURL, getenv("OPENAI_BASE_URL"))
	key := e.apiKey(getenv, "OPENAI_API_KEY")
	if key == "" && base == "" {
		return nil, "set OPENAI_API_KEY, or OPENAI_BASE_URL for a local server", nil
	}
	return newOpenAI(openai.Config{APIKey: key, BaseURL: base, Model: e.model, MaxTokens: e.maxTokens, Temperature: e.temp()})
}

// ollamaModel is the model of an ollama entry, spoken to through Ollama's
// OpenAI-compatible API.
func ollamaModel(e ModelEntry, getenv func(string) string) (describedModel, string, error) {
	base := e.baseURL
	if base == "" {
		base = "http://localhost:11434/v1"
		if h := getenv("OLLAMA_HOST"); h != "" {
			if !strings.Contains(h, "://") {
				h = "http://" + h
			}
			base = strings.TrimSuffix(h, "/") + "/v1"
		}
	}
	return newOpenAI(openai.Config{APIKey: e.apiKey(getenv, ""), BaseURL: base, Model: e.model, MaxTokens: e.maxTokens, Temperature: e.temp()})
}

// anthropicModel is the model of an anthropic entry.
func anthropicModel(e ModelEntry, getenv func(string) string) (describedModel, string, error) {
	base := cmp.Or(e.baseURL, getenv("ANTHROPIC_BASE_URL"))
	key := e.apiKey(getenv, "ANTHROPIC_API_KEY")
	if key == "" && base == "" {
		return nil, "set ANTHROPIC_API_KEY", nil
	}
	m, err := anthropic.New(anthropic.Config{APIKey: key, BaseURL: base, Model: e.model, MaxTokens: e.maxTokens})
	if err != nil {
		return nil, "", err
	}
	return m, "", nil
}

// newOpenAI is openai.New for the providers' model functions.
func newOpenAI(cfg openai.Config) (describedModel, string, error) {
	m, err := openai.New(cfg)
	if err != nil {
		return nil, "", err
	}
	return m, "", nil
}
