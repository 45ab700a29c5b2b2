package bench

import (
	"context"
	"sync"
)

// ChanSemaphore is the bulkhead of chi's middleware.Throttle and of most
// hand-written Go limiters: a buffered channel whose capacity is the limit.
// Sending takes a slot, receiving gives it back.
type ChanSemaphore chan struct{}

// Do runs call holding one slot, waiting for a slot until ctx ends.
func (s ChanSemaphore) Do(ctx context.Context, call func(ctx context.Context) error) error {
	select {
	case s <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s }()
	return call(ctx)
}

// TokenBucket is a retry budget in the shape of grpc-go's retry throttler:
// a mutex around a float64 count of tokens. Every request adds Ratio of a
// token, up to Max; a retry spends a whole one. Unlike the lab's
// RetryBudget it earns nothing with time, so it never reads the clock.
type TokenBucket struct {
	Ratio, Max float64

	mu     sync.Mutex
	tokens float64
}

// NewTokenBucket returns a full bucket.
func NewTokenBucket(ratio, max float64) *TokenBucket {
	return &TokenBucket{Ratio: ratio, Max: max, tokens: max}
}

// Request records a first attempt, which earns Ratio of a retry.
func (b *TokenBucket) Request() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens = min(b.Max, b.tokens+b.Ratio)
}

// Tokens returns the tokens the bucket holds, fractions included.
func (b *TokenBucket) Tokens() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens
}

// TryRetry spends one token and reports true, or reports false when the
// bucket holds less than one.
func (b *TokenBucket) TryRetry() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
