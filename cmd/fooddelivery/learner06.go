//go:build learner06

package main

import bulkhead "github.com/gophereats/resilience/labs/06-bulkhead"

// Built only with -tags learner06, which go run ./cmd/workshop live 06
// adds: your labs/06-bulkhead code at lab 06's integration point, plugged
// by the same glue and the same lines as the reference solution in
// solutions.go. Without the tag nothing under labs/ is compiled, so a lab
// you are still writing never breaks the system.
func init() {
	learners[6] = lab06(bulkhead.Compartments)
}
