//go:build learner01

package main

import (
	"github.com/gophereats/resilience/internal/compose"
	timeouts "github.com/gophereats/resilience/labs/01-timeouts"
)

// Built only with -tags learner01, which go run ./cmd/workshop live 01
// adds: your labs/01-timeouts code at lab 01's integration point, plugged
// by the same glue and the same lines as the reference solution in
// solutions.go. Without the tag nothing under labs/ is compiled, so a lab
// you are still writing never breaks the system.
func init() {
	compose.Learners[1] = compose.Lab01(timeouts.NewPaymentClient)
}
