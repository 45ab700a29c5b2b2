// Package retries is lab 03 of the workshop: the order service's payment
// client retries every failure at once, body and all, which turns a short
// payment failover into a hammer. Read README.md, then make
// `go test ./labs/03-retries/` pass by editing this file only.
package retries

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
)

// Defaults of a zero Transport: 3 attempts in all, backoff base 100ms,
// capped at 2s.
const (
	DefaultAttempts  = 3
	DefaultBaseDelay = 100 * time.Millisecond
	DefaultMaxDelay  = 2 * time.Second
)

// Transport retries the requests it sends through Base. The zero Transport
// is usable. A Transport is safe for concurrent use.
type Transport struct {
	// Base sends each attempt. nil means http.DefaultTransport.
	Base http.RoundTripper
	// Attempts is the most attempts per request, the first included. Zero
	// or less means DefaultAttempts; 1 means no retries.
	Attempts int
	// BaseDelay and MaxDelay shape the backoff (Backoff's base and cap).
	// Zero or less means DefaultBaseDelay and DefaultMaxDelay.
	BaseDelay, MaxDelay time.Duration
	// Seed keys the jitter draws (see draw).
	Seed int64

	sent atomic.Int64 // requests sent so far, for the jitter draws
}

// RoundTrip implements http.RoundTripper. When it gives up it returns the
// last attempt's response (body unread) or error, so the caller sees what
// the dependency said.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base()
	attempts := t.Attempts
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	// TODO(step 2): only idempotent requests may be sent more than once.
	// TODO(step 5): nor may a request whose body cannot be produced again.
	n := t.sent.Add(1)
	_ = n // TODO(step 3): the jitter of this request's waits: t.draw(n, attempt)
	var resp *http.Response
	var err error
	for attempt := 1; attempt <= attempts; attempt++ {
		// TODO(step 5): a retry needs its own copy of the body
		// (req.GetBody), and the failed attempt's body must be drained
		// (a bounded amount) and closed.
		resp, err = base.RoundTrip(req)
		// TODO(step 1): once the caller has left (req.Context().Err()),
		// no attempt can help, whatever the error says.
		if !Retryable(resp, err) {
			return resp, err
		}
		// TODO(step 3): wait before the next attempt, but not when it would
		// end after the context's deadline, and not a moment longer once
		// the context is cancelled.
		// TODO(step 4): on 429 and 503, wait at least as long as the
		// server's Retry-After asks.
	}
	return resp, err
}

// CloseIdleConnections closes the idle connections of Base (of
// http.DefaultTransport when Base is nil), so that
// http.Client.CloseIdleConnections reaches them through this Transport.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base().(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// base returns the RoundTripper that sends each attempt.
func (t *Transport) base() http.RoundTripper {
	if t.Base == nil {
		return http.DefaultTransport
	}
	return t.Base
}

// Retryable reports whether an attempt that ended with resp and err is
// worth repeating.
func Retryable(resp *http.Response, err error) bool {
	// TODO(step 1): only transient failures are worth another attempt.
	return err != nil || resp.StatusCode >= 400
}

// Idempotent reports whether req may be sent more than once.
func Idempotent(req *http.Request) bool {
	// TODO(step 2): GET and its safe relatives, or any request carrying an
	// Idempotency-Key.
	return true
}

// Backoff returns the wait before retry number attempt (1 before the first
// retry): full jitter over min(cap, base*2^attempt), picked by r, a
// uniform draw in [0, 1).
func Backoff(attempt int, base, cap time.Duration, r float64) time.Duration {
	// TODO(step 3): full jitter, capped, for any attempt number.
	return 0
}

// RetryAfter returns how long the Retry-After header in h asks the client
// to wait, measured from now, and false when h has none or it is
// malformed.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	// TODO(step 4): delta-seconds ("120") or an HTTP-date.
	return 0, false
}

// draw returns the uniform number in [0, 1) that jitters the wait before
// retry attempt of the n-th request this Transport sends:
// fooddelivery.Draw(Seed, "request-<n>", attempt), a pure function of
// (Seed, n, attempt), so tests repeat exactly. Each request draws its own
// numbers; requests that drew the same ones would retry in step, which is
// what jitter is there to prevent. The key is hashed in two parts, n's
// digits written on the stack, so a draw allocates nothing. Production
// code would use math/rand/v2.
func (t *Transport) draw(n int64, attempt int) float64 {
	var digits [20]byte // room for any int64
	return fooddelivery.DrawConcat(t.Seed, "request-", string(strconv.AppendInt(digits[:0], n, 10)), attempt)
}
