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
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
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
	// models lists the models offered besides the demo model, as
	// provider:model entries (COUNTERSIGN_MODELS).
	models []string
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
		reapEvery: time.Minute,
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
	for _, spec := range strings.Split(getenv("COUNTERSIGN_MODELS"), ",") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		provider, name, ok := strings.Cut(spec, ":")
		if !ok || name == "" || (provider != "openai" && provider != "anthropic" && provider != "ollama") {
			return c, fmt.Errorf("COUNTERSIGN_MODELS: want provider:model entries with provider openai, anthropic or ollama, got %q", spec)
		}
		c.models = append(c.models, spec)
	}
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
		SessionKey: key, FourEyes: cfg.fourEyes, Logger: log,
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

// buildModels returns the models the playground offers: the demo model
// first, then each configured provider:model entry whose provider has what
// it needs (an API key, or a base URL for a local server). An entry without
// it is left out with a warning; keys are never logged. Runs store the entry
// as their model, so a run resumed after a restart continues on the same one.
func buildModels(specs []string, getenv func(string) string, log *slog.Logger) ([]web.ModelOption, map[string]engine.Model, error) {
	options := []web.ModelOption{{Name: demo.Name, Description: demo.Description}}
	byName := map[string]engine.Model{demo.Name: demo.New()}
	for _, spec := range specs {
		provider, name, _ := strings.Cut(spec, ":")
		var m engine.Model
		var desc string
		switch provider {
		case "openai":
			key, base := getenv("OPENAI_API_KEY"), getenv("OPENAI_BASE_URL")
			if key == "" && base == "" {
				log.Warn("model not offered: set OPENAI_API_KEY, or OPENAI_BASE_URL for a local server", "model", spec)
				continue
			}
			om, err := openai.New(openai.Config{APIKey: key, BaseURL: base, Model: name})
			if err != nil {
				return nil, nil, fmt.Errorf("model %s: %w", spec, err)
			}
			m, desc = om, om.Describe()
		case "ollama":
			base := "http://localhost:11434/v1"
			if h := getenv("OLLAMA_HOST"); h != "" {
				if !strings.Contains(h, "://") {
					h = "http://" + h
				}
				base = strings.TrimSuffix(h, "/") + "/v1"
			}
			om, err := openai.New(openai.Config{BaseURL: base, Model: name})
			if err != nil {
				return nil, nil, fmt.Errorf("model %s: %w", spec, err)
			}
			m, desc = om, om.Describe()
		case "anthropic":
			key := getenv("ANTHROPIC_API_KEY")
			if key == "" {
				log.Warn("model not offered: set ANTHROPIC_API_KEY", "model", spec)
				continue
			}
			am, err := anthropic.New(anthropic.Config{APIKey: key, Model: name})
			if err != nil {
				return nil, nil, fmt.Errorf("model %s: %w", spec, err)
			}
			m, desc = am, am.Describe()
		}
		if _, dup := byName[spec]; dup {
			continue
		}
		byName[spec] = m
		options = append(options, web.ModelOption{Name: spec, Description: desc})
	}
	return options, byName, nil
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
