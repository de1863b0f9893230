//go:build unix

package realbatch

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the worker's shell and everything it starts in a
// group of their own, so that a hung worker is killed whole.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
