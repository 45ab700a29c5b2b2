//go:build learner08

package main

import (
	"github.com/gophereats/resilience/internal/compose"
	idempotency "github.com/gophereats/resilience/labs/08-idempotency"
)

// Built only with -tags learner08, which go run ./cmd/workshop live 08
// adds: your labs/08-idempotency code at lab 08's integration point,
// plugged by the same glue and the same lines as the reference solution in
// solutions.go. Without the tag nothing under labs/ is compiled, so a lab
// you are still writing never breaks the system.
func init() {
	compose.Learners[8] = compose.Lab08(idempotency.ChargeKey, idempotency.NewKeyStore, idempotency.AssignCourier)
}
