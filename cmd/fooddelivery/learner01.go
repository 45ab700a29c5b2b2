//go:build learner01

package main

import timeouts "github.com/gophereats/resilience/labs/01-timeouts"

// Built only with -tags learner01, which go run ./cmd/workshop live 01
// adds: your labs/01-timeouts code at lab 01's integration point, plugged
// by the same glue and the same lines as the reference solution in
// solutions.go. Without the tag nothing under labs/ is compiled, so a lab
// you are still writing never breaks the system.
func init() {
	learners[1] = lab01(timeouts.NewPaymentClient)
}
