// Command countersign serves the countersign playground: AI agents whose
// side-effecting tool calls wait for a person's approval.
//
// Usage:
//
//	countersign [serve]                      start the server (the default)
//	countersign migrate                      apply database migrations and exit
//	countersign user add NAME ROLE           add a user; the password is read from
//	                                         COUNTERSIGN_PASSWORD or generated and printed
//	countersign user list                    list users
//	countersign user disable NAME            disable a user
//
// Configuration comes from COUNTERSIGN_* environment variables; see README.md.
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"countersign/engine"
	"countersign/engine/models/anthropic"
	"countersign/engine/models/demo"
	"countersign/engine/models/openai"
	"countersign/engine/tools"
	"countersign/static"
	"countersign/store"
	"countersign/web"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "countersign:", err)
		os.Exit(1)
	}
}

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
	models []modelEntry
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
	str("COUNTERSIGN_ADDR", &c.addr)
	str("COUNTERSIGN_DB", &c.dbPath)
	str("COUNTERSIGN_SESSION_KEY", &c.sessionKey)
	if v := getenv("COUNTERSIGN_RETENTION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("COUNTERSIGN_RETENTION: want a positive duration such as 720h, got %q", v)
		}
		c.retention = d
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
	if v := getenv("COUNTERSIGN_LEASE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return c, fmt.Errorf("COUNTERSIGN_LEASE: want a duration of at least 1s, got %q", v)
		}
		c.lease = d
	}
	models, err := parseModelSpecs(getenv("COUNTERSIGN_MODELS"))
	if err != nil {
		return c, fmt.Errorf("COUNTERSIGN_MODELS: %w", err)
	}
	c.models = models
	if v := getenv("COUNTERSIGN_REAP_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond {
			return c, fmt.Errorf("COUNTERSIGN_REAP_INTERVAL: want a duration of at least 100ms, got %q", v)
		}
		c.reapEvery = d
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

// run parses the subcommand and carries it out; it returns when ctx is
// cancelled (serve) or the command is done.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stdout, &slog.HandlerOptions{Level: cfg.logLevel}))
	cmd := "serve"
	if len(args) > 1 {
		cmd = args[1]
	}
	switch cmd {
	case "serve":
		return serve(ctx, cfg, getenv, log, stdout)
	case "migrate":
		db, err := store.Open(ctx, cfg.dbPath)
		if err != nil {
			return err
		}
		defer db.Close()
		v, err := db.SchemaVersion(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "database %s is at schema version %d\n", cfg.dbPath, v)
		return nil
	case "user":
		return userCommand(ctx, cfg, args[2:], getenv, stdout)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, "usage: countersign [serve | migrate | user add NAME ROLE | user list | user disable NAME]")
		return nil
	default:
		return fmt.Errorf("unknown command %q (try: serve, migrate, user)", cmd)
	}
}

