//go:build learner09

package main

import (
	"net/http"

	"github.com/gophereats/resilience/internal/compose"
	hedging "github.com/gophereats/resilience/labs/09-hedging"
)

// Built only with -tags learner09, which go run ./cmd/workshop live 09
// adds: your labs/09-hedging code at lab 09's integration point, plugged
// by the same glue and the same lines as the reference solution in
// solutions.go. Without the tag nothing under labs/ is compiled, so a lab
// you are still writing never breaks the system.
func init() {
	compose.Learners[9] = compose.Lab09(hedging.NewLatencyTracker, hedging.NewHedgeBudget,
		func(base http.RoundTripper, replicas []string, latencies *hedging.LatencyTracker, budget *hedging.HedgeBudget) http.RoundTripper {
			return &hedging.Hedger{Base: base, Replicas: replicas, Latencies: latencies, Budget: budget}
		})
}
