//go:build !linux

package mcptools

import "os/exec"

// setProcAttr does nothing where there is no parent-death signal: a stdio
// server is stopped by Close, but may outlive a countersign that is killed.
func setProcAttr(*exec.Cmd) {}
