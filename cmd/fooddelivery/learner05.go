//go:build learner05

package main

import (
	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/internal/compose"
	breaker "github.com/gophereats/resilience/labs/05-breaker"
)

// Built only with -tags learner05, which go run ./cmd/workshop live 05
// adds: your labs/05-breaker code at lab 05's integration point, plugged
// by the same glue and the same lines as the reference solution in
// solutions.go. Without the tag nothing under labs/ is compiled, so a lab
// you are still writing never breaks the system.
func init() {
	compose.Learners[5] = compose.Lab05(func(s compose.BreakerSettings[breaker.State]) breaker.Settings {
		return breaker.Settings{Name: s.Name, Window: s.Window, FailureRate: s.FailureRate, MinCalls: s.MinCalls, OpenFor: s.OpenFor,
			HalfOpenCalls: s.HalfOpenCalls, Logger: s.Logger, OnStateChange: s.OnStateChange}
	}, breaker.New, func(cb *breaker.CircuitBreaker, next fooddelivery.Payer) fooddelivery.Payer {
		return breaker.Payer{Breaker: cb, Next: next}
	}, breaker.NewOrderClient)
}
