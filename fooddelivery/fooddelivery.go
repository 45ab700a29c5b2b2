// Package fooddelivery holds the system model shared by every service of the
// workshop's food-delivery system: the wire headers, the sentinel errors
// callers classify with errors.Is, the counters tests read, and the
// middlewares every service runs (request ids and a per-instance
// concurrency limit).
//
// The services themselves live in the sub-packages gateway, order, payment,
// menu and courier; package system wires them together on a network from
// package memnet.
package fooddelivery

import "errors"

// Wire headers the system defines. Every service reads and writes them the
// same way, so a lab can rely on them end to end.
const (
	// HeaderRequestID carries the id of the user action a request belongs
	// to. The gateway assigns one when the client sent none; every service
	// copies it onto the calls it makes. Fault draws are keyed by it.
	HeaderRequestID = "X-Request-Id"

	// HeaderAttempt carries the 1-based attempt number of a call when a
	// client retries or hedges it. Absent means attempt 1.
	HeaderAttempt = "X-Attempt"

	// HeaderDontRetry is the "overloaded; don't retry" signal (SRE book,
	// ch. 21 "Handling Overload"): a server that rejects a request because it is overloaded, or
	// a layer that already retried, sets it to "1" on the response. Callers
	// above must pass the failure up without retrying.
	HeaderDontRetry = "X-Dont-Retry"

	// HeaderTimeoutMs carries the caller's remaining budget as a relative
	// number of milliseconds (relative, like gRPC's grpc-timeout, so clock
	// skew between hosts does not matter).
	HeaderTimeoutMs = "X-Timeout-Ms"

	// HeaderIdempotencyKey is the key a client sends so that a server can
	// recognise a repeated request (draft-ietf-httpapi-idempotency-key-header).
	// Its value must pass CheckIdempotencyKey.
	HeaderIdempotencyKey = "Idempotency-Key"

	// HeaderUser names the authenticated user; the gateway sets it after the
	// auth check, downstream services trust it.
	HeaderUser = "X-User"
)

// Limits on the wire headers above. CheckIdempotencyKey and CheckRequestID
// apply them.
const (
	// MaxIdempotencyKeyLen is the longest HeaderIdempotencyKey accepted:
	// 255 bytes. Stripe's API reference ("Idempotent requests",
	// https://docs.stripe.com/api/idempotent_requests) says its keys "are
	// up to 255 characters long"; keys here are printable ASCII, so
	// characters and bytes are the same count. A UUID is 36.
	MaxIdempotencyKeyLen = 255

	// MaxRequestIDLen is the longest HeaderRequestID accepted, in bytes:
	// 128, room for any trace or request id format in use (a W3C
	// traceparent is 55, a UUID 36) while keeping ids in logs and fault
	// draws small.
	MaxRequestIDLen = 128
)

// Sentinel errors. Service clients in this module wrap them (with %w) so
// callers classify failures with errors.Is, never by message text.
var (
	// ErrTimeout: the dependency did not answer within the caller's timeout
	// or deadline. Clients return it wrapped together with the transport's
	// own error, so errors.Is(err, context.DeadlineExceeded) may hold too.
	ErrTimeout = errors.New("dependency timed out")

	// ErrUnavailable: the dependency could not be reached (connection
	// refused or reset) or answered 5xx.
	ErrUnavailable = errors.New("dependency unavailable")

	// ErrOverloaded: the dependency rejected the request because it was at
	// its concurrency limit (HTTP 503 with HeaderDontRetry).
	ErrOverloaded = errors.New("dependency overloaded")

	// ErrRejected: the dependency refused the request itself (a 4xx other
	// than 429): retrying will not help.
	ErrRejected = errors.New("request rejected by dependency")

	// ErrNotFound: the named thing does not exist (HTTP 404).
	ErrNotFound = errors.New("not found")

	// ErrUnauthorized: the auth check refused the request (a bad or unknown
	// token; HTTP 401 or 403). It is a verdict: an Authorizer that could
	// not make the check returns another error (ErrUnavailable,
	// ErrTimeout), and the caller must deny then too (fail closed).
	ErrUnauthorized = errors.New("unauthorized")

	// ErrCircuitOpen: a circuit breaker refused the call without sending it
	// because the dependency is known to be failing. Retries treat it as
	// final (lab 05).
	ErrCircuitOpen = errors.New("circuit breaker is open")

	// ErrBulkheadFull: a bulkhead refused the call because the
	// dependency's compartment had no free slot (lab 06).
	ErrBulkheadFull = errors.New("bulkhead is full")
)
