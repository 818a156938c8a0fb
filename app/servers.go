package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"countersign/engine/mcptools"
	"countersign/engine/tools"
)

// SandboxDir is the folder under the data directory that the file
// assistant's MCP filesystem server works in.
const SandboxDir = "sandbox"

// seedSandbox creates the demo sandbox with its files when the data
// directory has none; a sandbox that exists is left as it is, whatever
// was done to it.
func (a *App) seedSandbox() error {
	if a.cfg.DataDir == "" {
		return nil
	}
	dir := filepath.Join(a.cfg.DataDir, SandboxDir)
	switch _, err := os.Stat(dir); {
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("sandbox: %w", err)
	}
	// The files go into a temporary folder renamed into place, so that a
	// start that fails halfway leaves no half-seeded sandbox behind.
	tmp, err := os.MkdirTemp(a.cfg.DataDir, ".sandbox-")
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	defer os.RemoveAll(tmp)
	for name, body := range tools.SandboxFiles() {
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	a.cfg.Logger.Info("seeded the demo sandbox", "dir", dir, "files", len(tools.SandboxFiles()))
	return nil
}

// startServers starts every MCP server at once and returns when each has
// ended its first attempt to connect.
func (a *App) startServers() {
	var wg sync.WaitGroup
	for _, s := range a.Servers {
		wg.Go(func() { s.Start(context.Background()) })
	}
	wg.Wait()
}

// closeServers stops every MCP server and waits for them.
func (a *App) closeServers() {
	var wg sync.WaitGroup
	for _, s := range a.Servers {
		wg.Go(func() {
			if err := s.Close(); err != nil {
				a.cfg.Logger.Warn("close MCP server", "agent", s.Config().Agent, "server", s.Config().Name, "err", err)
			}
		})
	}
	wg.Wait()
}

// serverStatus returns where the MCP servers of agent stand, in the order
// the agents file declares them.
func (a *App) serverStatus(agent string) []mcptools.Status {
	var out []mcptools.Status
	for _, s := range a.Servers {
		if s.Config().Agent == agent {
			out = append(out, s.Status())
		}
	}
	return out
}
