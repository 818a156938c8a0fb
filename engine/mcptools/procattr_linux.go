package mcptools

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel kill a stdio server when countersign dies,
// even by SIGKILL, so that no server outlives the process that started it.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
