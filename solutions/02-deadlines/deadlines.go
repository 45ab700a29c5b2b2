// Package deadlines is the reference solution of lab 02: the caller's
// remaining budget travels with every request as a relative number of
// milliseconds (fooddelivery.HeaderTimeoutMs), a server turns it into a
// deadline on the request's context and fails fast when it is too short,
// and a client writes what is left of its context's deadline. See
// NOTES.md for the trade-offs.
package deadlines

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
)

// MaxDigits is the longest budget accepted on the wire, in decimal digits:
// 8, as in gRPC's grpc-timeout header. 99,999,999 ms is almost 28 hours,
// far beyond any request budget, and small enough that converting it to a
// time.Duration cannot overflow.
const MaxDigits = 8

// Middleware returns the server half of deadline propagation. Each request
// gets a deadline on its context, derived from the caller's context (so it
// also ends when the caller hangs up):
//
//   - the caller's budget from fooddelivery.HeaderTimeoutMs, but never more
//     than own: a large value is clamped, it never extends the service's
//     own limit;
//   - own, the service's own budget, when the header is absent or is not a
//     plain decimal number of at most MaxDigits digits (a sign, a unit, a
//     fraction or spaces make it malformed); a bad value is ignored, never
//     trusted, and never panics.
//
// A request whose budget is below need (the least the route's work can be
// done in) is answered at once with 504 Gateway Timeout, error code
// "budget_too_short" and fooddelivery.HeaderDontRetry, without running
// next: work that cannot finish in time is not started. "0" is a budget
// of nothing and is refused that way, even when need is zero (a handler
// never runs on a context that has already expired).
//
// own must be positive and need at least zero; otherwise Middleware
// panics (a configuration error). Usage with chi:
//
//	r := chi.NewRouter()
//	r.Use(deadlines.Middleware(10*time.Second, 250*time.Millisecond))
func Middleware(own, need time.Duration) func(http.Handler) http.Handler {
	if own <= 0 || need < 0 {
		panic(fmt.Sprintf("deadlines: Middleware needs own > 0 and need >= 0, got own %v, need %v", own, need))
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			budget := own
			if b, ok := parseBudget(r.Header.Get(fooddelivery.HeaderTimeoutMs)); ok {
				budget = min(b, own)
			}
			if budget <= 0 || budget < need {
				w.Header().Set(fooddelivery.HeaderDontRetry, "1")
				fooddelivery.WriteError(w, http.StatusGatewayTimeout, "budget_too_short",
					fmt.Sprintf("%v left of the caller's budget; this needs at least %v", budget, need))
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), budget)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// parseBudget reads a fooddelivery.HeaderTimeoutMs value: a plain decimal
// number of milliseconds, 1 to MaxDigits digits ("0" included). It
// reports false for anything else (empty, a sign, spaces, a unit, a
// fraction, too many digits), which the caller must treat as no budget at
// all.
func parseBudget(v string) (time.Duration, bool) {
	if len(v) == 0 || len(v) > MaxDigits {
		return 0, false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
	}
	ms, err := strconv.ParseInt(v, 10, 64) // at most 8 digits: cannot fail or overflow
	if err != nil {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// Transport returns the client half of deadline propagation: it wraps base
// (nil means http.DefaultTransport) so that a request whose context has a
// deadline carries what is left of it, minus hop, in
// fooddelivery.HeaderTimeoutMs, in whole milliseconds rounded down and at
// most MaxDigits digits. hop is the allowance for the network hop and the
// callee's queueing (the SRE book suggests a few hundred milliseconds on
// long deadlines; the lab uses 50ms on a 2s budget). The value is computed
// from the context at send time, never copied from an incoming request.
//
// When no more than hop is left, the request is not sent: RoundTrip fails
// at once with an error wrapping context.DeadlineExceeded. A request
// without a deadline is sent as it is (the callee applies its own budget).
// The caller's request is never modified; hop below zero panics.
func Transport(base http.RoundTripper, hop time.Duration) http.RoundTripper {
	if hop < 0 {
		panic(fmt.Sprintf("deadlines: Transport needs hop >= 0, got %v", hop))
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		deadline, ok := req.Context().Deadline()
		if !ok {
			return base.RoundTrip(req)
		}
		left := time.Until(deadline) - hop
		if left < time.Millisecond {
			if req.Body != nil {
				req.Body.Close() // a RoundTripper always closes the body
			}
			return nil, fmt.Errorf("deadlines: %v left before %s %s, no more than the %v hop allowance: %w",
				max(time.Until(deadline), 0), req.Method, req.URL, hop, context.DeadlineExceeded)
		}
		ms := min(left.Milliseconds(), 99_999_999) // MaxDigits digits
		out := req.Clone(req.Context())
		out.Header.Set(fooddelivery.HeaderTimeoutMs, strconv.FormatInt(ms, 10))
		return base.RoundTrip(out)
	})
}

// roundTripFunc lets a function serve as an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
