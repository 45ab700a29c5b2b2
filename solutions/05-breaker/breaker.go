// Package breaker is the reference solution of lab 05: a circuit breaker
// whose state is computed from the clock under one mutex, with no
// goroutines and no timers. It reads the clock only when time matters: an
// open breaker checking whether its open period is over, a breaker that
// opens stamping when it may try again, and a call timed for
// Settings.SlowCall. A closed breaker whose calls succeed reads no clock at
// all. See NOTES.md for the trade-offs.
package breaker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
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

// Defaults for the zero Settings.
const (
	DefaultConsecutiveFailures = 5                // Nygard's and gobreaker's order of magnitude
	DefaultOpenFor             = 30 * time.Second // Envoy's base ejection time
	DefaultFailureRate         = 0.5              // resilience4j's failureRateThreshold
)

// Settings configure a CircuitBreaker. The zero value is usable: a breaker
// that opens after 5 failures in a row, stays open for 30 s, admits one
// trial call when half-open, and logs to slog.Default().
type Settings struct {
	// Name names the breaker in logs and callbacks ("order->payment").
	Name string

	// ConsecutiveFailures is how many failures in a row open a breaker
	// that has no Window. Zero means DefaultConsecutiveFailures.
	ConsecutiveFailures int
	// Window is the number of most recent calls whose failure rate decides
	// when to open (a count-based sliding window). Zero means no window:
	// the breaker counts consecutive failures instead.
	Window int
	// FailureRate, with a Window, opens the breaker when at least this
	// fraction of the calls in the window failed. Zero means
	// DefaultFailureRate (half).
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
	// call through. Zero means DefaultOpenFor.
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
	// never to: staying in a state is not a change), with the breaker's
	// lock held: it must return quickly and must not call the breaker.
	OnStateChange func(name string, from, to State)
}

// CircuitBreaker stops calling a dependency that keeps failing. Create one
// with New; it is safe for concurrent use.
type CircuitBreaker struct {
	s Settings // defaults filled in

	mu         sync.Mutex
	state      State
	generation uint64    // changes with every state change and reset
	openUntil  time.Time // when an open breaker goes half-open
	streak     int       // consecutive failures (no window)
	outcomes   []bool    // ring of the last Window outcomes, true = failure
	next       int       // where the next outcome goes in outcomes
	calls      int       // outcomes held, at most Window
	failures   int       // failures among them
	trials     int       // half-open: trial calls in flight
	successes  int       // half-open: trials that succeeded
}

// New returns a closed breaker configured by s.
func New(s Settings) *CircuitBreaker {
	if s.ConsecutiveFailures <= 0 {
		s.ConsecutiveFailures = DefaultConsecutiveFailures
	}
	if s.FailureRate <= 0 || s.FailureRate > 1 {
		s.FailureRate = DefaultFailureRate
	}
	if s.Window < 0 {
		s.Window = 0
	}
	if s.MinCalls <= 0 || s.MinCalls > s.Window {
		s.MinCalls = s.Window
	}
	if s.IsFailure == nil {
		s.IsFailure = Failure
	}
	if s.OpenFor <= 0 {
		s.OpenFor = DefaultOpenFor
	}
	if s.HalfOpenCalls <= 0 {
		s.HalfOpenCalls = 1
	}
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	return &CircuitBreaker{s: s, outcomes: make([]bool, s.Window)}
}

// Name returns Settings.Name.
func (cb *CircuitBreaker) Name() string { return cb.s.Name }

// State returns the state now. An open breaker whose open period is over
// is half-open: the change happens (and is reported) when it is observed.
func (cb *CircuitBreaker) State() State {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return cb.current()
}

// Do calls call(ctx) if the breaker admits it and records the outcome. A
// refused call (open, or half-open with every trial slot taken) returns at
// once an error wrapping fooddelivery.ErrCircuitOpen, which retry helpers
// treat as final; otherwise Do returns call's error unchanged.
//
// Outcomes that say nothing about the dependency are not recorded: a call
// whose caller gave up (ctx.Err() is context.Canceled), and a call that
// started in an earlier state (another generation). A call whose ctx
// deadline expired is judged by its error like any other (usually a
// timeout, which counts): a deadline says how long the dependency may take,
// and with deadlines propagated from the caller, most calls to a hanging
// dependency end that way. A call that panics counts as failed.
func (cb *CircuitBreaker) Do(ctx context.Context, call func(ctx context.Context) error) error {
	generation, err := cb.admit()
	if err != nil {
		return err
	}
	var start time.Time // read only when speed is judged
	if cb.s.SlowCall > 0 {
		start = time.Now()
	}
	result := failure
	defer func() { cb.record(generation, result) }()
	err = call(ctx)
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		result = ignored
	case err != nil && cb.s.IsFailure(err), err == nil && cb.s.SlowCall > 0 && time.Since(start) > cb.s.SlowCall:
		result = failure
	default:
		result = success
	}
	return err
}

