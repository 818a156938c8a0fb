package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// slowServer has a write and a read tool that block until cancelled, and
// a read tool that answers at once.
func slowServer(write, read *blocker) *memServer {
	return newMemServer(func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "slow_write", InputSchema: object()}, write.handle)
		s.AddTool(&mcp.Tool{Name: "slow_read", InputSchema: object(), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, read.handle)
		s.AddTool(&mcp.Tool{Name: "ping", InputSchema: object(), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return textResult("pong"), nil
			})
	})
}

func TestDropMidWriteIsInDoubtAndReconnects(t *testing.T) {
	write, read := newBlocker(), newBlocker()
	m := slowServer(write, read)
	s := start(t, m, ServerConfig{CallTimeout: time.Hour}, nil)
	tl := toolNamed(t, s, "slow_write")

	call := callAsync(tl, `{}`)
	<-write.started
	m.drop()
	r := await(t, call)
	if !isInDoubt(r.err) {
		t.Fatalf("a write whose server dropped returned %q, %v; want a write in doubt", r.out, r.err)
	}
	if !strings.Contains(r.err.Error(), "may or may not have happened") {
		t.Errorf("error %q does not say the write may have happened", r.err)
	}

	// The drop withdraws the tools, and the server comes back after a
	// backoff with them.
	waitFor(t, "the server to go down or come back", func() bool { return m.connectsSoFar() >= 2 })
	waitFor(t, "the server to be up again", func() bool { return s.Status().State == StateUp })
	if out, err := toolNamed(t, s, "ping").Call(context.Background(), json.RawMessage(`{}`)); err != nil || out != "pong" {
		t.Fatalf("after reconnecting ping = %q, %v", out, err)
	}
}

func TestDropWithdrawsToolsAtOnce(t *testing.T) {
	m := slowServer(newBlocker(), newBlocker())
	s := start(t, m, ServerConfig{MinBackoff: time.Hour, MaxBackoff: time.Hour}, nil)
	if len(s.Tools()) != 3 {
		t.Fatalf("offered %v", names(s.Tools()))
	}
	ping := toolNamed(t, s, "ping")
	m.drop()
	waitFor(t, "the server to go down", func() bool { return s.Status().State == StateDown })
	if got := s.Tools(); got != nil {
		t.Fatalf("a down server offers %v", names(got))
	}
	st := s.Status()
	if !strings.Contains(st.Err, "connection lost") || st.NextRetry.IsZero() || st.Tools != nil {
		t.Fatalf("status of a dropped server: %+v", st)
	}
	_, err := ping.Call(context.Background(), json.RawMessage(`{}`))
	if err == nil || err.Error() != "MCP server mem is down: the call was not sent" {
		t.Fatalf("a call while down = %v", err)
	}
}

func TestDropMidReadIsAPlainError(t *testing.T) {
	write, read := newBlocker(), newBlocker()
	m := slowServer(write, read)
	s := start(t, m, ServerConfig{CallTimeout: time.Hour}, nil)
	call := callAsync(toolNamed(t, s, "slow_read"), `{}`)
	<-read.started
	m.drop()
	r := await(t, call)
	if r.err == nil || isInDoubt(r.err) {
		t.Fatalf("a read whose server dropped returned %q, %v; want a plain error", r.out, r.err)
	}
}

func TestCallTimeoutOfAWriteIsInDoubt(t *testing.T) {
	write := newBlocker()
	s := start(t, slowServer(write, newBlocker()), ServerConfig{CallTimeout: 50 * time.Millisecond}, nil)
	_, err := toolNamed(t, s, "slow_write").Call(context.Background(), json.RawMessage(`{}`))
	if !isInDoubt(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a write that timed out returned %v; want a write in doubt", err)
	}
}

