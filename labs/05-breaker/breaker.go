// Package breaker is lab 05 of the workshop: the order service keeps
// calling the payment service while it is down, so every checkout waits for
// a timeout and payment is hammered while it tries to recover. Read
// README.md, then make `go test ./labs/05-breaker/` pass by editing this
// file and clients.go.
package breaker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// State is the state of a CircuitBreaker.
type State int

// The three states. The zero State is Closed.
const (
	Closed   State = iota // calls go through; outcomes are counted
	Open                  // calls fail at once, for Settings.OpenFor
	HalfOpen              // a few trial calls go through; the others fail at once
)

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Settings configure a CircuitBreaker. The zero value must be usable: a
// breaker that opens after 5 failures in a row, stays open for 30 s, admits
// one trial call when half-open, and logs to slog.Default().
type Settings struct {
	// Name names the breaker in logs and callbacks ("order->payment").
	Name string

	// ConsecutiveFailures is how many failures in a row open a breaker
	// that has no Window. Zero means 5.
	ConsecutiveFailures int
	// Window is the number of most recent calls whose failure rate decides
	// when to open. Zero means no window: count consecutive failures.
	Window int
	// FailureRate, with a Window, opens the breaker when at least this
	// fraction of the calls in the window failed. Zero means 0.5.
	FailureRate float64
	// MinCalls, with a Window, is how many calls the window must hold
	// before the rate is trusted. Zero, or more than Window (a window never
	// holds more than Window calls), means Window: a full window.
	MinCalls int

	// SlowCall counts a call that succeeded but took longer than this as
	// a failure. Zero means speed is not judged.
	SlowCall time.Duration
	// IsFailure says whether a call's non-nil error counts against the
	// dependency. nil means Failure.
	IsFailure func(error) bool

	// OpenFor is how long the breaker stays open before it lets a trial
	// call through. Zero means 30 s.
	OpenFor time.Duration
	// HalfOpenCalls is how many trial calls may be in flight at once while
	// half-open, and how many must succeed to close. Zero means 1.
	HalfOpenCalls int

	// Logger receives one record per state change: message
	// "circuit breaker state changed" with attributes breaker, from and to,
	// at level Warn when the breaker opens and Info otherwise. nil means
	// slog.Default().
	Logger *slog.Logger
	// OnStateChange, when set, is called on every state change (from is
	// never to: staying in a state is not a change).
	OnStateChange func(name string, from, to State)
}

// CircuitBreaker stops calling a dependency that keeps failing. Create one
// with New; it must be safe for concurrent use.
type CircuitBreaker struct {
	s Settings

	mu    sync.Mutex
	state State
	// TODO(step 1): what the breaker must remember: failures in a row, when
	// an open breaker may try again, a generation counter so that a call
	// that started in an earlier state does not count in this one.
	// TODO(step 2): the outcomes of the last Window calls.
	// TODO(step 4): the trial calls in flight while half-open.
}

// New returns a closed breaker configured by s.
func New(s Settings) *CircuitBreaker {
	// TODO(step 1): fill in the defaults of zero fields (see Settings).
	return &CircuitBreaker{s: s}
}

// Name returns Settings.Name.
func (cb *CircuitBreaker) Name() string { return cb.s.Name }

// State returns the state now.
func (cb *CircuitBreaker) State() State {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	// TODO(step 1): an open breaker whose OpenFor has passed is half-open.
	// Compute it from time.Now() whenever the state is asked for (here and
	// in Do): no timers and no goroutines needed.
	return cb.state
}

// Do calls call(ctx) if the breaker admits it and records the outcome. A
// refused call must return at once, without calling, an error wrapping
// fooddelivery.ErrCircuitOpen; otherwise Do returns call's error unchanged.
func (cb *CircuitBreaker) Do(ctx context.Context, call func(ctx context.Context) error) error {
	// TODO(step 1): while open, refuse.
	// TODO(step 4): while half-open, admit at most HalfOpenCalls calls at
	// once and refuse the others.
	err := call(ctx)
	// TODO(step 1): record the outcome. Closed: ConsecutiveFailures
	// failures in a row open the breaker for OpenFor. Half-open: a failed
	// trial opens it again, a successful one closes it.
	// TODO(step 2): with a Window, open when at least FailureRate of the
	// last Window calls failed, once the window holds MinCalls calls.
	// TODO(step 3): judge err with Settings.IsFailure; a success slower
	// than SlowCall is a failure; a call whose caller gave up (ctx.Err()
	// is context.Canceled) says nothing about the dependency, but one whose
	// deadline expired (context.DeadlineExceeded) is judged by its error.
	return err
}

// setState moves the breaker to state to. Call it with cb.mu held.
func (cb *CircuitBreaker) setState(to State) {
	cb.state = to
	// TODO(step 6): log the change to Settings.Logger and call
	// Settings.OnStateChange. Moving to the state the breaker is already
	// in is not a change.
}

// Failure is the default Settings.IsFailure: it reports whether err counts
// against the dependency.
func Failure(err error) bool {
	// TODO(step 3): timeouts, connection errors, 5xx and 429 Too Many
	// Requests count; answers about the caller's own request (every other
	// 4xx) do not. Classify with errors.Is and errors.As against
	// fooddelivery's sentinels and *CallError.
	return err != nil
}
