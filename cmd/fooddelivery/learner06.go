//go:build learner06

package main

import (
	"github.com/gophereats/resilience/internal/compose"
	bulkhead "github.com/gophereats/resilience/labs/06-bulkhead"
)

// Built only with -tags learner06, which go run ./cmd/workshop live 06
// adds: your labs/06-bulkhead code at lab 06's integration point, plugged
// by the same glue and the same lines as the reference solution in
// solutions.go. Without the tag nothing under labs/ is compiled, so a lab
// you are still writing never breaks the system.
func init() {
	compose.Learners[6] = compose.Lab06(bulkhead.Compartments)
}
