// Package retries is the reference solution of lab 03: an http.RoundTripper
// that retries transient failures of idempotent requests a few times, with
// capped exponential backoff and full jitter, within the caller's deadline.
// See NOTES.md for the trade-offs.
package retries

import (
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
)

// Defaults of a zero Transport: 3 attempts in all, backoff base 100ms,
// capped at 2s (the AWS SDKs' standard mode also makes 3 attempts).
const (
	DefaultAttempts  = 3
	DefaultBaseDelay = 100 * time.Millisecond
	DefaultMaxDelay  = 2 * time.Second
)

// maxDrainBytes bounds how much of a failed attempt's body is read before
// closing it, in bytes: enough to let the connection be reused for a
// typical error body, little enough that a huge one costs nothing (the
// connection is closed instead). 4 KiB is go-retryablehttp's figure too.
const maxDrainBytes = 4 << 10

// Transport retries the requests it sends through Base. Only idempotent
// requests whose body can be produced again are retried (see Idempotent
// and replayable), only after transient failures (see Retryable) and only
// while the caller is still waiting (the request's context is not done),
// at most Attempts times in all, waiting between attempts
// for a full-jitter backoff (see Backoff) or the server's Retry-After,
// whichever is longer. A wait that would end after the request context's
// deadline is not started: the last answer is returned at once; so is an
// answer whose Retry-After asks for more than MaxDelay, the longest this
// Transport waits between attempts (without a deadline, "Retry-After:
// 3600" would otherwise hold the caller for an hour). A cancelled context
// ends a wait at once.
//
// When it gives up, RoundTrip returns the last attempt's response (body
// unread) or error, so the caller sees what the dependency said. The zero
// Transport is usable. A Transport is safe for concurrent use.
type Transport struct {
	// Base sends each attempt. nil means http.DefaultTransport.
	Base http.RoundTripper
	// Attempts is the most attempts per request, the first included. Zero
	// or less means DefaultAttempts; 1 means no retries.
	Attempts int
	// BaseDelay and MaxDelay shape the backoff (Backoff's base and cap).
	// Zero or less means DefaultBaseDelay and DefaultMaxDelay.
	BaseDelay, MaxDelay time.Duration
	// Seed keys the jitter draws, so that the waits of the n-th request
	// this Transport sends are a pure function of (Seed, n, attempt).
	Seed int64

	sent atomic.Int64 // requests sent so far, for the jitter draws
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base()
	attempts := t.Attempts
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	if !Idempotent(req) || !replayable(req) {
		attempts = 1
	}
	ctx := req.Context()
	n := t.sent.Add(1)
	for attempt := 1; ; attempt++ {
		try := req
		if attempt > 1 {
			var err error
			if try, err = rewind(req, attempt); err != nil {
				return nil, err
			}
		}
		resp, err := base.RoundTrip(try)
		// The caller's cancellation or deadline is final, whatever the
		// error says: Retryable cannot tell it from an attempt's own
		// timeout (both match context.DeadlineExceeded), the context can.
		if attempt >= attempts || ctx.Err() != nil || !Retryable(resp, err) {
			return resp, err
		}
		wait := Backoff(attempt, positive(t.BaseDelay, DefaultBaseDelay), positive(t.MaxDelay, DefaultMaxDelay), t.draw(n, attempt))
		if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
			if after, ok := RetryAfter(resp.Header, time.Now()); ok {
				if after > positive(t.MaxDelay, DefaultMaxDelay) {
					return resp, err // longer than this Transport ever waits: report what we have
				}
				wait = max(wait, after)
			}
		}
		if deadline, ok := ctx.Deadline(); ok && time.Now().Add(wait).After(deadline) {
			return resp, err // no retry could finish in time: report what we have
		}
		if resp != nil {
			drain(resp.Body)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
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
// worth repeating. Transient failures are: transport errors (a refused or
// reset connection, an answer cut short, the attempt's own timeout), and
// the statuses 429, 502, 503 and 504. Failures that would repeat are not:
// other statuses (400, 401, 403, 404, 409, 422, 500, 501, ...), a response
// carrying fooddelivery.HeaderDontRetry (an overloaded server, or a layer
// below that already retried), an open circuit breaker and a full
// bulkhead. A 2xx (or any status below 400) is a success, not retried.
//
// Retryable does not decide about the caller's cancellation or deadline:
// an error matching context.DeadlineExceeded may be the caller's deadline
// or the attempt's own timeout (net/http's ResponseHeaderTimeout error
// matches it too), and only the request's context can tell them apart.
// RoundTrip checks req.Context().Err() before asking Retryable.
func Retryable(resp *http.Response, err error) bool {
	if err != nil {
		return !errors.Is(err, fooddelivery.ErrCircuitOpen) && !errors.Is(err, fooddelivery.ErrBulkheadFull)
	}
	if resp == nil || resp.Header.Get(fooddelivery.HeaderDontRetry) == "1" {
		return false
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// Idempotent reports whether req may be sent more than once: its method is
// safe (GET, HEAD, OPTIONS, TRACE) or it carries an Idempotency-Key (or
// X-Idempotency-Key) header, the same rule net/http.Transport applies to
// its own silent resends. Whether its body can be sent again is a separate
// question (see replayable).
func Idempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return req.Header.Get(fooddelivery.HeaderIdempotencyKey) != "" || req.Header.Get("X-Idempotency-Key") != ""
}

// Backoff returns the wait before retry number attempt (1 before the first
// retry): a uniform value in [0, min(cap, base*2^attempt)) picked by r, a
// uniform draw in [0, 1). This is "full jitter" (Marc Brooker,
// "Exponential Backoff And Jitter", AWS Architecture Blog, 2015). It never
// overflows: any attempt past the point where base*2^attempt reaches cap
// gives r*cap. An attempt below 0 counts as 0.
func Backoff(attempt int, base, cap time.Duration, r float64) time.Duration {
	ceiling := cap
	// base*2^attempt < cap without computing base*2^attempt, which
	// overflows int64 from attempt 63 on (earlier for a large base).
	if attempt = max(attempt, 0); attempt < 63 && base <= cap>>attempt {
		ceiling = base << attempt
	}
	return time.Duration(r * float64(ceiling))
}

// maxRetryAfterSeconds is the longest Retry-After, in seconds, that a
// time.Duration holds.
const maxRetryAfterSeconds = uint64(math.MaxInt64 / int64(time.Second))

// RetryAfter returns how long the Retry-After header in h asks the client
// to wait, measured from now: delta-seconds ("120") or an HTTP-date ("Wed,
// 21 Oct 2015 07:28:00 GMT", and the two obsolete date forms), RFC 9110
// section 10.2.3. A date in the past means 0; a number of seconds too
// large for a time.Duration (over 292 years) means the longest wait a
// Duration holds. It returns false when the header is absent or malformed
// (a signed or fractional number, text).
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if strings.Trim(v, "0123456789") == "" { // delta-seconds: digits only, of any length
		secs, err := strconv.ParseUint(v, 10, 64)
		if err != nil || secs > maxRetryAfterSeconds { // too large for a Duration
			secs = maxRetryAfterSeconds
		}
		return time.Duration(secs) * time.Second, true
	}
	if when, err := http.ParseTime(v); err == nil {
		return max(when.Sub(now), 0), true
	}
	return 0, false
}

// replayable reports whether req's body can be sent again: it has none
// (nil or http.NoBody), or req.GetBody produces a fresh copy. A streamed
// body without GetBody is read once by the first attempt, so such a
// request gets one attempt only.
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// rewind returns a copy of req for the given attempt, with a fresh body
// from req.GetBody (a body is read once; resending the same one would send
// nothing) and the attempt number in fooddelivery.HeaderAttempt. req
// must be replayable.
func rewind(req *http.Request, attempt int) (*http.Request, error) {
	r := req.Clone(req.Context())
	if req.Body != nil && req.Body != http.NoBody {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = body
	}
	r.Header.Set(fooddelivery.HeaderAttempt, strconv.Itoa(attempt))
	return r, nil
}

// drain reads what is left of a failed attempt's body, at most
// maxDrainBytes, and closes it, so that its connection can carry the next
// attempt instead of being thrown away.
func drain(body io.ReadCloser) {
	io.Copy(io.Discard, io.LimitReader(body, maxDrainBytes))
	body.Close()
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

func positive(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