// serve runs the web server, the runtime and the retention purge until ctx is
// cancelled, then shuts them down in reverse order.
func serve(ctx context.Context, cfg config, getenv func(string) string, log *slog.Logger, stdout io.Writer) error {
	db, err := store.Open(ctx, cfg.dbPath)
	if err != nil {
		return err
	}
	defer func() {
		if err := db.Close(); err != nil {
			log.Error("close database", "err", err)
		}
	}()

	pages := db.Pages()
	if seeded, err := pages.SeedPages(ctx, tools.SeedPages()); err != nil {
		return fmt.Errorf("seed workspace: %w", err)
	} else if seeded {
		log.Info("seeded the demo workspace", "pages", len(tools.SeedPages()))
	}
	if err := ensureAdmin(ctx, db, stdout); err != nil {
		return err
	}
	key, err := sessionKey(ctx, db, cfg)
	if err != nil {
		return err
	}
	assets, err := static.New()
	if err != nil {
		return err
	}

	agents := tools.Agents(pages, time.Now)
	models, byName, err := buildModels(cfg.models, getenv, log)
	if err != nil {
		return err
	}
	rt, err := engine.NewRuntime(engine.RuntimeConfig{
		Store:  db,
		Agents: agents,
		Models: func(name string) (engine.Model, error) {
			if m, ok := byName[name]; ok {
				return m, nil
			}
			return nil, fmt.Errorf("%w %q: it is not configured on this server (COUNTERSIGN_MODELS)", engine.ErrUnknownModel, name)
		},
		Workers:   cfg.workers,
		Lease:     cfg.lease,
		ReapEvery: cfg.reapEvery,
		FourEyes:  cfg.fourEyes,
		Logger:    log,
		Fault:     faultHook(cfg.fault, stdout),
	})
	if err != nil {
		return err
	}

	handler, err := web.New(web.Config{
		Store: db, Runtime: rt, Agents: agents, Models: models, Assets: assets,
		SessionKey: key, Logger: log,
	})
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.addr, err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute}

	rt.Start()
	purgeDone := make(chan struct{})
	purgeCtx, stopPurge := context.WithCancel(ctx)
	go func() {
		defer close(purgeDone)
		purgeLoop(purgeCtx, db, cfg.retention, log)
	}()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "countersign listening on http://%s\n", displayAddr(ln.Addr()))

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			stopPurge()
			<-purgeDone
			rt.Close()
			return fmt.Errorf("serve: %w", err)
		}
	}
	log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		log.Error("http shutdown", "err", err)
	}
	stopPurge()
	<-purgeDone
	rt.Close()
	return nil
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

