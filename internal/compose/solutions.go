package compose

import (
	"net/http"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/retry"
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

// The reference solutions, plugged by each lab's glue (compose.go). Every
// learnerNN.go of cmd/fooddelivery registers the learner's package with
// the same lines: keep them in step.
func init() {
	Solutions[1] = Lab01(timeouts.NewPaymentClient)
	Solutions[2] = Lab02(deadlines.Middleware, deadlines.Transport)
	Solutions[3] = Lab03(func(base http.RoundTripper, seed int64, attempts int, baseDelay, maxDelay time.Duration) http.RoundTripper {
		return &retries.Transport{Base: base, Seed: seed, Attempts: attempts, BaseDelay: baseDelay, MaxDelay: maxDelay}
	})
	Solutions[4] = Lab04(retrybudgets.NewRetryBudget, func(attempts int, budget *retrybudgets.RetryBudget, backoff retry.Policy) retry.Retrier {
		return &retrybudgets.BudgetedRetry{Attempts: attempts, Budget: budget, Backoff: backoff}
	})
	Solutions[5] = Lab05(func(s BreakerSettings[breaker.State]) breaker.Settings {
		return breaker.Settings{Name: s.Name, Window: s.Window, FailureRate: s.FailureRate, MinCalls: s.MinCalls, OpenFor: s.OpenFor,
			HalfOpenCalls: s.HalfOpenCalls, Logger: s.Logger, OnStateChange: s.OnStateChange}
	}, breaker.New, func(cb *breaker.CircuitBreaker, next fooddelivery.Payer) fooddelivery.Payer {
		return breaker.Payer{Breaker: cb, Next: next}
	}, breaker.NewOrderClient)
	Solutions[6] = Lab06(bulkhead.Compartments)
	Solutions[7] = Lab07(fallback.Wrap)
	Solutions[8] = Lab08(idempotency.ChargeKey, idempotency.NewKeyStore, idempotency.AssignCourier)
	Solutions[9] = Lab09(hedging.NewLatencyTracker, hedging.NewHedgeBudget,
		func(base http.RoundTripper, replicas []string, latencies *hedging.LatencyTracker, budget *hedging.HedgeBudget) http.RoundTripper {
			return &hedging.Hedger{Base: base, Replicas: replicas, Latencies: latencies, Budget: budget}
		})
}
