//go:build learner07

package main

import (
	"github.com/gophereats/resilience/internal/compose"
	fallback "github.com/gophereats/resilience/labs/07-fallback"
)

// Built only with -tags learner07, which go run ./cmd/workshop live 07
// adds: your labs/07-fallback code at lab 07's integration point, plugged
// by the same glue and the same lines as the reference solution in
// solutions.go. Without the tag nothing under labs/ is compiled, so a lab
// you are still writing never breaks the system.
func init() {
	compose.Learners[7] = compose.Lab07(fallback.Wrap)
}
