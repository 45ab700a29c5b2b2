package breaker_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/system"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
	breaker "github.com/gophereats/resilience/labs/05-breaker"
)

// The test rig: the whole food-delivery system with the order service's
// payment client guarded by your breaker (start), and the helpers that
// drive it.
// The step tests are in stepN_test.go, one file per README step; the
// experiment, the last step, is in step8_experiment_test.go (go test runs
// the files in name order, so it runs after the other steps).

const (
	paymentTimeout = 2 * time.Second         // the order service's budget for one payment call
	openFor        = 30 * time.Second        // the default open period
	fast           = 10 * time.Millisecond   // what "at once" means here: no network call, no waiting
	slowPayment    = 1500 * time.Millisecond // a payment that succeeds, but slowly
)

var pizza = labtest.PizzaOrder()

var down = faults.Fault{Status: http.StatusServiceUnavailable} // payment answers 503

// quiet is the logger the tests give breakers when they do not read the
// log, so that test output stays readable.
var quiet = slog.New(slog.DiscardHandler)

// paymentHTTP is a payment client with the timeouts lab 01 adds: 300ms to
// connect, paymentTimeout for the whole call.
func paymentHTTP(n *memnet.Network) *http.Client {
	return &http.Client{
		Transport: (&memnet.Dialer{Network: n, Timeout: 300 * time.Millisecond}).Transport(),
		Timeout:   paymentTimeout,
	}
}

// start runs the system with the order service's payment client guarded by
// a breaker built from s, and returns both.
func start(t *testing.T, s breaker.Settings) (*system.System, *breaker.CircuitBreaker) {
	t.Helper()
	if s.Name == "" {
		s.Name = "order->payment"
	}
	if s.Logger == nil {
		s.Logger = quiet
	}
	cb := breaker.New(s)
	sys := labtest.StartSystem(t, system.Config{
		PaymentClient: paymentHTTP,
		PaymentBreaker: func(p fooddelivery.Payer) fooddelivery.Payer {
			return breaker.Payer{Breaker: cb, Next: p}
		},
	})
	return sys, cb
}

// place places one order and returns the virtual time it took and its error.
func place(sys *system.System) (took time.Duration, err error) {
	began := time.Now()
	_, err = sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
	return time.Since(began), err
}

// setPayment makes payment's POST /charges behave as f (the zero Fault heals it).
func setPayment(t *testing.T, sys *system.System, f faults.Fault) {
	t.Helper()
	if f == (faults.Fault{}) {
		sys.Faults.Clear("payment", "POST /charges")
		return
	}
	require.NoError(t, sys.Faults.Set("payment", "POST /charges", f), "setting up the fault")
}

// trip places n orders while payment answers 503, and returns how many of
// their charges reached payment (the others the breaker refused).
func trip(t *testing.T, sys *system.System, n int) (reached int) {
	t.Helper()
	setPayment(t, sys, down)
	before := labtest.Charges(sys)
	for range n {
		place(sys)
	}
	return int(labtest.Charges(sys) - before)
}

// unavailable is the error of a payment call that could not reach payment.
var unavailable = fmt.Errorf("payment: %w", fooddelivery.ErrUnavailable)

// fail makes n calls through cb, each failing at once with unavailable,
// and returns how many of them the breaker admitted (called).
// The tests that call the breaker directly, without the system, use it.
func fail(cb *breaker.CircuitBreaker, n int) (called int) {
	for range n {
		cb.Do(context.Background(), func(context.Context) error { called++; return unavailable })
	}
	return called
}

// succeed makes one call through cb that succeeds at once, and reports
// whether the call was made and what Do returned.
func succeed(cb *breaker.CircuitBreaker) (called bool, err error) {
	err = cb.Do(context.Background(), func(context.Context) error { called = true; return nil })
	return called, err
}

// runPattern places one order per letter of pattern, payment failing (503)
// for 'F' and healthy for 'S', and returns the 1-based number of the order
// after which the breaker was first found open (0 if it never opened).
func runPattern(t *testing.T, sys *system.System, cb *breaker.CircuitBreaker, pattern string) int {
	t.Helper()
	for i, c := range pattern {
		if c == 'F' {
			setPayment(t, sys, down)
		} else {
			setPayment(t, sys, faults.Fault{})
		}
		place(sys)
		if cb.State() == breaker.Open {
			return i + 1
		}
	}
	return 0
}

// window is the sliding-window configuration steps 2 and 8 use: open when
// half of the last 20 calls failed, once 10 calls were seen.
func window() breaker.Settings {
	return breaker.Settings{Window: 20, MinCalls: 10}
}

// halfOpenAfter sleeps d, the open period of cb, which opened just before
// (opened says how), and stops the test unless State() then says half-open:
// the half-open story the test goes on to tell would not be true otherwise.
func halfOpenAfter(t *testing.T, step int, cb *breaker.CircuitBreaker, d time.Duration, opened string) {
	t.Helper()
	time.Sleep(d)
	s := cb.State()
	if s == breaker.HalfOpen {
		return
	}
	advice := "The open period is over once Settings.OpenFor has passed, exactly OpenFor included: an open breaker " +
		"whose openUntil is not after now is half-open (!now.Before(openUntil)), step 1."
	if s != breaker.Open {
		advice = "When the open period is over an open breaker becomes half-open, and only a trial call decides " +
			"whether it closes (step 1)."
	}
	t.Fatalf("step %d: %s; exactly %v later (its Settings.OpenFor) State() says %v, not half-open, so this test cannot "+
		"go on to what a half-open breaker does. %s", step, opened, d, s, advice)
}

// abandonTrial opens cb with 5 failures, waits out the open period, and
// makes one trial call whose caller gives up while it runs.
func abandonTrial(t *testing.T, step int, cb *breaker.CircuitBreaker) {
	t.Helper()
	if n, s := fail(cb, 5), cb.State(); s != breaker.Open {
		t.Fatalf("step %d: 5 calls were made through a new breaker, %d of them admitted, each failing with ErrUnavailable, "+
			"and the breaker is %v; it must be open before this test can look at half-open. Finish step 1 first.", step, n, s)
	}
	halfOpenAfter(t, step, cb, openFor, "5 failures opened the breaker")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cb.Do(ctx, func(ctx context.Context) error {
		cancel() // the customer closed the tab
		return fmt.Errorf("payment: %w: %w", fooddelivery.ErrUnavailable, ctx.Err())
	})
}

// transitions records what OnStateChange reports.
type transitions struct {
	mu    sync.Mutex
	seen  []string
	moves []move // the same changes, with their virtual time
	edge  *metrics.EdgeStats
}

// move is one state change and when it was reported.
type move struct {
	at time.Time
	to breaker.State
}

func (r *transitions) record(name string, from, to breaker.State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, fmt.Sprintf("%s: %v -> %v", name, from, to))
	r.moves = append(r.moves, move{time.Now(), to})
	if r.edge != nil {
		r.edge.BreakerTransitions.Add(1) // the metric the system exposes
	}
}

func (r *transitions) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// raceDetector reports whether the tests run with -race, which finds an
// unguarded field in a few calls where the plain run needs many.
func raceDetector() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}
