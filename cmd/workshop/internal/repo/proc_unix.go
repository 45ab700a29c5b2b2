//go:build unix

package repo

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd in a process group of its own and makes its
// cancellation kill the whole group: a go test cancelled by watch or by
// Ctrl-C takes its test binaries with it, instead of leaving them running
// until their own -timeout.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
