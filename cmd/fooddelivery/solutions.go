package main

import (
	"net/http"

	"github.com/gophereats/resilience/fooddelivery"
	timeouts "github.com/gophereats/resilience/solutions/01-timeouts"
	deadlines "github.com/gophereats/resilience/solutions/02-deadlines"
	retries "github.com/gophereats/resilience/solutions/03-retries"
	retrybudgets "github.com/gophereats/resilience/solutions/04-retry-budgets"
	breaker "github.com/gophereats/resilience/solutions/05-breaker"
	bulkhead "github.com/gophereats/resilience/solutions/06-bulkhead"
	fallback "github.com/gophereats/resilience/solutions/07-fallback"
	idempotency "github.com/gophereats/resilience/solutions/08-idempotency"
	hedging "github.com/gophereats/resilience/solutions/09-hedging"
)

// The reference solutions, plugged by each lab's glue (wiring.go). Every
// learnerNN.go registers the learner's package with the same lines: keep
// them in step.
func init() {
	solutions[1] = lab01(timeouts.NewPaymentClient)
	solutions[2] = lab02(deadlines.Middleware, deadlines.Transport)
	solutions[3] = lab03(func(base http.RoundTripper, seed int64) http.RoundTripper {
		return &retries.Transport{Base: base, Seed: seed}
	})
	solutions[4] = lab04(retrybudgets.NewRetryBudget, retrybudgets.Layers)
	solutions[5] = lab05(func(s breakerSettings[breaker.State]) breaker.Settings {
		return breaker.Settings{Name: s.Name, Window: s.Window, MinCalls: s.MinCalls, OpenFor: s.OpenFor,
			HalfOpenCalls: s.HalfOpenCalls, Logger: s.Logger, OnStateChange: s.OnStateChange}
	}, breaker.New, func(cb *breaker.CircuitBreaker, next fooddelivery.Payer) fooddelivery.Payer {
		return breaker.Payer{Breaker: cb, Next: next}
	}, breaker.NewOrderClient)
	solutions[6] = lab06(bulkhead.Compartments)
	solutions[7] = lab07(fallback.Wrap)
	solutions[8] = lab08(idempotency.ChargeKey, idempotency.NewKeyStore, idempotency.AssignCourier)
	solutions[9] = lab09(hedging.NewLatencyTracker, hedging.NewHedgeBudget,
		func(base http.RoundTripper, replicas []string, latencies *hedging.LatencyTracker, budget *hedging.HedgeBudget) http.RoundTripper {
			return &hedging.Hedger{Base: base, Replicas: replicas, Latencies: latencies, Budget: budget}
		})
}
