// Package deadlines is lab 02 of the workshop: the order service gives
// every checkout its own 10-second budget, whatever its caller can still
// wait, and finishes it even after the caller has given up. Read
// README.md, then make `go test ./labs/02-deadlines/` pass by editing this
// file only.
package deadlines

import (
	"context"
	"net/http"
	"time"
)

// Middleware returns the server half of deadline propagation; the system
// wraps the order service's handler with it. own is the service's own
// budget for one request (10s in the tests); need is the least time a
// request needs to be worth starting (250ms in the tests).
//
// The caller's remaining budget arrives in the request header
// fooddelivery.HeaderTimeoutMs ("X-Timeout-Ms"), as a whole number of
// milliseconds.
func Middleware(own, need time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// TODO(step 1): use the caller's budget from the header
			// instead of always granting own.
			// TODO(step 4): a header value can be anything: never let it
			// crash the service or grant more than own.
			budget := own

			// TODO(step 2): when the budget is below need, answer at once
			// (504 Gateway Timeout) instead of starting work that cannot
			// finish in time.

			// A checkout, once started, is finished even when the caller
			// hangs up: its context is detached from the caller's.
			// TODO(step 3): let the caller's giving up stop the work.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), budget)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// Transport returns the client half of deadline propagation; the system
// wraps the transports of the order service's menu, payment and courier
// clients with it, and the tests wrap the gateway's. hop is the allowance
// for one network hop (50ms in the tests).
func Transport(base http.RoundTripper, hop time.Duration) http.RoundTripper {
	// TODO(step 1): tell the server how much of the request context's
	// deadline is left, minus hop, in fooddelivery.HeaderTimeoutMs.
	// TODO(step 2): when nothing is left after hop, do not send at all.
	return base
}

// roundTripFunc lets a function serve as an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
