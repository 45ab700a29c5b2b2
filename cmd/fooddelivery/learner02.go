//go:build learner02

package main

import (
	"github.com/gophereats/resilience/internal/compose"
	deadlines "github.com/gophereats/resilience/labs/02-deadlines"
)

// Built only with -tags learner02, which go run ./cmd/workshop live 02
// adds: your labs/02-deadlines code at lab 02's integration point, plugged
// by the same glue and the same lines as the reference solution in
// solutions.go. Without the tag nothing under labs/ is compiled, so a lab
// you are still writing never breaks the system.
func init() {
	compose.Learners[2] = compose.Lab02(deadlines.Middleware, deadlines.Transport)
}