// outcome is what one admitted call tells about the dependency.
type outcome int

const (
	success outcome = iota
	failure
	ignored
)

func (cb *CircuitBreaker) admit() (uint64, error) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	switch cb.current() {
	case Open:
		return 0, fmt.Errorf("%s: %w (until %s)", cb.s.Name, fooddelivery.ErrCircuitOpen, cb.openUntil.Format(time.TimeOnly))
	case HalfOpen:
		if cb.trials >= cb.s.HalfOpenCalls {
			return 0, fmt.Errorf("%s: %w (half-open, %d trial calls in flight)", cb.s.Name, fooddelivery.ErrCircuitOpen, cb.trials)
		}
		cb.trials++
	}
	return cb.generation, nil
}

// record books the outcome of a call admitted in generation.
func (cb *CircuitBreaker) record(generation uint64, o outcome) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	state := cb.current()
	if generation != cb.generation {
		return // the breaker changed state while the call ran
	}
	switch {
	case state == Closed && o != ignored:
		if cb.tripped(o == failure) {
			cb.setState(Open)
		}
	case state == HalfOpen:
		cb.trials--
		switch o {
		case failure:
			cb.setState(Open)
		case success:
			if cb.successes++; cb.successes >= cb.s.HalfOpenCalls {
				cb.setState(Closed)
			}
		}
	}
}

// tripped adds one outcome in the closed state and reports whether the
// breaker must open.
func (cb *CircuitBreaker) tripped(failed bool) bool {
	if cb.s.Window == 0 {
		if !failed {
			cb.streak = 0
			return false
		}
		cb.streak++
		return cb.streak >= cb.s.ConsecutiveFailures
	}
	if cb.calls == cb.s.Window && cb.outcomes[cb.next] {
		cb.failures-- // the oldest outcome slides out
	}
	cb.calls = min(cb.calls+1, cb.s.Window)
	cb.outcomes[cb.next] = failed
	cb.next = (cb.next + 1) % cb.s.Window
	if failed {
		cb.failures++
	}
	return cb.calls >= cb.s.MinCalls && float64(cb.failures) >= cb.s.FailureRate*float64(cb.calls)
}

// current moves an open breaker whose period is over to half-open and
// returns the state. Only an open breaker depends on the time, so only an
// open breaker reads the clock. Call with cb.mu held.
func (cb *CircuitBreaker) current() State {
	if cb.state == Open && !time.Now().Before(cb.openUntil) {
		cb.setState(HalfOpen)
	}
	return cb.state
}

// setState changes the state, starts a new generation with clean counts,
// and reports the change; a breaker that opens reads the clock to stamp
// when its open period ends. Moving to the state the breaker is already in
// is not a change: nothing happens. Call with cb.mu held.
func (cb *CircuitBreaker) setState(to State) {
	from := cb.state
	if to == from {
		return
	}
	cb.state = to
	cb.generation++
	cb.streak, cb.calls, cb.failures, cb.next, cb.trials, cb.successes = 0, 0, 0, 0, 0, 0
	clear(cb.outcomes)
	if to == Open {
		cb.openUntil = time.Now().Add(cb.s.OpenFor)
	}
	level := slog.LevelInfo
	if to == Open {
		level = slog.LevelWarn
	}
	cb.s.Logger.Log(context.Background(), level, "circuit breaker state changed",
		"breaker", cb.s.Name, "from", from.String(), "to", to.String())
	if cb.s.OnStateChange != nil {
		cb.s.OnStateChange(cb.s.Name, from, to)
	}
}

// Failure is the default Settings.IsFailure. Timeouts, unreachable
// dependencies, 5xx answers and overload rejections count against the
// dependency (fooddelivery.ErrTimeout, ErrUnavailable, ErrOverloaded), and
// so does 429 Too Many Requests: it is the dependency saying it is
// overloaded (fooddelivery.ReadError classes it as ErrUnavailable), and
// calling it less is what it asks for. Answers about the caller's own
// request do not count: every other 4xx (CallError.Status 400-499) and the
// sentinels ErrRejected, ErrNotFound and ErrUnauthorized. Other non-nil
// errors count.
func Failure(err error) bool {
	if err == nil {
		return false
	}
	var ce *fooddelivery.CallError
	if errors.As(err, &ce) && ce.Status >= 400 && ce.Status < 500 {
		return ce.Status == http.StatusTooManyRequests
	}
	switch {
	case errors.Is(err, fooddelivery.ErrRejected),
		errors.Is(err, fooddelivery.ErrNotFound),
		errors.Is(err, fooddelivery.ErrUnauthorized):
		return false
	}
	return true
}
