// Package retry is the plain retry loop the food-delivery system uses where
// a lab needs retries but is not about writing them (labs 04 and 05; lab 03
// is where learners write their own). It retries a call a fixed number of
// times with capped exponential backoff and full jitter, stops at once when
// the context ends, and treats the system's "don't retry" signal and an
// open circuit breaker as final.
package retry

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
)

// Defaults for a zero Policy: 3 attempts, 100ms base, 2s cap (lab 03's
// defaults; the AWS SDKs' standard mode also makes 3 attempts).
const (
	DefaultAttempts = 3
	DefaultBase     = 100 * time.Millisecond
	DefaultCap      = 2 * time.Second
)

// Policy says how to retry. The zero Policy is usable: DefaultAttempts
// attempts, DefaultBase/DefaultCap backoff, Retryable as the classifier.
type Policy struct {
	// Attempts is the total number of calls, the first included. Zero
	// means DefaultAttempts; 1 means no retries.
	Attempts int
	// Base and Cap shape the backoff before retry n (n = 1, 2, ...): a
	// uniform draw in [0, min(Cap, Base*2^(n-1))) ("full jitter", Brooker
	// 2015). Zero means DefaultBase / DefaultCap.
	Base, Cap time.Duration
	// Retryable classifies an error; nil means Retryable.
	Retryable func(error) bool
	// Seed keys the jitter draws (fooddelivery.Draw), so a call's delays
	// are a pure function of (Seed, key, attempt).
	Seed int64
}

// Retryable reports whether err is worth another attempt: timeouts and
// unavailable dependencies are; errors carrying the "don't retry" signal
// (fooddelivery.DontRetry), an open circuit breaker, a full bulkhead,
// rejections, not-found and auth failures, and cancellations are not.
func Retryable(err error) bool {
	switch {
	case err == nil,
		fooddelivery.DontRetry(err),
		errors.Is(err, fooddelivery.ErrCircuitOpen),
		errors.Is(err, fooddelivery.ErrBulkheadFull),
		errors.Is(err, fooddelivery.ErrOverloaded),
		errors.Is(err, context.Canceled):
		return false
	}
	return errors.Is(err, fooddelivery.ErrTimeout) || errors.Is(err, fooddelivery.ErrUnavailable)
}

// Do calls fn until it succeeds, fails with an error that is not
// retryable, or has been called p.Attempts times, and returns fn's last
// error unchanged. attempt counts from 1. key names the call for the
// jitter draws (a request id, an order id). A wait ends early when ctx is
// done, and Do then returns fn's last error joined with ctx's error.
func (p Policy) Do(ctx context.Context, key string, fn func(ctx context.Context, attempt int) error) error {
	attempts := p.Attempts
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	retryable := p.Retryable
	if retryable == nil {
		retryable = Retryable
	}
	var err error
	for attempt := 1; ; attempt++ {
		err = fn(ctx, attempt)
		if err == nil || attempt >= attempts || !retryable(err) {
			return err
		}
		t := time.NewTimer(p.Backoff(key, attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}

// Backoff returns the wait before retry number n (n >= 1) of the call
// named key: full jitter over min(Cap, Base*2^(n-1)), computed without
// overflow for any n, drawn by fooddelivery.Draw(p.Seed, key+"#retry", n).
// An n below 1 is treated as 1. It allocates nothing.
func (p Policy) Backoff(key string, n int) time.Duration {
	n = max(n, 1)
	base, ceiling := p.Base, p.Cap
	if base <= 0 {
		base = DefaultBase
	}
	if ceiling <= 0 {
		ceiling = DefaultCap
	}
	limit := ceiling
	if n-1 < 62 && base <= ceiling>>(n-1) {
		limit = base << (n - 1)
	}
	// The draw of key+"#retry", hashed in two parts: no allocation
	// whatever the key's length.
	return time.Duration(fooddelivery.DrawConcat(p.Seed, key, "#retry", n) * float64(limit))
}

// Attempt returns the attempt number a request carries in
// fooddelivery.HeaderAttempt (1 when absent or malformed).
func Attempt(h interface{ Get(string) string }) int {
	n, err := strconv.Atoi(h.Get(fooddelivery.HeaderAttempt))
	if err != nil || n < 1 {
		return 1
	}
	return n
}
