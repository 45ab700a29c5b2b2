// Package retrybudgets is the reference solution of lab 04: checkouts are
// retried at one layer only, the one next to payment, under a per-client
// retry budget; failures are passed up marked "don't retry", and an
// overloaded server's "don't retry" is honoured. See NOTES.md.
package retrybudgets

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/retry"
)

// RetryBudget limits the retries of one client to a fraction of its
// requests plus a small minimum rate. It is a token bucket: every first
// attempt earns ratio of a token, time adds minPerSecond tokens a second,
// a retry costs one token, and the bucket holds at most max tokens. Over
// any period of d seconds with n requests, at most max + ratio*n +
// minPerSecond*d retries are allowed. It is safe for concurrent use.
type RetryBudget struct {
	ratio, minPerSecond, max float64
	start                    time.Time // when the budget was made: the origin of last

	mu     sync.Mutex
	tokens float64
	last   time.Duration // time.Since(start) when time's tokens were last added
}

// NewRetryBudget returns a full budget. ratio is the retries allowed per
// request (0.1 keeps retries under 10% of requests, the SRE book's
// figure); minPerSecond lets a quiet client retry that often whatever its
// traffic (Finagle's RetryBudget: 10 a second); max bounds the tokens a
// quiet period can save up, so the size of a burst of retries. It panics
// on a configuration error: a negative or non-finite value, or a budget
// that earns (ratio or minPerSecond above zero) but can never hold a whole
// token, so never allows a retry: max below 1, or a ratio so small that
// adding it to a count below one token changes nothing (2^-54 or less).
// NewRetryBudget(0, 0, 0) is a budget of no retries, on purpose.
func NewRetryBudget(ratio, minPerSecond, max float64) *RetryBudget {
	for _, v := range []float64{ratio, minPerSecond, max} {
		if !(v >= 0 && v < 1e12) {
			panic(fmt.Sprintf("retrybudgets: NewRetryBudget(%v, %v, %v): values must be finite and not negative", ratio, minPerSecond, max))
		}
	}
	if (ratio > 0 || minPerSecond > 0) && max < 1 {
		panic(fmt.Sprintf("retrybudgets: NewRetryBudget(%v, %v, %v): a bucket of at most %v tokens never holds the whole token a retry costs", ratio, minPerSecond, max, max))
	}
	if ratio > 0 && 1-ratio == 1 {
		panic(fmt.Sprintf("retrybudgets: NewRetryBudget(%v, %v, %v): a ratio of %v is lost to rounding and never earns a whole token", ratio, minPerSecond, max, ratio))
	}
	return &RetryBudget{ratio: ratio, minPerSecond: minPerSecond, max: max, tokens: max, start: time.Now()}
}

// refill adds the tokens earned by time since the last refill, up to max.
// b.mu is held. The clock is read as time.Since(start), which reads the
// monotonic clock only, half the cost of time.Now (fake time in tests).
//
// Only the readers of tokens (TryRetry, Tokens) refill; Request, which
// only adds, leaves time's tokens to the next refill. That changes no
// count: both kinds of earning add an amount >= 0 capped at max, and
// min(max, min(max, t+r)+e) = min(max, t+r+e) for r, e >= 0 (both sides
// are max when t+r+e >= max, and t+r+e otherwise), so time's share can be
// added before or after a request's, at each Request or once before the
// next read, and the reader sees the same tokens, up to rounding in the
// last bit of a float64. That rounding can still tip a decision when the
// exact count is a whole number: 1.0 computed in one order may be
// 0.99999999999999989 in the other, a refusal, as an eagerly refilled
// bucket can be on other inputs. So the hot path, a request, reads no
// clock.
func (b *RetryBudget) refill() {
	now := time.Since(b.start)
	if elapsed := now - b.last; elapsed > 0 {
		b.tokens = min(b.max, b.tokens+b.minPerSecond*elapsed.Seconds())
	}
	b.last = now
}

// Request records a first attempt, which earns ratio of a retry. Time's
// tokens are added when the budget is next read (see refill).
func (b *RetryBudget) Request() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens = min(b.max, b.tokens+b.ratio)
}

