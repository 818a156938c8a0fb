package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// helperEnv, set in its environment, makes the test binary an MCP server
// over stdio (see helperMain) instead of running the tests.
const helperEnv = "MCPTOOLS_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(m.Run())
}

// helperMain serves over stdio a write tool that blocks until cancelled
// and a read tool that returns its environment; mode "fail" complains on
// stderr and exits instead.
func helperMain(mode string) int {
	if mode == "fail" {
		fmt.Fprintln(os.Stderr, "starting")
		fmt.Fprintln(os.Stderr, "config error: no sandbox folder given")
		return 2
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "helper", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "slow_write", InputSchema: object()},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "slow_write started")
			<-ctx.Done()
			return nil, ctx.Err()
		})
	srv.AddTool(&mcp.Tool{Name: "env", InputSchema: object(), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult(strings.Join(os.Environ(), "\n")), nil
		})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startHelper starts a Server over stdio on the test binary as a helper.
func startHelper(t *testing.T, mode string, env map[string]string) *Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{helperEnv: mode}
	for k, v := range env {
		e[k] = v
	}
	s := New(ServerConfig{Agent: "tester", Name: "helper", Command: exe, Env: e, Dir: t.TempDir(),
		CallTimeout: time.Hour, MinBackoff: time.Hour, MaxBackoff: time.Hour},
		Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { _ = s.Close() })
	s.Start(context.Background())
	return s
}

func TestStdioGetsASmallEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-do-not-leak")
	t.Setenv("LANG", "C.UTF-8")
	s := startHelper(t, "serve", map[string]string{"SANDBOX": "/tmp/sandbox"})
	out, err := toolNamed(t, s, "env").Call(context.Background(), json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(out, "\n")
	for _, want := range []string{"SANDBOX=/tmp/sandbox", "LANG=C.UTF-8", "PATH=" + os.Getenv("PATH")} {
		if !contains(out, want) {
			t.Errorf("the server's environment %q lacks %s", env, want)
		}
	}
	if contains(out, "sk-do-not-leak") {
		t.Fatalf("the server got our API key: %q", env)
	}
	if st := s.Status(); st.Transport != "stdio" || !strings.HasSuffix(strings.Fields(st.Target)[0], ".test") {
		t.Errorf("transport %q target %q", st.Transport, st.Target)
	}
}

func TestServerEnv(t *testing.T) {
	ours := map[string]string{"PATH": "/bin", "HOME": "/home/a", "ANTHROPIC_API_KEY": "k", "TZ": ""}
	got := serverEnv(func(k string) string { return ours[k] }, map[string]string{"HOME": "/srv", "ROOT": "/data"})
	want := []string{"HOME=/srv", "PATH=/bin", "ROOT=/data"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("env %q, want %q", got, want)
	}
}

func TestStdioKilledMidWriteIsInDoubt(t *testing.T) {
	s := startHelper(t, "serve", nil)
	tl := toolNamed(t, s, "slow_write")
	s.mu.Lock()
	cmd, stderr := s.cmd, s.stderr
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		t.Fatal("no process for a stdio server")
	}
	call := callAsync(tl, `{}`)
	waitFor(t, "the call to reach the server", func() bool { return contains(stderr.tail(), "slow_write started") })
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	r := await(t, call)
	if !isInDoubt(r.err) {
		t.Fatalf("a write whose server was killed returned %q, %v; want a write in doubt", r.out, r.err)
	}
	waitFor(t, "the server to go down", func() bool { return s.Status().State == StateDown })
	if s.Tools() != nil {
		t.Fatal("a dead server offers tools")
	}
	if st := s.Status(); !contains(st.Err, "slow_write started") {
		t.Errorf("Err %q lacks the server's last stderr line", st.Err)
	}
}

func TestStdioStartFailureShowsStderr(t *testing.T) {
	s := startHelper(t, "fail", nil)
	st := s.Status()
	if st.State != StateDown || st.Attempts != 1 {
		t.Fatalf("status of a server that exits at once: %+v", st)
	}
	if !strings.Contains(st.Err, "starting | config error: no sandbox folder given") {
		t.Fatalf("Err %q does not end with the server's stderr", st.Err)
	}
}

func TestStderrKeepsTheLastLines(t *testing.T) {
	var b stderrLines
	for i := range 8 {
		fmt.Fprintf(&b, "line %d\n\n", i)
	}
	_, _ = b.Write([]byte("unfinished " + strings.Repeat("x", 1000)))
	got := b.tail()
	want := "line 4 | line 5 | line 6 | line 7 | unfinished " + strings.Repeat("x", maxStderrLineSize-len("unfinished "))
	if got != want {
		t.Fatalf("tail = %q, want %q", got, want)
	}
}
