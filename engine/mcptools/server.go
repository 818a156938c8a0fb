package mcptools

import (
	"context"
	"log/slog"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"countersign/engine"
)

// State is where a server's connection stands.
type State string

// States of a server.
const (
	StateConnecting State = "connecting" // the first attempt has not ended
	StateUp         State = "up"         // connected: its tools are offered
	StateDown       State = "down"       // not connected: retried at NextRetry
	StateClosed     State = "closed"     // Close was called
)

// Status is what the playground and the run page show of a server.
type Status struct {
	Agent, Name string
	// Transport is "stdio" or "http" ("custom" with Options.Transport);
	// Target the command or the URL (without its query), for people.
	Transport, Target string
	State             State
	// Since is when the server entered State.
	Since time.Time
	// Err is why the last attempt failed or the connection dropped; for a
	// stdio server it ends with the last lines the process wrote to stderr.
	Err string
	// Attempts counts the failed attempts since the server was last up.
	Attempts int
	// NextRetry is when a down server is tried again.
	NextRetry time.Time
	// Tools are the names of the tools offered while up; Hidden those
	// the server lists but Tools of the config leaves out; Missing those
	// Tools of the config names but the server does not list.
	Tools, Hidden, Missing []string
}

// Options are what a Server needs beyond its config.
type Options struct {
	// Logger defaults to slog.Default(); Now to time.Now.
	Logger *slog.Logger
	Now    func() time.Time
	// Transport, when set, replaces the stdio command and the URL of the
	// config: each connection attempt calls it for a fresh transport. Tests
	// and embedders use it to reach an in-process server.
	Transport func(ctx context.Context) (mcp.Transport, error)
}

// Server is one MCP server of an agent: it keeps a connection, reconnects
// with backoff, and offers the server's tools while it is up. It is an
// engine.Toolset.
type Server struct {
	cfg    ServerConfig
	opts   Options
	log    *slog.Logger
	client *mcp.Client
	// relist is signalled when the server says its tools changed.
	relist chan struct{}

	// ctx lives until Close; calls in flight end with it.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	started bool
	st      Status
	session *mcp.ClientSession
	tools   []engine.Tool
	// readOnly says which listed tools only read (see catalog).
	readOnly map[string]bool
	// cmd and stderr are the process of the current stdio attempt and
	// what it writes to stderr, for tests.
	cmd    *exec.Cmd
	stderr *stderrLines
}

var _ engine.Toolset = (*Server)(nil)

// New returns the server of cfg, not connected: Start connects it. A config
// that does not validate (see ServerConfig.Validate) makes every attempt
// fail with that error, shown in the status.
func New(cfg ServerConfig, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:    cfg,
		opts:   opts,
		log:    opts.Logger.With("agent", cfg.Agent, "mcp_server", cfg.Name),
		relist: make(chan struct{}, 1),
		ctx:    ctx,
		cancel: cancel,
		done:   make(chan struct{}),
	}
	s.client = mcp.NewClient(&mcp.Implementation{Name: "countersign", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case s.relist <- struct{}{}:
			default:
			}
		},
	})
	for name, p := range cfg.Previews {
		if err := p.Validate(); err != nil {
			s.log.Warn("mcp server preview misconfigured: its previews fail", "tool", name, "err", err)
		}
	}
	transport, target := cfg.describe()
	if opts.Transport != nil {
		transport = "custom"
	}
	s.st = Status{Agent: cfg.Agent, Name: cfg.Name, Transport: transport, Target: target,
		State: StateConnecting, Since: opts.Now()}
	return s
}

// Config returns the server's config.
func (s *Server) Config() ServerConfig { return s.cfg }

// Start connects in the background, retrying with backoff until Close, and
// returns once the first attempt has ended (up or down) or ctx is done. The
// retries outlive ctx: only Close stops them. A second Start, or a Start
// after Close, does nothing.
func (s *Server) Start(ctx context.Context) {
	s.mu.Lock()
	if s.started || s.st.State == StateClosed {
		s.mu.Unlock()
		return
	}
	s.started = true
	s.mu.Unlock()
	first := make(chan struct{})
	go s.run(first)
	select {
	case <-first:
	case <-ctx.Done():
	}
}

// Close stops the retries and closes the connection (a stdio server's
// process is stopped). It cancels calls in flight and waits for all of it
// to end.
func (s *Server) Close() error {
	s.cancel()
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if started {
		<-s.done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.State != StateClosed {
		s.st.State, s.st.Since = StateClosed, s.opts.Now()
		s.st.NextRetry, s.st.Tools, s.st.Hidden, s.st.Missing = time.Time{}, nil, nil, nil
	}
	s.session, s.tools, s.readOnly = nil, nil, nil
	return nil
}

// Tools returns the server's tools while it is up, nil otherwise.
func (s *Server) Tools() []engine.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.State != StateUp {
		return nil
	}
	return slices.Clone(s.tools)
}

// Status returns where the server stands.
func (s *Server) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.Tools, st.Hidden, st.Missing = slices.Clone(st.Tools), slices.Clone(st.Hidden), slices.Clone(st.Missing)
	return st
}

// current returns the session while the server is up, nil otherwise.
func (s *Server) current() *mcp.ClientSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session
}

// onlyReads reports whether the server lists a tool of that name that
// says it only reads.
func (s *Server) onlyReads(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readOnly[name]
}

// source is the Source hint of the server's tools.
func (s *Server) source() string { return "MCP server " + s.cfg.Name }
