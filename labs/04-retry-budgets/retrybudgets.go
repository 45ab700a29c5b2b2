// Package retrybudgets is lab 04 of the workshop: every layer of a
// checkout (gateway, order service, payment client) retries up to three
// times, so one tap with payment down becomes 27 calls to payment. Read
// README.md, then make `go test ./labs/04-retry-budgets/` pass by editing
// this file only.
package retrybudgets

import (
	"context"
	"errors"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/retry"
)

// RetryBudget limits the retries of one client to a fraction of its
// requests plus a small minimum rate. It must be safe for concurrent use.
type RetryBudget struct {
	ratio, minPerSecond, max float64
	// TODO(step 2): the budget's state (a token bucket works well: tokens,
	// and when they were last brought up to date), guarded by a mutex.
}

// NewRetryBudget returns a full budget. ratio is the retries allowed per
// request (0.1 keeps retries under 10% of requests); minPerSecond lets a
// quiet client retry that often whatever its traffic; max bounds how many
// retries a quiet period can save up.
func NewRetryBudget(ratio, minPerSecond, max float64) *RetryBudget {
	// TODO(step 2): panic on a configuration error (README, step 2): a
	// negative or non-finite value, or a rate that can never earn a whole
	// token.
	return &RetryBudget{ratio: ratio, minPerSecond: minPerSecond, max: max}
}

// Request records a first attempt, which earns ratio of a retry.
func (b *RetryBudget) Request() {
	// TODO(step 2): every first attempt earns ratio of a retry.
}

// TryRetry takes one retry from the budget and reports whether there was
// one to take. A false answer means: do not retry, fail now.
func (b *RetryBudget) TryRetry() bool {
	// TODO(step 2): allow a retry only while the budget has one; time
	// refills it at minPerSecond (use time.Now), up to max.
	return true
}

// Retryable reports whether a failed call is worth another attempt.
func Retryable(err error) bool {
	switch {
	case err == nil,
		errors.Is(err, context.Canceled),
		errors.Is(err, fooddelivery.ErrRejected),
		errors.Is(err, fooddelivery.ErrNotFound),
		errors.Is(err, fooddelivery.ErrUnauthorized):
		return false
	}
	// TODO(step 4): an answer that says "don't retry" (fooddelivery.DontRetry),
	// overload, an open circuit breaker and a full bulkhead are final too.
	return true
}

// BudgetedRetry is a retry loop: up to Attempts attempts (zero means
// retry.DefaultAttempts) with a full-jitter backoff between them
// (Backoff.Backoff), for errors that Retryable allows.
type BudgetedRetry struct {
	Attempts int
	Budget   *RetryBudget
	Backoff  retry.Policy
}

// Do calls call until it succeeds, fails with an error that is not
// Retryable, or has made Attempts attempts, and returns the last error.
func (r *BudgetedRetry) Do(ctx context.Context, key string, call func(ctx context.Context, attempt int) error) error {
	attempts := r.Attempts
	if attempts <= 0 {
		attempts = retry.DefaultAttempts
	}
	// TODO(step 2): count this call's first attempt in the budget.
	for attempt := 1; ; attempt++ {
		// TODO(step 1): number the attempts, so payment can tell a retry
		// from a new request.
		err := call(ctx, 1)
		if !Retryable(err) {
			return err
		}
		// TODO(step 1): a failure this layer gives up on (here, and when
		// ctx ends during the backoff below) must tell the layers above not
		// to retry it (retry.MarkDontRetry).
		if attempt >= attempts {
			return err
		}
		// TODO(step 2): ask the budget for this retry (TryRetry) and stop
		// when it says no. TODO(step 3): ask here, before the backoff, and
		// fail at once with the original error.
		t := time.NewTimer(r.Backoff.Backoff(key, attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// Layers returns the retry behaviour of a checkout's three layers: the
// gateway's calls to the order service, the order service's calls to its
// payment client, and the payment client's HTTP requests to payment. A nil
// layer makes one attempt and passes failures up.
func Layers(budget *RetryBudget) retry.Layers {
	// TODO(step 1): retry at one layer only, the one next to payment.
	each := &BudgetedRetry{Budget: budget}
	return retry.Layers{Gateway: each, Order: each, PaymentClient: each}
}