// modelEntry is one entry of COUNTERSIGN_MODELS, written
//
//	provider:model[?option=value&option=value...]
//
// The model name runs from the first ":" to the first "?", so it may hold
// "/" and ":" (openai:Qwen/Qwen3-8B, ollama:qwen3:8b); no model name holds
// "?". The options are name=value pairs joined by "&", each value
// percent-decoded (a comma is %2C, "&" is %26). The entry's name, which the
// playground shows and a run records, is provider:model without the
// options: a run still resolves after a restart in which they changed.
type modelEntry struct {
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

// name returns the entry's name, provider:model.
func (e modelEntry) name() string { return e.provider + ":" + e.model }

// settings describes the entry's output limit and temperature, if it sets
// them, for the playground's model picker.
func (e modelEntry) settings() string {
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
func (e modelEntry) temp() *float64 {
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
func (e modelEntry) apiKey(getenv func(string) string, fallback string) string {
	switch {
	case e.keyEnv != "":
		return getenv(e.keyEnv)
	case e.baseURL != "" || fallback == "":
		return ""
	}
	return getenv(fallback)
}

// parseModelSpecs parses the comma-separated entries of COUNTERSIGN_MODELS.
// An entry given twice counts once; one name given twice with different
// options is refused, since runs find their model by name.
func parseModelSpecs(v string) ([]modelEntry, error) {
	var entries []modelEntry
	seen := map[string]modelEntry{}
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

// parseModelSpec parses one entry of COUNTERSIGN_MODELS (see modelEntry).
// Its errors name the entry by its provider:model part, never by its
// options, which may hold a URL with credentials.
func parseModelSpec(spec string) (modelEntry, error) {
	head, opts, hasOpts := strings.Cut(strings.TrimSpace(spec), "?")
	provider, model, ok := strings.Cut(head, ":")
	if !ok || (provider != "openai" && provider != "anthropic" && provider != "ollama") {
		return modelEntry{}, fmt.Errorf("entry %q: want provider:model with provider openai, anthropic or ollama", head)
	}
	if model == "" {
		return modelEntry{}, fmt.Errorf("entry %q: no model name", head)
	}
	e := modelEntry{provider: provider, model: model}
	if !hasOpts {
		return e, nil
	}
	given := map[string]bool{}
	for _, opt := range strings.Split(opts, "&") {
		key, raw, ok := strings.Cut(opt, "=")
		if !ok || key == "" {
			return modelEntry{}, fmt.Errorf("entry %q: option %q is not name=value", head, key)
		}
		if given[key] {
			return modelEntry{}, fmt.Errorf("entry %q: %s is given twice", head, key)
		}
		given[key] = true
		val, err := url.PathUnescape(raw)
		if err != nil {
			return modelEntry{}, fmt.Errorf("entry %q: %s: bad percent-encoding", head, key)
		}
		switch key {
		case "base_url":
			if val == "" {
				return modelEntry{}, fmt.Errorf("entry %q: base_url: empty", head)
			}
			e.baseURL = val
		case "api_key_env":
			if !isEnvName(val) {
				return modelEntry{}, fmt.Errorf("entry %q: api_key_env: want the name of an environment variable, got %q", head, val)
			}
			e.keyEnv = val
		case "max_tokens":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return modelEntry{}, fmt.Errorf("entry %q: max_tokens: want a whole number of at least 1, got %q", head, val)
			}
			e.maxTokens = n
		case "temperature":
			if provider == "anthropic" {
				// The SDK speaks API version 2026-10-21, which refuses any
				// temperature, even the default, with a 400.
				return modelEntry{}, fmt.Errorf("entry %q: temperature: the Anthropic API takes none since version 2026-10-21", head)
			}
			t, err := strconv.ParseFloat(val, 64)
			if err != nil || !(t >= 0 && t <= 2) {
				return modelEntry{}, fmt.Errorf("entry %q: temperature: want a number from 0 to 2, got %q", head, val)
			}
			e.temperature, e.hasTemperature = t, true
		default:
			return modelEntry{}, fmt.Errorf("entry %q: unknown option %q (want base_url, max_tokens, temperature or api_key_env)", head, key)
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

// buildModels returns the models the playground offers: the demo model
// first, then each configured entry whose provider has what it needs (an API
// key, or a base URL for a local server). An entry without it is left out
// with a warning; keys are never logged. Runs store the entry's name as
// their model, so a run resumed after a restart continues on the same one.
func buildModels(entries []modelEntry, getenv func(string) string, log *slog.Logger) ([]web.OfferedModel, map[string]engine.Model, error) {
	options := []web.OfferedModel{{Name: demo.Name, Description: demo.Description}}
	byName := map[string]engine.Model{demo.Name: demo.New()}
	for _, e := range entries {
		name := e.name()
		if _, dup := byName[name]; dup {
			continue
		}
		m, missing, err := entryModel(e, getenv)
		if err != nil {
			return nil, nil, fmt.Errorf("model %s: %w", name, err)
		}
		if missing != "" {
			log.Warn("model not offered: "+missing, "model", name)
			continue
		}
		desc := m.Describe()
		if s := e.settings(); s != "" {
			desc += " (" + s + ")"
		}
		byName[name] = m
		options = append(options, web.OfferedModel{Name: name, Description: desc})
	}
	return options, byName, nil
}

// entryModel returns the model of an entry. When the entry's provider lacks
// what it needs, it returns no model and says what to set.
func entryModel(e modelEntry, getenv func(string) string) (describedModel, string, error) {
	if e.keyEnv != "" && getenv(e.keyEnv) == "" {
		return nil, "set " + e.keyEnv + ", the variable its api_key_env names", nil
	}
	switch e.provider {
	case "openai":
		base := cmp.Or(e.baseURL, getenv("OPENAI_BASE_URL"))
		key := e.apiKey(getenv, "OPENAI_API_KEY")
		if key == "" && base == "" {
			return nil, "set OPENAI_API_KEY, or OPENAI_BASE_URL for a local server", nil
		}
		return newOpenAI(openai.Config{APIKey: key, BaseURL: base, Model: e.model, MaxTokens: e.maxTokens, Temperature: e.temp()})
	case "ollama":
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
	case "anthropic":
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
	return nil, "", fmt.Errorf("unknown provider %q", e.provider)
}

// newOpenAI is openai.New for entryModel.
func newOpenAI(cfg openai.Config) (describedModel, string, error) {
	m, err := openai.New(cfg)
	if err != nil {
		return nil, "", err
	}
	return m, "", nil
}

// displayAddr turns a listen address into one a browser can open.
func displayAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	if tcp.IP.IsUnspecified() {
		return net.JoinHostPort("localhost", strconv.Itoa(tcp.Port))
	}
	return tcp.String()
}

// purgeLoop deletes terminal runs older than the retention period, hourly.
func purgeLoop(ctx context.Context, db *store.DB, retention time.Duration, log *slog.Logger) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		n, err := db.PurgeFinishedBefore(ctx, time.Now().Add(-retention), 500)
		if err != nil && ctx.Err() == nil {
			log.Error("purge", "err", err)
		} else if n > 0 {
			log.Info("purged finished runs", "runs", n, "retention", retention)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ensureAdmin creates the first user, admin, with a random password that is
// printed once, when the database has no users. It is printed whatever the
// log level, since it is the only copy.
func ensureAdmin(ctx context.Context, db *store.DB, stdout io.Writer) error {
	n, err := db.CountUsers(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	password, err := randomPassword()
	if err != nil {
		return err
	}
	if _, err := db.CreateUser(ctx, "admin", password, store.RoleAdmin); err != nil {
		return fmt.Errorf("create first admin: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "created the first user, shown once, keep it: user=admin password=%s\n", password)
	return err
}

// sessionKey returns the configured session key, or the one generated on the
// first start and kept in the database so restarts keep people signed in.
func sessionKey(ctx context.Context, db *store.DB, cfg config) ([]byte, error) {
	if cfg.sessionKey != "" {
		if len(cfg.sessionKey) < 32 {
			return nil, errors.New("COUNTERSIGN_SESSION_KEY must be at least 32 characters")
		}
		return []byte(cfg.sessionKey), nil
	}
	v, err := db.EnsureSetting(ctx, "session_key", func() (string, error) {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		return hex.EncodeToString(b[:]), nil
	})
	if err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	return []byte(v), nil
}

func randomPassword() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate password: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// userCommand manages users from the command line.
func userCommand(ctx context.Context, cfg config, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: countersign user add NAME ROLE | user list | user disable NAME")
	}
	db, err := store.Open(ctx, cfg.dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	switch args[0] {
	case "add":
		if len(args) != 3 {
			return errors.New("usage: countersign user add NAME ROLE (ROLE is admin, operator or viewer)")
		}
		password := getenv("COUNTERSIGN_PASSWORD")
		generated := password == ""
		if generated {
			if password, err = randomPassword(); err != nil {
				return err
			}
		}
		u, err := db.CreateUser(ctx, args[1], password, args[2])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "added %s (%s)\n", u.Name, u.Role)
		if generated {
			fmt.Fprintf(stdout, "password: %s\n", password)
		}
		return nil
	case "list":
		users, err := db.Users(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tROLE\tCREATED\tSTATUS")
		for _, u := range users {
			status := "active"
			if u.Disabled() {
				status = "disabled"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.Name, u.Role, u.CreatedAt.Format(time.DateOnly), status)
		}
		return tw.Flush()
	case "disable":
		if len(args) != 2 {
			return errors.New("usage: countersign user disable NAME")
		}
		u, err := db.UserByName(ctx, args[1])
		if err != nil {
			return fmt.Errorf("user %q: %w", args[1], err)
		}
		if err := db.DisableUser(ctx, u.ID); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "disabled %s\n", u.Name)
		return nil
	default:
		return fmt.Errorf("unknown user command %q (try: add, list, disable)", strings.Join(args, " "))
	}
}
