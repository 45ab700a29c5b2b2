//go:build learner04

package main

import (
	"github.com/gophereats/resilience/fooddelivery/retry"
	"github.com/gophereats/resilience/internal/compose"
	retrybudgets "github.com/gophereats/resilience/labs/04-retry-budgets"
)

// Built only with -tags learner04, which go run ./cmd/workshop live 04
// adds: your labs/04-retry-budgets code at lab 04's integration point,
// plugged by the same glue and the same lines as the reference solution in
// solutions.go. Without the tag nothing under labs/ is compiled, so a lab
// you are still writing never breaks the system.
func init() {
	compose.Learners[4] = compose.Lab04(retrybudgets.NewRetryBudget, func(attempts int, budget *retrybudgets.RetryBudget, backoff retry.Policy) retry.Retrier {
		return &retrybudgets.BudgetedRetry{Attempts: attempts, Budget: budget, Backoff: backoff}
	})
}
