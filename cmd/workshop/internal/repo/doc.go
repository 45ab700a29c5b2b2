// Package repo is the workshop repository the tool works on, and the
// programs it runs there: Open finds the repository (the directory holding
// go.mod and labs/) and the go command; Workspace runs the go command and
// git in its root, each with a time limit and in a process group of its
// own, and reads `go test -json` through package gotest. It also holds the
// errors every command shares (ErrUsage, ErrFailed), the learner's
// answers to a question (Confirm), and the Gate that limits how many go
// commands run at once, highest priority first.
//
// It knows nothing of labs, steps or commands: what a lab is belongs to
// package lab, and every command is built on top of a Workspace.
package repo
