package mcptools

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// terminateWait is how long closing a stdio server waits for it to exit
// after its stdin is closed, and then after SIGTERM, before killing it.
const terminateWait = 2 * time.Second

// transport returns the transport of one connection attempt, and the
// stderr of its process for a stdio server (nil otherwise).
func (s *Server) transport(ctx context.Context) (mcp.Transport, *stderrLines, error) {
	if s.opts.Transport != nil {
		t, err := s.opts.Transport(ctx)
		return t, nil, err
	}
	if err := s.cfg.Validate(); err != nil {
		return nil, nil, err
	}
	if s.cfg.URL != "" {
		return s.httpTransport(), nil, nil
	}
	stderr := &stderrLines{}
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	cmd.Dir = s.cfg.Dir
	cmd.Env = serverEnv(os.Getenv, s.cfg.Env)
	cmd.Stderr = stderr
	setProcAttr(cmd)
	s.mu.Lock()
	s.cmd, s.stderr = cmd, stderr
	s.mu.Unlock()
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateWait}, stderr, nil
}

// httpTransport reaches the server over Streamable HTTP, sending the
// config's headers with every request.
func (s *Server) httpTransport() mcp.Transport {
	client := &http.Client{Transport: headerTransport{base: http.DefaultTransport, headers: s.cfg.Headers}}
	return &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: client}
}

// headerTransport adds headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

// RoundTrip implements http.RoundTripper.
func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}
