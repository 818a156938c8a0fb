package mcptools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"countersign/engine"
)

// run keeps the server connected until Close: it connects, serves the
// session until it drops, and waits a backoff that doubles from MinBackoff
// to MaxBackoff between failed attempts. first is closed when the first
// attempt ends.
func (s *Server) run(first chan struct{}) {
	defer close(s.done)
	var once sync.Once
	firstDone := func() { once.Do(func() { close(first) }) }
	defer firstDone()

	backoff := s.cfg.minBackoff()
	for {
		sess, listed, stderr, err := s.attempt()
		if s.ctx.Err() != nil {
			if sess != nil {
				_ = sess.Close()
			}
			return
		}
		if err == nil {
			backoff = s.cfg.minBackoff()
			s.up(sess, listed)
			firstDone()
			err = s.serve(sess)
			if s.ctx.Err() != nil {
				return
			}
			s.down(withStderr(fmt.Errorf("connection lost: %w", err), stderr), backoff, false)
		} else {
			s.down(withStderr(err, stderr), backoff, true)
			firstDone()
		}
		timer := time.NewTimer(backoff)
		select {
		case <-s.ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		backoff = min(2*backoff, s.cfg.maxBackoff())
	}
}

// attempt connects once and lists the server's tools, within
// ConnectTimeout.
func (s *Server) attempt() (*mcp.ClientSession, []*mcp.Tool, *stderrLines, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.connectTimeout())
	defer cancel()
	t, stderr, err := s.transport(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	sess, err := s.client.Connect(ctx, t, nil)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, nil, stderr, fmt.Errorf("connect: no answer within %s: %w", s.cfg.connectTimeout(), err)
	}
	if err != nil {
		return nil, nil, stderr, fmt.Errorf("connect: %w", err)
	}
	listed, err := listTools(ctx, sess)
	if err != nil {
		_ = sess.Close()
		return nil, nil, stderr, err
	}
	return sess, listed, stderr, nil
}

// listTools lists every tool of the server, page after page.
func listTools(ctx context.Context, sess *mcp.ClientSession) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", err)
		}
		out = append(out, t)
	}
	return out, nil
}

// serve waits for the session to end, relisting the tools when the server
// says they changed. It returns why the session ended, once the session
// is closed.
func (s *Server) serve(sess *mcp.ClientSession) error {
	ended := make(chan error, 1)
	go func() { ended <- sess.Wait() }()
	for {
		select {
		case <-s.ctx.Done():
			_ = sess.Close()
			<-ended
			return s.ctx.Err()
		case err := <-ended:
			// The connection is gone; Close releases what the session
			// still holds (its subscription to notifications).
			_ = sess.Close()
			if err == nil {
				err = errors.New("the server closed the connection")
			}
			return err
		case <-s.relist:
			ctx, cancel := context.WithTimeout(s.ctx, s.cfg.connectTimeout())
			listed, err := listTools(ctx, sess)
			cancel()
			if err != nil {
				_ = sess.Close()
				<-ended
				return fmt.Errorf("relisting after the tools changed: %w", err)
			}
			s.offer(listed)
			s.log.Info("mcp server tools changed", "tools", len(listed))
		}
	}
}

// up records a new session and offers its tools.
func (s *Server) up(sess *mcp.ClientSession, listed []*mcp.Tool) {
	c := s.catalog(listed)
	s.mu.Lock()
	s.session = sess
	s.st.State, s.st.Since = StateUp, s.opts.Now()
	s.st.Err, s.st.Attempts, s.st.NextRetry = "", 0, time.Time{}
	s.setCatalog(c)
	st := s.st
	s.mu.Unlock()
	s.log.Info("mcp server up", "transport", st.Transport, "target", st.Target, "tools", len(st.Tools), "hidden", len(st.Hidden))
}

// down withdraws the tools at once and records why; failed says an
// attempt failed (rather than a session dropping).
func (s *Server) down(err error, retryIn time.Duration, failed bool) {
	now := s.opts.Now()
	s.mu.Lock()
	s.session, s.tools, s.readOnly, s.cmd, s.stderr = nil, nil, nil, nil, nil
	s.st.State, s.st.Since, s.st.Err = StateDown, now, err.Error()
	if failed {
		s.st.Attempts++
	}
	s.st.NextRetry = now.Add(retryIn)
	s.st.Tools, s.st.Hidden, s.st.Missing = nil, nil, nil
	attempts := s.st.Attempts
	s.mu.Unlock()
	s.log.Warn("mcp server down", "err", err, "attempts", attempts, "retry_in", retryIn)
}

// offer makes the listed tools the offered ones, if the server is still
// up.
func (s *Server) offer(listed []*mcp.Tool) {
	c := s.catalog(listed)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.State == StateUp {
		s.setCatalog(c)
	}
}

// catalog is what a listing of the server's tools offers.
type catalog struct {
	tools                  []engine.Tool
	names, hidden, missing []string
	// readOnly are the listed tools, hidden or not, that say they only
	// read: the tools a preview may call.
	readOnly map[string]bool
}

// catalog keeps the listed tools the config's allowlist lets through, and
// says which names it hides and which it names in vain.
func (s *Server) catalog(listed []*mcp.Tool) catalog {
	allow := s.cfg.Tools
	c := catalog{readOnly: map[string]bool{}}
	seen := map[string]bool{}
	for _, t := range listed {
		if t == nil || seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		c.readOnly[t.Name] = t.Annotations != nil && t.Annotations.ReadOnlyHint
		if len(allow) > 0 && !slices.Contains(allow, t.Name) {
			c.hidden = append(c.hidden, t.Name)
			continue
		}
		c.tools = append(c.tools, s.newTool(t))
		c.names = append(c.names, t.Name)
	}
	for _, name := range allow {
		if !seen[name] {
			c.missing = append(c.missing, name)
		}
	}
	if len(c.missing) > 0 {
		s.log.Warn("mcp server does not list tools the agents file names", "missing", c.missing)
	}
	return c
}

// setCatalog offers c; s.mu is held.
func (s *Server) setCatalog(c catalog) {
	s.tools, s.readOnly = c.tools, c.readOnly
	s.st.Tools, s.st.Hidden, s.st.Missing = c.names, c.hidden, c.missing
}

// withStderr adds the last lines of a stdio server's stderr to err.
func withStderr(err error, stderr *stderrLines) error {
	if stderr == nil {
		return err
	}
	if tail := stderr.tail(); tail != "" {
		return fmt.Errorf("%w (stderr: %s)", err, tail)
	}
	return err
}