func TestFailedAttemptsBackOff(t *testing.T) {
	m := slowServer(newBlocker(), newBlocker())
	m.setRefuse(errors.New("no route to host"))
	rec := &recorder{}
	s := start(t, m, ServerConfig{MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond}, slog.New(rec))
	st := s.Status()
	if st.State != StateDown || st.Attempts != 1 || !strings.Contains(st.Err, "no route to host") {
		t.Fatalf("status after a failed first attempt: %+v", st)
	}
	if s.Tools() != nil {
		t.Fatal("a server that never came up offers tools")
	}
	// The status counts an attempt just before its record is logged, so
	// wait for the records themselves.
	waitFor(t, "five failed attempts logged", func() bool { return len(rec.attrs("mcp server down", "retry_in")) >= 5 })
	if st := s.Status(); st.Attempts < 5 {
		t.Fatalf("five failures logged but the status counts %d attempts", st.Attempts)
	}
	var waits []time.Duration
	for _, v := range rec.attrs("mcp server down", "retry_in")[:5] {
		waits = append(waits, v.Duration())
	}
	want := []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 4 * time.Millisecond, 4 * time.Millisecond}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits between attempts %v, want %v", waits, want)
		}
	}

	m.setRefuse(nil)
	waitFor(t, "the server to come up", func() bool { return s.Status().State == StateUp })
	if st := s.Status(); st.Attempts != 0 || st.Err != "" || len(s.Tools()) != 3 {
		t.Fatalf("status once up: %+v", st)
	}
	waitFor(t, "coming up to be logged", func() bool { return len(rec.attrs("mcp server up", "tools")) > 0 })
}

func TestCloseEndsCallsAndStops(t *testing.T) {
	write := newBlocker()
	m := slowServer(write, newBlocker())
	s := start(t, m, ServerConfig{CallTimeout: time.Hour}, nil)
	call := callAsync(toolNamed(t, s, "slow_write"), `{}`)
	<-write.started
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if r := await(t, call); !isInDoubt(r.err) {
		t.Fatalf("a write cut short by Close returned %v; want a write in doubt", r.err)
	}
	select {
	case <-s.done:
	default:
		t.Fatal("Close returned before the connect loop ended")
	}
	if st := s.Status(); st.State != StateClosed || s.Tools() != nil {
		t.Fatalf("after Close: %+v", st)
	}
	s.Start(context.Background()) // does nothing after Close
	if st := s.Status(); st.State != StateClosed {
		t.Fatalf("Start after Close: %+v", st)
	}
}

func TestStartReturnsWhenCtxIsDone(t *testing.T) {
	m := newMemServer(nil)
	hold := make(chan struct{})
	s := New(ServerConfig{Name: "stuck"}, Options{Transport: func(ctx context.Context) (mcp.Transport, error) {
		select {
		case <-hold:
		case <-ctx.Done():
		}
		return nil, errors.New("never")
	}})
	defer m.drop()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.Start(ctx)
	if st := s.Status(); st.State != StateConnecting {
		t.Fatalf("state %s while the first attempt hangs, want connecting", st.State)
	}
	close(hold)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	write := newBlocker()
	m := slowServer(write, newBlocker())
	s := New(ServerConfig{Name: "mem", CallTimeout: time.Hour, MinBackoff: time.Millisecond},
		Options{Transport: m.transport, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	s.Start(context.Background())
	if _, err := toolNamed(t, s, "ping").Call(context.Background(), json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	call := callAsync(toolNamed(t, s, "slow_write"), `{}`)
	<-write.started
	m.drop()
	await(t, call)
	waitFor(t, "the server to come back", func() bool { return s.Status().State == StateUp })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	m.drop()
	deadline := time.Now().Add(20 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines left, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestConnectTimeoutIsDown(t *testing.T) {
	// A server that never answers the handshake.
	var mu sync.Mutex
	var pipes []net.Conn
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range pipes {
			_ = p.Close()
		}
	}()
	s := New(ServerConfig{Name: "mute", ConnectTimeout: 50 * time.Millisecond, MinBackoff: time.Hour},
		Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Transport: func(context.Context) (mcp.Transport, error) {
			ours, theirs := net.Pipe()
			mu.Lock()
			pipes = append(pipes, ours, theirs)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, theirs) }()
			return &mcp.IOTransport{Reader: ours, Writer: ours}, nil
		}})
	defer s.Close()
	s.Start(context.Background())
	if st := s.Status(); st.State != StateDown || !strings.Contains(st.Err, "no answer within 50ms") {
		t.Fatalf("status of a mute server: %+v", st)
	}
}
