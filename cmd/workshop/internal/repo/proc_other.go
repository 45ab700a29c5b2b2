//go:build !unix

package repo

import "os/exec"

// ownProcessGroup does nothing here: on Windows, cancelling cmd kills the
// go command, and its test binaries end with their -timeout.
func ownProcessGroup(cmd *exec.Cmd) {}
