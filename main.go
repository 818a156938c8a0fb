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
//	countersign token create USER NAME       make an API token acting as USER; the
//	                                         token is printed once
//	countersign token list [USER]            list API tokens (never their secrets)
//	countersign token revoke ID              revoke an API token
//	countersign audit verify [RUN]           verify the audit record of a run, or of
//	                                         every run; fails when one is altered
//	countersign audit export RUN             print a run's audit record as JSON lines
//
// Configuration comes from COUNTERSIGN_* environment variables; see README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"countersign/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "countersign:", err)
		os.Exit(1)
	}
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
		return migrateCommand(ctx, cfg, stdout)
	case "user":
		return userCommand(ctx, cfg, args[2:], getenv, stdout)
	case "token":
		return tokenCommand(ctx, cfg, args[2:], stdout)
	case "audit":
		return auditCommand(ctx, cfg, args[2:], stdout)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, "usage: countersign [serve | migrate | user add NAME ROLE | user list | user disable NAME | token create USER NAME | token list [USER] | token revoke ID | audit verify [RUN] | audit export RUN]")
		return nil
	default:
		return fmt.Errorf("unknown command %q (try: serve, migrate, user, token, audit)", cmd)
	}
}

// serve runs the web server, the runtime and the retention purge until ctx is
// cancelled, then shuts them down in reverse order: the HTTP server, then the
// app (the purge, the runtime, the database).
func serve(ctx context.Context, cfg config, getenv func(string) string, log *slog.Logger, stdout io.Writer) error {
	if cfg.sessionKey != "" && len(cfg.sessionKey) < 32 {
		return errors.New("COUNTERSIGN_SESSION_KEY must be at least 32 characters")
	}
	a, err := app.New(ctx, app.Config{
		DBPath:       cfg.dbPath,
		SessionKey:   []byte(cfg.sessionKey),
		FirstAdmin:   stdout,
		ModelEntries: cfg.models,
		AgentsFile:   cfg.agentsFile,
		Getenv:       getenv,
		Workers:      cfg.workers,
		Lease:        cfg.lease,
		ReapEvery:    cfg.reapEvery,
		FourEyes:     cfg.fourEyes,
		Retention:    cfg.retention,
		Fault:        faultHook(cfg.fault, stdout),
		Logger:       log,
	})
	if err != nil {
		return err
	}
	defer func() {
		if err := a.Close(); err != nil {
			log.Error("close database", "err", err)
		}
	}()

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.addr, err)
	}
	srv := &http.Server{Handler: a.Handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute}
	a.Start()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "countersign listening on http://%s\n", displayAddr(ln.Addr()))

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve: %w", err)
		}
	}
	log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		log.Error("http shutdown", "err", err)
	}
	return nil
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
