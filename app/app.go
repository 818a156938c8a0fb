// Package app builds countersign from its parts: it opens the database,
// seeds the demo workspace, makes the first admin, and wires the models,
// the agents, the runtime and the web app together. The command, the tests
// and the benchmarks all build it here, so that they run what production
// runs; each sets in Config only what it changes.
package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"countersign/agentsfile"
	"countersign/engine"
	"countersign/engine/mcptools"
	"countersign/engine/tools"
	"countersign/static"
	"countersign/store"
	"countersign/web"
	"countersign/webhook"
)

// Config is what New needs. Every field but DBPath (or DB) may be left zero
// for its default.
type Config struct {
	// DBPath is the SQLite database file, created with its directory if
	// needed.
	DBPath string
	// DB, when not nil, is an open database used in place of DBPath, for a
	// program that prepares the database itself; Close leaves it open.
	DB *store.DB
	// DataDir is the data directory, ${DATA_DIR} in the agents file, where
	// the demo sandbox of the file assistant lives; empty is the folder of
	// the database file.
	DataDir string
	// BcryptCost is the cost of new users' password hashes; zero takes the
	// store's default. Tests lower it.
	BcryptCost int
	// SessionKey signs the session cookies, at least 32 bytes. Empty takes
	// the key kept in the database, generated on the first start, so that
	// restarts keep people signed in.
	SessionKey []byte
	// FirstAdmin, when not nil, is where New prints the password of the
	// first user, admin, whom it creates when the database has no users.
	// Tests and benchmarks leave it nil and add their own users.
	FirstAdmin io.Writer

	// ModelEntries are the models offered after the demo model; Getenv
	// reads the API keys and servers they need (nil reads nothing).
	ModelEntries []ModelEntry
	Getenv       func(string) string
	// Models, when not nil, are the models offered in place of the demo
	// model and ModelEntries: for tests with a scripted or blocking model.
	Models []Model
	// AgentsFile is the agents file (COUNTERSIGN_AGENTS); empty takes the
	// built-in one. A file with mistakes makes New fail, naming each.
	AgentsFile string
	// Agents, when not nil, returns the agents over the workspace in place
	// of the agents file: for tests with agents of their own.
	Agents func(ws tools.Workspace, now func() time.Time) []engine.Agent

	// Workers, Lease and ReapEvery tune the runtime; zero takes the
	// runtime's defaults.
	Workers   int
	Lease     time.Duration
	ReapEvery time.Duration
	// FourEyes requires a second approver for every agent.
	FourEyes bool
	// Retention is how long finished runs are kept: Start purges older
	// ones hourly. Zero keeps them.
	Retention time.Duration
	// SignIn throttles failed sign-ins; the zero value takes web's defaults.
	SignIn web.SignInLimits
	// Fault is the runtime's fault-injection hook; nil in production.
	Fault func(point string)
	// Now is the clock of every part; nil is time.Now.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// App is countersign built: the database, the agents and models it offers,
// the runtime, not started, and the web app.
type App struct {
	DB      *store.DB
	Agents  []engine.Agent
	Models  []Model
	Runtime *engine.Runtime
	Handler http.Handler
	// Webhooks delivers the webhook outbox from Start to Close.
	Webhooks *webhook.Deliverer
	// Servers are the agents' MCP servers, connected from Start to Close.
	Servers []*mcptools.Server

	cfg       Config
	ownDB     bool
	stopPurge context.CancelFunc
	purged    chan struct{} // closed when the purge loop has returned
}

// New opens the database and builds the app on it. Call Start to run it
// and Close to shut it down.
func New(ctx context.Context, cfg Config) (*App, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Getenv == nil {
		cfg.Getenv = func(string) string { return "" }
	}
	switch {
	case cfg.DataDir != "":
	case cfg.DB != nil:
		cfg.DataDir = filepath.Dir(cfg.DB.Path())
	case cfg.DBPath != "":
		cfg.DataDir = filepath.Dir(cfg.DBPath)
	}
	if cfg.DataDir != "" {
		dir, err := filepath.Abs(cfg.DataDir)
		if err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
		cfg.DataDir = dir
	}
	a := &App{cfg: cfg, DB: cfg.DB}
	if a.DB == nil {
		if cfg.DBPath == "" {
			return nil, errors.New("app: no database: set DBPath or DB")
		}
		opts := []store.Option{store.WithNow(cfg.Now)}
		if cfg.BcryptCost > 0 {
			opts = append(opts, store.WithBcryptCost(cfg.BcryptCost))
		}
		db, err := store.Open(ctx, cfg.DBPath, opts...)
		if err != nil {
			return nil, err
		}
		a.DB, a.ownDB = db, true
	}
	if err := a.build(ctx); err != nil {
		if a.ownDB {
			a.DB.Close()
		}
		return nil, err
	}
	return a, nil
}

// build makes the parts over a.DB, in the order they depend on each other.
func (a *App) build(ctx context.Context) error {
	cfg, log := a.cfg, a.cfg.Logger
	pages := a.DB.Pages()
	if seeded, err := pages.SeedPages(ctx, tools.SeedPages()); err != nil {
		return fmt.Errorf("seed workspace: %w", err)
	} else if seeded {
		log.Info("seeded the demo workspace", "pages", len(tools.SeedPages()))
	}
	key := cfg.SessionKey
	if len(key) == 0 {
		var err error
		if key, err = storedSessionKey(ctx, a.DB); err != nil {
			return err
		}
	}
	assets, err := static.New()
	if err != nil {
		return err
	}

	a.Models = cfg.Models
	if a.Models == nil {
		if a.Models, err = BuildModels(cfg.ModelEntries, cfg.Getenv, log); err != nil {
			return err
		}
	}
	if err := a.seedSandbox(); err != nil {
		return err
	}
	if a.Agents, err = a.loadAgents(pages); err != nil {
		return err
	}
	a.Servers = agentsfile.Servers(a.Agents)
	// The first admin's password is shown once: only when the rest of the
	// configuration holds, so a bad agents file or model entry does not
	// use it up on a start that fails.
	if cfg.FirstAdmin != nil {
		if err := ensureAdmin(ctx, a.DB, cfg.FirstAdmin); err != nil {
			return err
		}
	}
	offered := make([]web.OfferedModel, len(a.Models))
	byName := make(map[string]engine.Model, len(a.Models))
	for i, m := range a.Models {
		offered[i] = web.OfferedModel{Name: m.Name, Description: m.Description}
		byName[m.Name] = m.Model
	}
	a.Runtime, err = engine.NewRuntime(engine.RuntimeConfig{
		Store:  a.DB,
		Agents: a.Agents,
		Models: func(name string) (engine.Model, error) {
			if m, ok := byName[name]; ok {
				return m, nil
			}
			return nil, fmt.Errorf("%w %q: it is not configured on this server (COUNTERSIGN_MODELS)", engine.ErrUnknownModel, name)
		},
		Workers:   cfg.Workers,
		Lease:     cfg.Lease,
		ReapEvery: cfg.ReapEvery,
		FourEyes:  cfg.FourEyes,
		CheckArgs: checkArgs,
		Now:       cfg.Now,
		Logger:    log,
		Fault:     cfg.Fault,
	})
	if err != nil {
		return err
	}
	if a.Webhooks, err = webhook.New(webhook.Config{Outbox: a.DB, Now: cfg.Now, Logger: log}); err != nil {
		return err
	}
	a.Handler, err = web.New(web.Config{
		Store: a.DB, Runtime: a.Runtime, Agents: a.Agents, Models: offered, Assets: assets,
		SessionKey: key, SignIn: cfg.SignIn, Servers: a.serverStatus, Logger: log, Now: cfg.Now,
	})
	return err
}

// loadAgents returns Config.Agents over ws or else the agents of the agents
// file, whose policies look up the grants in the database.
func (a *App) loadAgents(ws tools.Workspace) ([]engine.Agent, error) {
	cfg := a.cfg
	if cfg.Agents != nil {
		return cfg.Agents(ws, cfg.Now), nil
	}
	name, data := agentsfile.DefaultName, agentsfile.Default()
	if cfg.AgentsFile != "" {
		var err error
		if data, err = os.ReadFile(cfg.AgentsFile); err != nil {
			return nil, fmt.Errorf("agents file: %w", err)
		}
		name = cfg.AgentsFile
	}
	models := make([]string, len(a.Models))
	for i, m := range a.Models {
		models[i] = m.Name
	}
	vars := map[string]string{}
	if cfg.DataDir != "" {
		vars["DATA_DIR"] = cfg.DataDir
	}
	agents, err := agentsfile.Load(name, data, agentsfile.Env{Tools: tools.Catalogue(ws, cfg.Now), Models: models,
		Grants: a.DB, FourEyes: cfg.FourEyes, Getenv: cfg.Getenv, Vars: vars, Now: cfg.Now, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("agents file: %w", err)
	}
	return agents, nil
}

// Start connects the MCP servers, then starts the runtime's workers, the
// webhook deliveries and, with a Retention, the hourly purge of older
// finished runs. Call it once.
//
// It waits for each server's first attempt to connect (bounded by its
// connect timeout) before the workers start, so that a run recovered at
// start is offered the tools of the servers that are up rather than
// refused them while they connect. A server that does not come up is
// retried in the background.
func (a *App) Start() {
	a.startServers()
	a.Runtime.Start()
	a.Webhooks.Start()
	if a.cfg.Retention <= 0 || a.stopPurge != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.stopPurge, a.purged = cancel, make(chan struct{})
	go func() {
		defer close(a.purged)
		a.purgeLoop(ctx)
	}()
}

// Close shuts down in reverse order: the webhook deliveries (waiting for
// the attempts in flight), the purge, the runtime, the MCP servers, then the
// database unless it came open in Config.DB.
func (a *App) Close() error {
	a.Webhooks.Close()
	if a.stopPurge != nil {
		a.stopPurge()
		<-a.purged
	}
	a.Runtime.Close()
	a.closeServers()
	if !a.ownDB {
		return nil
	}
	return a.DB.Close()
}

// purgeLoop deletes finished runs older than the retention period, hourly,
// until ctx is cancelled.
func (a *App) purgeLoop(ctx context.Context) {
	retention, log := a.cfg.Retention, a.cfg.Logger
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		n, err := a.DB.PurgeFinishedBefore(ctx, a.cfg.Now().Add(-retention), 0)
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

// ensureAdmin creates the first user, admin, with a random password printed
// once to w, when the database has no users. It is printed whatever the log
// level, since it is the only copy.
func ensureAdmin(ctx context.Context, db *store.DB, w io.Writer) error {
	n, err := db.CountUsers(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	password, err := NewPassword()
	if err != nil {
		return err
	}
	if _, err := db.CreateUser(ctx, "admin", password, store.RoleAdmin); err != nil {
		return fmt.Errorf("create first admin: %w", err)
	}
	_, err = fmt.Fprintf(w, "created the first user, shown once, keep it: user=admin password=%s\n", password)
	return err
}

// storedSessionKey returns the session key kept in the database, generating
// it on the first start.
func storedSessionKey(ctx context.Context, db *store.DB) ([]byte, error) {
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

// NewPassword returns a random password for a new user.
func NewPassword() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate password: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
