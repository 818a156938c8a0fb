package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"countersign/engine"
)

// memServer is an in-process MCP server reached over a pipe, which a test
// can cut to make the server drop, or refuse to make it fail to connect.
type memServer struct {
	srv *mcp.Server

	mu     sync.Mutex
	pipes  []net.Conn
	refuse error
	// connects counts the transports handed out.
	connects int
}

// newMemServer returns a server with the tools add adds.
func newMemServer(add func(*mcp.Server)) *memServer {
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	if add != nil {
		add(srv)
	}
	return &memServer{srv: srv}
}

// transport is the Options.Transport hook.
func (m *memServer) transport(ctx context.Context) (mcp.Transport, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refuse != nil {
		return nil, m.refuse
	}
	m.connects++
	ours, theirs := net.Pipe()
	if _, err := m.srv.Connect(ctx, &mcp.IOTransport{Reader: theirs, Writer: theirs}, nil); err != nil {
		return nil, err
	}
	m.pipes = append(m.pipes, ours, theirs)
	return &mcp.IOTransport{Reader: ours, Writer: ours}, nil
}

// drop cuts every connection, as a server that dies would.
func (m *memServer) drop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.pipes {
		_ = p.Close()
	}
	m.pipes = nil
}

// setRefuse makes the next attempts fail with err (nil: succeed).
func (m *memServer) setRefuse(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refuse = err
}

// start starts a Server of cfg over m and closes it when the test ends.
func start(t *testing.T, m *memServer, cfg ServerConfig, log *slog.Logger) *Server {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "mem"
	}
	cfg.Agent = "tester"
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff, cfg.MaxBackoff = time.Millisecond, 4*time.Millisecond
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := New(cfg, Options{Logger: log, Transport: m.transport})
	t.Cleanup(func() {
		_ = s.Close()
		m.drop()
	})
	s.Start(context.Background())
	return s
}

// waitFor polls cond until it holds, failing the test after a long while.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// toolNamed returns the offered tool of that name, failing if there is none.
func toolNamed(t *testing.T, s *Server, name string) engine.Tool {
	t.Helper()
	for _, tl := range s.Tools() {
		if tl.Name() == name {
			return tl
		}
	}
	t.Fatalf("tool %s is not offered; status %+v", name, s.Status())
	return nil
}

// names returns the names of tools.
func names(tools []engine.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name())
	}
	return out
}

// object is the schema of a tool with string arguments of these names.
func object(props ...string) json.RawMessage {
	p := map[string]any{}
	for _, name := range props {
		p[name] = map[string]any{"type": "string"}
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": p})
	return b
}

// textResult is a result with one text content.
func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// argsOf decodes a request's arguments.
func argsOf(req *mcp.CallToolRequest) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(req.Params.Arguments, &m)
	return m
}

// blocker is a tool handler that says when it started and then waits for
// its call to be cancelled.
type blocker struct{ started chan struct{} }

func newBlocker() *blocker { return &blocker{started: make(chan struct{}, 1)} }

func (b *blocker) handle(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	b.started <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}

// recorder is a slog handler that keeps the records it handles.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// attrs returns the values of an attribute in the records of a message.
func (r *recorder) attrs(msg, key string) []slog.Value {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []slog.Value
	for _, rec := range r.records {
		if rec.Message != msg {
			continue
		}
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == key {
				out = append(out, a.Value)
			}
			return true
		})
	}
	return out
}

// callResult is what a call returned, for calls made in a goroutine.
type callResult struct {
	out string
	err error
}

// callAsync calls t in a goroutine.
func callAsync(t engine.Tool, args string) chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		out, err := t.Call(context.Background(), json.RawMessage(args))
		ch <- callResult{out, err}
	}()
	return ch
}

// await returns the result of a call made by callAsync; a call that has
// not returned after a long while (far less than its CallTimeout) fails
// the test, since it should have returned as soon as the server went away.
func await(t *testing.T, ch chan callResult) callResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not return after its server went away")
	}
	return callResult{}
}

// isInDoubt reports whether err leaves a write in doubt.
func isInDoubt(err error) bool { return errors.Is(err, engine.ErrWriteInDoubt) }

// contains reports whether s contains sub, for messages.
func contains(s, sub string) bool { return strings.Contains(s, sub) }

// connectsSoFar returns how many transports m handed out.
func (m *memServer) connectsSoFar() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.connects
}