// TryRetry takes one retry from the budget and reports whether there was
// one to take. A false answer means: do not retry, fail now.
func (b *RetryBudget) TryRetry() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Tokens returns the retries the budget holds now (fractions included),
// for reports: the running system shows it on its dashboard and in
// /metrics. The lab does not ask for it.
func (b *RetryBudget) Tokens() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	return b.tokens
}

// Retryable reports whether a failed call is worth another attempt.
// Retried: a dependency that timed out (fooddelivery.ErrTimeout, or an
// attempt that ran out of its own deadline, context.DeadlineExceeded) and
// an unavailable dependency (fooddelivery.ErrUnavailable). Final: an answer
// carrying the "don't retry" signal (an overloaded server, or a layer below
// that already retried), overload itself (fooddelivery.ErrOverloaded, with
// or without the signal), an open breaker (ErrCircuitOpen), a full bulkhead
// (ErrBulkheadFull), a request the dependency refused (ErrRejected,
// ErrNotFound, ErrUnauthorized: the same request fails the same way), the
// caller's own cancellation (context.Canceled: nobody waits for the
// answer), and anything else this list does not name.
func Retryable(err error) bool {
	switch {
	case err == nil,
		fooddelivery.DontRetry(err),
		errors.Is(err, fooddelivery.ErrOverloaded),
		errors.Is(err, fooddelivery.ErrCircuitOpen),
		errors.Is(err, fooddelivery.ErrBulkheadFull),
		errors.Is(err, fooddelivery.ErrRejected),
		errors.Is(err, fooddelivery.ErrNotFound),
		errors.Is(err, fooddelivery.ErrUnauthorized),
		errors.Is(err, context.Canceled):
		return false
	}
	return errors.Is(err, fooddelivery.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, fooddelivery.ErrUnavailable)
}

// BudgetedRetry is the retry loop of the layer next to payment. It makes
// up to Attempts attempts (zero means retry.DefaultAttempts), waits a
// full-jitter backoff between them (Backoff.Backoff), retries only what
// Retryable allows and only while Budget has a retry to give. A nil Budget
// allows no retries.
type BudgetedRetry struct {
	Attempts int
	Budget   *RetryBudget
	Backoff  retry.Policy
}

// Do calls call until it succeeds or fails for good. A failure that is not
// Retryable comes back unchanged. A retryable failure that is not retried
// (attempts used up, budget spent, or ctx done while waiting) comes back
// as the original error marked "don't retry" (retry.MarkDontRetry), so no
// layer above retries it again; a spent budget fails at once, without
// waiting. The caller's ctx ending during a backoff ends the wait at once.
func (r *BudgetedRetry) Do(ctx context.Context, key string, call func(ctx context.Context, attempt int) error) error {
	attempts := r.Attempts
	if attempts <= 0 {
		attempts = retry.DefaultAttempts
	}
	if r.Budget != nil {
		r.Budget.Request() // first attempts earn the retries
	}
	for attempt := 1; ; attempt++ {
		err := call(ctx, attempt)
		if !Retryable(err) {
			return err
		}
		// Give up when the attempts are used up or the caller has gone
		// (ctx done: a retry could not be waited for, so it takes no token),
		// and, asked last, when the budget has no retry left.
		if attempt >= attempts || ctx.Err() != nil || r.Budget == nil || !r.Budget.TryRetry() {
			return retry.MarkDontRetry(err)
		}
		t := time.NewTimer(r.Backoff.Backoff(key, attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return retry.MarkDontRetry(err)
		case <-t.C:
		}
	}
}

// Layers returns the retry behaviour of a checkout's three layers: only
// the payment client, next to payment, retries, under budget. The gateway
// and the order service make one attempt each and pass failures up (nil
// layers); the payment client marks what it gives up on "don't retry", so
// a caller above that does retry leaves it alone too.
func Layers(budget *RetryBudget) retry.Layers {
	return retry.Layers{PaymentClient: &BudgetedRetry{Budget: budget}}
}
