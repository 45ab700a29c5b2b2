package breaker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/payment"
	"github.com/gophereats/resilience/fooddelivery/retry"
	"github.com/gophereats/resilience/fooddelivery/system"
	breaker "github.com/gophereats/resilience/labs/05-breaker"
)

const (
	paymentTimeout = 2 * time.Second         // the order service's budget for one payment call
	openFor        = 30 * time.Second        // the default open period
	fast           = 10 * time.Millisecond   // what "at once" means here: no network call, no waiting
	slowPayment    = 1500 * time.Millisecond // a payment that succeeds, but slowly
)

var pizza = fooddelivery.PlaceOrderInput{
	RestaurantID: system.SampleRestaurant,
	Items:        []fooddelivery.OrderItem{{DishID: system.SampleDish, Quantity: 2}},
	Card:         "tok_visa",
}

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

// charges counts the charge requests that reached the payment service.
func charges(sys *system.System) int64 {
	return sys.Metrics.Route("payment", "POST /charges").Received.Load()
}

// place places one order and returns its error and the virtual time it took.
func place(sys *system.System) (error, time.Duration) {
	began := time.Now()
	_, err := sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
	return err, time.Since(began)
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

// trip fails n payments in a row.
func trip(t *testing.T, sys *system.System, n int) {
	t.Helper()
	setPayment(t, sys, down)
	for range n {
		place(sys)
	}
}

func TestStep1OpensAfterFiveFailuresInARow(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		sys, cb := start(t, breaker.Settings{})
		trip(t, sys, 4)
		if s := cb.State(); s != breaker.Closed {
			t.Fatalf("step 1: after 4 failed payments in a row the breaker is %v; with the default settings it opens at the 5th", s)
		}
		trip(t, sys, 1)
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 1: payment answered 503 to 5 charges in a row and the breaker is %v; "+
				"it must open after Settings.ConsecutiveFailures failures in a row (zero means 5)", s)
		}

		before := charges(sys)
		var slowest time.Duration
		for range 10 {
			err, took := place(sys)
			require.Error(t, err, "step 1: payment is down and the breaker is open, yet an order succeeded")
			slowest = max(slowest, took)
		}
		if reached := charges(sys) - before; reached != 0 || slowest > fast {
			t.Fatalf("step 1: while the breaker was open, %d of 10 orders still reached payment and the slowest took %v. "+
				"An open breaker refuses at once, without calling: Do must return an error wrapping "+
				"fooddelivery.ErrCircuitOpen and not call the function it was given.", reached, slowest)
		}
	})
}

func TestStep1ASuccessResetsTheCount(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		sys, cb := start(t, breaker.Settings{})
		trip(t, sys, 4)
		setPayment(t, sys, faults.Fault{})
		err, _ := place(sys)
		require.NoError(t, err, "step 1: payment was healthy again, yet the order failed (breaker %v)", cb.State())
		trip(t, sys, 4)
		if s, n := cb.State(), charges(sys); s != breaker.Closed || n != 9 {
			t.Fatalf("step 1: payment failed 4 times, succeeded once, failed 4 more times; the breaker is %v and %d of 9 "+
				"charges reached payment. Failures in a row open the breaker: a success starts the count again.", s, n)
		}
	})
}

func TestStep1HalfOpenAfterTheOpenPeriod(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		sys, cb := start(t, breaker.Settings{})
		trip(t, sys, 5)
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 1: payment answered 503 to 5 charges in a row and the breaker is %v; it must open after "+
				"Settings.ConsecutiveFailures failures in a row (zero means 5). Start with TestStep1OpensAfterFiveFailuresInARow.", s)
		}

		time.Sleep(openFor - time.Second)
		setPayment(t, sys, faults.Fault{}) // payment has recovered
		before := charges(sys)
		err, _ := place(sys)
		if s, n := cb.State(), charges(sys)-before; err == nil || s != breaker.Open || n != 0 {
			t.Fatalf("step 1: %v after the breaker opened (of a %v open period) it is %v; %d of 1 order reached payment "+
				"(error: %v). It must stay open, refusing every call, for the whole period.", openFor-time.Second, openFor, s, n, err)
		}

		time.Sleep(time.Second)
		if s := cb.State(); s != breaker.HalfOpen {
			t.Fatalf("step 1: %v after the breaker opened it is %v; once Settings.OpenFor (zero means %v) has passed it is half-open. "+
				"Compute the state from time.Now() when asked: no timer needed.", openFor, s, openFor)
		}
		err, _ = place(sys)
		if s := cb.State(); err != nil || s != breaker.Closed || charges(sys) != before+1 {
			t.Fatalf("step 1: payment has recovered; the trial order in the half-open state failed with %v, "+
				"%d charges reached payment, and the breaker is now %v. A successful trial closes the breaker.",
				err, charges(sys)-before, s)
		}
		for range 3 {
			err, _ := place(sys)
			require.NoError(t, err, "step 1: the breaker closed after a successful trial, yet a later order failed")
		}
	})
}

func TestStep1AFailedTrialOpensAgain(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		sys, cb := start(t, breaker.Settings{})
		trip(t, sys, 5)
		time.Sleep(openFor)
		before := charges(sys)
		err, _ := place(sys) // payment is still down
		require.Error(t, err, "step 1: payment is still down, yet the trial order succeeded")
		if s := cb.State(); s != breaker.Open || charges(sys) != before+1 {
			t.Fatalf("step 1: after the open period one trial order reached payment (%d did) and failed; the breaker is %v. "+
				"A failed trial opens the breaker again, for another full period.", charges(sys)-before, s)
		}
		time.Sleep(openFor - time.Second)
		place(sys)
		if s := cb.State(); s != breaker.Open || charges(sys) != before+1 {
			t.Fatalf("step 1: %v after a failed trial the breaker is %v and %d more charges reached payment; "+
				"it must stay open for a whole new period of %v", openFor-time.Second, s, charges(sys)-before-1, openFor)
		}
		time.Sleep(time.Second)
		if s := cb.State(); s != breaker.HalfOpen {
			t.Fatalf("step 1: %v after the failed trial the breaker is %v; after a whole new open period it is half-open again", openFor, s)
		}
	})
}

func TestStep1LateFailuresFromBeforeTheOpeningAreIgnored(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		const late, lateAfter = 5, 1900 * time.Millisecond
		shortOpen := time.Second // short, so that the breaker closes before the late calls end
		cb := breaker.New(breaker.Settings{Name: "order->payment", OpenFor: shortOpen, Logger: quiet})
		timedOut := fmt.Errorf("payment: %w", fooddelivery.ErrTimeout)
		refused := fmt.Errorf("payment: %w", fooddelivery.ErrUnavailable)

		// 5 charges are admitted while the breaker is closed; payment hangs
		// and they time out 1.9 s later.
		var admitted, ended sync.WaitGroup
		defer ended.Wait() // even when the test stops early: no goroutine left behind
		for range late {
			admitted.Add(1)
			ended.Go(func() {
				cb.Do(context.Background(), func(context.Context) error {
					admitted.Done()
					time.Sleep(lateAfter)
					return timedOut
				})
			})
		}
		admitted.Wait()
		// Meanwhile 5 other charges fail at once and open the breaker.
		for range 5 {
			cb.Do(context.Background(), func(context.Context) error { return refused })
		}
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 1: 5 calls failed in a row (5 more still in flight) and the breaker is %v; it must open after "+
				"Settings.ConsecutiveFailures failures in a row (zero means 5)", s)
		}
		// The open period ends and a trial succeeds: payment has recovered.
		time.Sleep(shortOpen)
		trial := cb.Do(context.Background(), func(context.Context) error { return nil })
		if s := cb.State(); trial != nil || s != breaker.Closed {
			t.Fatalf("step 1: %v after the breaker opened (Settings.OpenFor %v) a trial call succeeded; it returned %v and "+
				"the breaker is %v. A successful trial closes the breaker.", shortOpen, shortOpen, trial, s)
		}
		// The 5 charges admitted before the breaker opened time out now.
		ended.Wait()
		if s := cb.State(); s != breaker.Closed {
			t.Fatalf("step 1: %d calls admitted while the breaker was closed failed %v later. In between, the breaker had "+
				"opened, gone half-open after %v and closed on a successful trial; their late failures left it %v. "+
				"An outcome says something about the state its call was admitted in, not about today's: tag each call "+
				"with a generation when it is admitted, change the generation at every state change, and ignore "+
				"outcomes from another generation.", late, lateAfter, shortOpen, s)
		}
		called := false
		err := cb.Do(context.Background(), func(context.Context) error { called = true; return nil })
		if !called || err != nil {
			t.Fatalf("step 1: the breaker closed after a successful trial and stayed closed, yet the next call was refused "+
				"without calling (error: %v); a closed breaker makes every call", err)
		}
	})
}

// unavailable is the error of a payment call that could not reach payment.
var unavailable = fmt.Errorf("payment: %w", fooddelivery.ErrUnavailable)

// fail makes n calls through cb, each failing at once with unavailable.
// The tests that call the breaker directly, without the system, use it.
func fail(cb *breaker.CircuitBreaker, n int) {
	for range n {
		cb.Do(context.Background(), func(context.Context) error { return unavailable })
	}
}

// succeed makes one call through cb that succeeds at once, and reports
// whether the call was made and what Do returned.
func succeed(cb *breaker.CircuitBreaker) (called bool, err error) {
	err = cb.Do(context.Background(), func(context.Context) error { called = true; return nil })
	return called, err
}

func TestStep1ConsecutiveFailuresIsASetting(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		for _, n := range []int{3, 8} {
			cb := breaker.New(breaker.Settings{Name: "test", ConsecutiveFailures: n, Logger: quiet})
			fail(cb, n-1)
			if s := cb.State(); s != breaker.Closed {
				t.Fatalf("step 1: with Settings.ConsecutiveFailures %d, %d failures in a row left the breaker %v; "+
					"it must open at failure %d, not before", n, n-1, s, n)
			}
			fail(cb, 1)
			if s := cb.State(); s != breaker.Open {
				t.Fatalf("step 1: with Settings.ConsecutiveFailures %d, %d failures in a row left the breaker %v; "+
					"it must open at failure %d. Only a zero ConsecutiveFailures means 5: read the setting.", n, n, s, n)
			}
		}
	})
}

func TestStep1TheCountStartsOverAfterClosing(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		cb := breaker.New(breaker.Settings{Name: "test", Logger: quiet})
		fail(cb, 5)
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 1: 5 calls failed in a row and the breaker is %v; it must open after "+
				"Settings.ConsecutiveFailures failures in a row (zero means 5)", s)
		}
		time.Sleep(openFor)
		if _, err := succeed(cb); err != nil || cb.State() != breaker.Closed {
			t.Fatalf("step 1: 5 failures opened the breaker, %v passed and a trial call succeeded; Do returned %v and "+
				"the breaker is %v. A successful trial closes it (TestStep1HalfOpenAfterTheOpenPeriod).", openFor, err, cb.State())
		}
		for n := 1; n <= 4; n++ {
			fail(cb, 1)
			if s := cb.State(); s != breaker.Closed {
				t.Fatalf("step 1: the breaker closed after a successful trial; %d failure(s) later it is %v. It must take "+
					"5 new failures in a row: every state change starts the counts over, and the failures that "+
					"opened it last time are history.", n, s)
			}
		}
	})
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

func TestStep2OpensWhenHalfOfTheLastTwentyFailed(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		sys, cb := start(t, window())
		pattern := strings.Repeat("S", 15) + strings.Repeat("F", 10)
		opened := runPattern(t, sys, cb, pattern)
		if opened != 25 {
			what := "never opened"
			if opened > 0 {
				what = fmt.Sprintf("opened after order %d (%d successes and %d failures so far)", opened,
					strings.Count(pattern[:opened], "S"), strings.Count(pattern[:opened], "F"))
			}
			t.Fatalf("step 2: 15 payments succeeded, then 10 failed; the breaker %s. With Window 20 and FailureRate 0.5 "+
				"(zero means 0.5) it opens after order 25, when the last 20 calls hold 10 failures: not before (order 24: "+
				"9 of the last 20 failed), not later (a window that starts over every 20 calls sees only 5 calls).", what)
		}
		before := charges(sys)
		place(sys)
		if n := charges(sys) - before; n != 0 {
			t.Fatalf("step 2: the breaker opened after order 25, yet the next order reached payment (%d charges): "+
				"an open breaker refuses without calling (step 1)", n)
		}
	})
}

func TestStep2NeverOpensBeforeTheMinimumNumberOfCalls(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		sys, cb := start(t, window())
		opened := runPattern(t, sys, cb, strings.Repeat("F", 9))
		if opened != 0 || charges(sys) != 9 {
			t.Fatalf("step 2: a new breaker saw its first payments fail and opened after failure %d (%d of 9 charges reached "+
				"payment). With MinCalls 10 the failure rate is not trusted before the window holds 10 calls: "+
				"one failure out of one call is 100%%, and it says almost nothing.", opened, charges(sys))
		}
		if opened = runPattern(t, sys, cb, "F"); opened == 0 {
			t.Fatalf("step 2: the first 10 payments all failed and the breaker is %v; with MinCalls 10 and 10 of 10 calls "+
				"failed it must open", cb.State())
		}
	})
}

func TestStep2AFewUnluckyCallsDoNotOpen(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		sys, cb := start(t, window())
		pattern := strings.Repeat("SSSSSSSSFF", 6)
		if opened := runPattern(t, sys, cb, pattern); opened != 0 {
			t.Fatalf("step 2: 20%% of payments failed, two in a row every tenth order; the breaker opened after order %d. "+
				"The last 20 calls never held more than 4 failures: only a window of a few calls sees 2 failures as a "+
				"majority. Keep the outcomes of the last Window calls, not a fixed handful.", opened)
		}
		if n := charges(sys); n != int64(len(pattern)) {
			t.Fatalf("step 2: the breaker never opened, yet %d of %d charges reached payment: a closed breaker makes every call", n, len(pattern))
		}
	})
}

func TestStep2TheSettingsDecide(t *testing.T) {
	cases := []struct {
		s       breaker.Settings
		pattern string // one call per letter: S succeeds, F fails
		want    int    // the call after which the breaker opens; 0: never
		why     string
	}{
		{breaker.Settings{Window: 8, FailureRate: 0.25}, "SSSSSSFF", 8,
			"at call 8 the window is full (MinCalls 0 means Window) and 2 of its 8 calls failed: 0.25 reaches FailureRate 0.25 (only a zero FailureRate means 0.5)"},
		{breaker.Settings{Window: 8, FailureRate: 0.75}, "SSSFFFFF", 0,
			"5 of the 8 calls failed: 0.625 stays below FailureRate 0.75 (only a zero FailureRate means 0.5)"},
		{breaker.Settings{Window: 10}, "FFFFFFFFF", 0,
			"MinCalls 0 means a full window, and 9 calls do not fill a window of 10"},
		{breaker.Settings{Window: 10, MinCalls: 30}, "SSSSSFFFFF", 10,
			"a MinCalls larger than Window means Window (a window of 10 never holds 30 calls); at call 10 the window is full and 5 of its 10 calls failed"},
		{breaker.Settings{Window: 20, MinCalls: 10}, "SSSSSFFFFF", 10,
			"at call 10 the window holds MinCalls calls, 5 of them failed: MinCalls counts calls, not failures, and the rate is over the calls held, not over Window"},
	}
	for _, c := range cases {
		labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
			c.s.Name, c.s.Logger = "test", quiet
			cb := breaker.New(c.s)
			got := 0
			for i, o := range c.pattern {
				if o == 'F' {
					fail(cb, 1)
				} else {
					succeed(cb)
				}
				if cb.State() == breaker.Open {
					got = i + 1
					break
				}
			}
			if got != c.want {
				when := func(n int) string {
					if n == 0 {
						return "never opened"
					}
					return fmt.Sprintf("opened after call %d", n)
				}
				t.Fatalf("step 2: with Window %d, FailureRate %v, MinCalls %d, after the calls %s (S succeeded, F failed) "+
					"the breaker %s; want: %s, because %s.", c.s.Window, c.s.FailureRate, c.s.MinCalls, c.pattern, when(got), when(c.want), c.why)
			}
		})
	}
}

func TestStep2TheWindowStartsOverAfterClosing(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		s := window()
		s.Name, s.Logger = "test", quiet
		cb := breaker.New(s)
		fail(cb, 10)
		if st := cb.State(); st != breaker.Open {
			t.Fatalf("step 2: the first 10 calls all failed and the breaker (Window 20, MinCalls 10) is %v; it must open", st)
		}
		time.Sleep(openFor)
		succeed(cb)
		if st := cb.State(); st != breaker.Closed {
			t.Fatalf("step 2: 10 failures opened the breaker (Window 20, MinCalls 10), %v passed and a trial call succeeded; "+
				"the breaker is %v. A successful trial closes it (step 1).", openFor, st)
		}
		fail(cb, 1)
		if st := cb.State(); st != breaker.Closed {
			t.Fatalf("step 2: the breaker (Window 20, MinCalls 10) closed after a successful trial; one failure later it is %v. "+
				"Every state change starts the window over: the 10 failures that opened it are history, and the new "+
				"window holds 1 call, fewer than MinCalls.", st)
		}
	})
}

func TestStep3DependencyFailuresCount(t *testing.T) {
	cases := []struct {
		name  string
		route string
		fault faults.Fault
	}{
		{"payment answers 503", "POST /charges", faults.Fault{Status: http.StatusServiceUnavailable}},
		{"payment answers 500", "POST /charges", faults.Fault{Status: http.StatusInternalServerError}},
		{"payment answers 429 Too Many Requests", "POST /charges", faults.Fault{Status: http.StatusTooManyRequests}},
		{"payment hangs past the timeout", "POST /charges", faults.Fault{Hang: time.Minute}},
		{"payment refuses connections", "", faults.Fault{Connect: memnet.Refused}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
				sys, cb := start(t, breaker.Settings{})
				require.NoError(t, sys.Faults.Set("payment", c.route, c.fault), "setting up the fault")
				for range 5 {
					err, _ := place(sys)
					require.Error(t, err, "step 3: %s, yet an order succeeded", c.name)
				}
				if s := cb.State(); s != breaker.Open {
					t.Fatalf("step 3: %s: 5 orders in a row failed and the breaker is %v. Timeouts, connection errors, "+
						"5xx and 429 (payment saying it is overloaded) are the dependency's failures "+
						"(fooddelivery.ErrTimeout, ErrUnavailable): they must count.", c.name, s)
				}
				sys.Faults.Clear("payment", c.route)
				before := charges(sys)
				err, _ := place(sys)
				if err == nil || charges(sys) != before {
					t.Fatalf("step 3: %s: the breaker is open, yet the next order reached payment (error: %v)", c.name, err)
				}
			})
		})
	}
}

func TestStep3CallerMistakesDoNotCount(t *testing.T) {
	declined := pizza
	declined.Card = payment.DeclinedCard // 402
	cases := []struct {
		name  string
		fault faults.Fault
		order fooddelivery.PlaceOrderInput
	}{
		{"payment answers 404", faults.Fault{Status: http.StatusNotFound}, pizza},
		{"payment answers 422", faults.Fault{Status: http.StatusUnprocessableEntity}, pizza},
		{"payment answers 400", faults.Fault{Status: http.StatusBadRequest}, pizza},
		{"the card is declined (402)", faults.Fault{}, declined},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
				sys, cb := start(t, breaker.Settings{})
				setPayment(t, sys, c.fault)
				for range 10 {
					_, err := sys.Orders().PlaceOrder(context.Background(), "alice", c.order)
					require.Error(t, err, "step 3: %s, yet the order succeeded", c.name)
				}
				if s, n := cb.State(), charges(sys); s != breaker.Closed || n != 10 {
					t.Fatalf("step 3: %s for 10 orders; the breaker is %v and %d of 10 charges reached payment. "+
						"A 4xx is about the caller's request, not the dependency's health (fooddelivery.ErrRejected, "+
						"ErrNotFound, CallError.Status 400-499): it must not count as a failure.", c.name, s, n)
				}
				setPayment(t, sys, faults.Fault{})
				err, _ := place(sys)
				require.NoError(t, err, "step 3: after %s, a good order failed: the breaker must still be closed", c.name)
			})
		})
	}
}

func TestStep3SlowSuccessesCount(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		sys, cb := start(t, breaker.Settings{SlowCall: time.Second})
		setPayment(t, sys, faults.Fault{Latency: 900 * time.Millisecond})
		for range 10 {
			err, _ := place(sys)
			require.NoError(t, err, "step 3: payment took 900ms, within its %v timeout, yet an order failed", paymentTimeout)
		}
		require.Equal(t, breaker.Closed, cb.State(),
			"step 3: payments took 900ms, faster than the 1s Settings.SlowCall: they are successes and the breaker stays closed")

		setPayment(t, sys, faults.Fault{Latency: slowPayment})
		for range 5 {
			err, _ := place(sys)
			require.NoError(t, err, "step 3: payment took %v, within its %v timeout, yet an order failed", slowPayment, paymentTimeout)
		}
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 3: 5 payments in a row succeeded but took %v each, more than Settings.SlowCall (1s); the breaker is %v. "+
				"A success slower than SlowCall counts as a failure: measure how long the call took.", slowPayment, s)
		}

		// A slow answer about the caller's own request is still not payment's failure.
		cb = breaker.New(breaker.Settings{Name: "test", SlowCall: time.Second, Logger: quiet})
		notFound := fmt.Errorf("payment: %w", fooddelivery.ErrNotFound)
		for range 10 {
			cb.Do(context.Background(), func(context.Context) error { time.Sleep(slowPayment); return notFound })
		}
		if s := cb.State(); s != breaker.Closed {
			t.Fatalf("step 3: 10 calls in a row answered 404 Not Found after %v each (Settings.SlowCall 1s); the breaker is %v. "+
				"SlowCall judges successes only: a 4xx is about the caller's request however long it took.", slowPayment, s)
		}
	})
}

func TestStep3CallersWhoGiveUpDoNotCount(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		sys, cb := start(t, breaker.Settings{})
		setPayment(t, sys, faults.Fault{Latency: time.Second})
		for range 6 {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			sys.Orders().PlaceOrder(ctx, "alice", pizza)
			cancel()
			time.Sleep(time.Second) // let the order service notice
		}
		if s := cb.State(); s != breaker.Closed {
			t.Fatalf("step 3: 6 customers gave up on their order after 100ms, while payment (healthy, 1s) was still working; "+
				"the breaker is %v. A call cancelled because its caller left says nothing about the dependency: "+
				"when ctx is cancelled (errors.Is(ctx.Err(), context.Canceled)), do not count the outcome.", s)
		}
		err, _ := place(sys)
		require.NoError(t, err, "step 3: a customer who waited got no order: the breaker must still be closed")
	})
}

func TestStep3AnExpiredDeadlineCounts(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		const budget = 300 * time.Millisecond
		sys := labtest.StartSystem(t, system.Config{})
		cb := breaker.New(breaker.Settings{Name: "checkout->payment", Logger: quiet})
		payer := breaker.Payer{Breaker: cb, Next: payment.NewClient(sys.HTTPClient(), memnet.ServiceURL("payment"))}
		setPayment(t, sys, faults.Fault{Hang: time.Minute})
		var last error
		for i := range 5 {
			ctx, cancel := context.WithTimeout(context.Background(), budget)
			_, last = payer.Charge(ctx, fooddelivery.ChargeRequest{OrderID: fmt.Sprintf("ord-%d", i), AmountCents: 1200, Card: "tok_visa"})
			cancel()
		}
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 3: payment hung; 5 charges in a row gave up when their caller's %v deadline expired "+
				"(last error: %v) and the breaker is %v. An expired deadline (context.DeadlineExceeded) is the dependency "+
				"being slower than it may be: judge the call's error like any other (a timeout counts). Only a caller who "+
				"left (context.Canceled) says nothing about the dependency.", budget, last, s)
		}
	})
}

func TestStep3SettingsIsFailureDecides(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		cb := breaker.New(breaker.Settings{Name: "test", Logger: quiet, IsFailure: func(error) bool { return false }})
		fail(cb, 10)
		if s := cb.State(); s != breaker.Closed {
			t.Fatalf("step 3: Settings.IsFailure says no error counts; 10 calls failed with ErrUnavailable and the breaker is %v. "+
				"Judge errors with Settings.IsFailure (Failure is only its default, for a nil IsFailure).", s)
		}
	})
}

// abandonTrial opens cb with 5 failures, waits out the open period, and
// makes one trial call whose caller gives up while it runs.
func abandonTrial(t *testing.T, step int, cb *breaker.CircuitBreaker) {
	t.Helper()
	fail(cb, 5)
	if s := cb.State(); s != breaker.Open {
		t.Fatalf("step %d: 5 calls failed in a row and the breaker is %v; it must be open before this test can "+
			"look at half-open. Finish step 1 first.", step, s)
	}
	time.Sleep(openFor)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cb.Do(ctx, func(ctx context.Context) error {
		cancel() // the customer closed the tab
		return fmt.Errorf("payment: %w: %w", fooddelivery.ErrUnavailable, ctx.Err())
	})
}

func TestStep3AnAbandonedTrialDecidesNothing(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		cb := breaker.New(breaker.Settings{Name: "test", Logger: quiet})
		abandonTrial(t, 3, cb)
		if s := cb.State(); s != breaker.HalfOpen {
			t.Fatalf("step 3: the breaker was half-open and its trial call's caller gave up (ctx cancelled) before payment "+
				"answered; the breaker is now %v. An abandoned call says nothing about payment, a trial no more than any "+
				"other: it must neither close the breaker (a success) nor open it again (a failure). It stays half-open.", s)
		}
	})
}

func TestStep4HalfOpenAdmitsOnlyAFewTrials(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		const trials, customers = 2, 20
		sys, cb := start(t, breaker.Settings{HalfOpenCalls: trials})
		trip(t, sys, 5)
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 4: payment failed 5 times in a row and the breaker is %v; it must be open before this test can "+
				"look at half-open. Finish step 1 first.", s)
		}
		time.Sleep(openFor)
		setPayment(t, sys, faults.Fault{Latency: 500 * time.Millisecond}) // recovered, still warming up

		before := charges(sys)
		var mu sync.Mutex
		var quick, succeeded int
		var wg sync.WaitGroup
		for range customers {
			wg.Go(func() {
				err, took := place(sys)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					succeeded++
				} else if took <= fast {
					quick++
				}
			})
		}
		wg.Wait()
		reached := charges(sys) - before
		if reached != trials || succeeded != trials || quick != customers-trials {
			t.Fatalf("step 4: %d customers ordered at once while the breaker was half-open (Settings.HalfOpenCalls = %d); "+
				"%d charges reached payment, %d orders succeeded, %d failed at once. Half-open admits at most HalfOpenCalls "+
				"trial calls at a time and refuses the others at once, so a recovering dependency is not flooded.",
				customers, trials, reached, succeeded, quick)
		}
		if s := cb.State(); s != breaker.Closed {
			t.Fatalf("step 4: both trial calls succeeded and the breaker is %v; HalfOpenCalls successful trials close it", s)
		}
		err, _ := place(sys)
		require.NoError(t, err, "step 4: the breaker closed, yet the next order failed")
	})
}

func TestStep4RefusedTrialsWrapErrCircuitOpen(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		cb := breaker.New(breaker.Settings{Name: "test", Logger: quiet})
		boom := fmt.Errorf("payment: %w", fooddelivery.ErrUnavailable)
		for range 5 {
			cb.Do(context.Background(), func(context.Context) error { return boom })
		}
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 4: 5 calls failed in a row and the breaker is %v; it must be open before this test can "+
				"look at half-open. Finish step 1 first.", s)
		}
		time.Sleep(openFor)

		release := make(chan struct{})
		started := make(chan struct{})
		trialDone := make(chan error, 1)
		go func() {
			trialDone <- cb.Do(context.Background(), func(context.Context) error {
				close(started)
				<-release
				return nil
			})
		}()
		select {
		case <-started:
		case <-time.After(time.Second):
			t.Fatalf("step 4: the breaker was half-open and the first trial call was never made")
		}
		called := false
		err := cb.Do(context.Background(), func(context.Context) error { called = true; return nil })
		close(release)
		if trialErr := <-trialDone; trialErr != nil {
			t.Fatalf("step 4: the half-open trial call succeeded, yet Do returned %v; it must return the call's own nil error", trialErr)
		}
		if called || !errors.Is(err, fooddelivery.ErrCircuitOpen) {
			t.Fatalf("step 4: one trial call was in flight in the half-open state (HalfOpenCalls defaults to 1); a second call "+
				"was made: %v, and it returned %v. It must be refused without calling, with an error wrapping "+
				"fooddelivery.ErrCircuitOpen.", called, err)
		}
		if s := cb.State(); s != breaker.Closed {
			t.Fatalf("step 4: the only trial call (HalfOpenCalls defaults to 1) succeeded and the breaker is %v; it must close", s)
		}
	})
}

func TestStep4LateCallsDoNotTakeTrialSlots(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		const trials = 2
		shortOpen := time.Second
		cb := breaker.New(breaker.Settings{Name: "order->payment", OpenFor: shortOpen, HalfOpenCalls: trials, Logger: quiet})
		boom := fmt.Errorf("payment: %w", fooddelivery.ErrUnavailable)

		// One slow charge is admitted while closed and succeeds 1.5 s later.
		lateStarted, lateDone := make(chan struct{}), make(chan struct{})
		defer func() { <-lateDone }() // even when the test stops early: no goroutine left behind
		go func() {
			defer close(lateDone)
			cb.Do(context.Background(), func(context.Context) error {
				close(lateStarted)
				time.Sleep(1500 * time.Millisecond)
				return nil
			})
		}()
		<-lateStarted
		for range 5 {
			cb.Do(context.Background(), func(context.Context) error { return boom })
		}
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 4: 5 calls failed in a row and the breaker is %v; it must be open before this test can "+
				"look at half-open. Finish step 1 first.", s)
		}
		time.Sleep(shortOpen) // half-open now: 2 trials start and take 1 s
		var trialsDone sync.WaitGroup
		defer trialsDone.Wait()
		for range trials {
			started := make(chan struct{})
			trialsDone.Go(func() {
				cb.Do(context.Background(), func(context.Context) error {
					close(started)
					time.Sleep(time.Second)
					return nil
				})
			})
			select {
			case <-started:
			case <-time.After(time.Millisecond):
				t.Fatalf("step 4: the breaker was half-open with Settings.HalfOpenCalls %d, yet a trial call was not made", trials)
			}
		}
		<-lateDone // the slow charge from before the opening succeeds now
		state := cb.State()
		called := false
		err := cb.Do(context.Background(), func(context.Context) error { called = true; return nil })
		trialsDone.Wait()
		if state != breaker.HalfOpen || called {
			what := "refused"
			if called {
				what = "made"
			}
			t.Fatalf("step 4: the breaker was half-open with its %d trial calls in flight when a call admitted before it "+
				"opened succeeded. Then the breaker was %v, and a new call was %s. The late success is not a trial: it "+
				"must neither free a trial slot nor count as a successful trial, so the breaker stays half-open and "+
				"refuses the new call. Ignore outcomes from another generation (step 1's hint).", trials, state, what)
		}
		if !errors.Is(err, fooddelivery.ErrCircuitOpen) {
			t.Fatalf("step 4: the half-open breaker refused a call without calling, but its error does not wrap "+
				"fooddelivery.ErrCircuitOpen: %v. A refused trial fails like an open breaker (step 1's error).", err)
		}
		if s := cb.State(); s != breaker.Closed {
			t.Fatalf("step 4: both trial calls succeeded and the breaker is %v; HalfOpenCalls successful trials close it", s)
		}
	})
}

func TestStep4ClosesOnlyWhenEveryTrialSucceeded(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		cb := breaker.New(breaker.Settings{Name: "test", HalfOpenCalls: 2, Logger: quiet})
		fail(cb, 5)
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 4: 5 calls failed in a row and the breaker is %v; it must be open before this test can "+
				"look at half-open. Finish step 1 first.", s)
		}
		time.Sleep(openFor)
		succeed(cb)
		if s := cb.State(); s != breaker.HalfOpen {
			t.Fatalf("step 4: with Settings.HalfOpenCalls 2, the first of 2 trial calls succeeded and the breaker is %v; "+
				"it stays half-open until HalfOpenCalls trials have succeeded", s)
		}
		succeed(cb)
		if s := cb.State(); s != breaker.Closed {
			t.Fatalf("step 4: with Settings.HalfOpenCalls 2, both trial calls succeeded and the breaker is %v; it must close", s)
		}
	})
}

func TestStep4AnAbandonedTrialFreesItsSlot(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		cb := breaker.New(breaker.Settings{Name: "test", Logger: quiet})
		abandonTrial(t, 4, cb)
		called, err := succeed(cb)
		if !called {
			t.Fatalf("step 4: the only trial call of a half-open breaker (HalfOpenCalls defaults to 1) was abandoned by its "+
				"caller; the next call was refused without calling (error: %v). An abandoned trial records nothing, but it "+
				"must free its trial slot, or the breaker refuses everyone until the process restarts.", err)
		}
		if s := cb.State(); err != nil || s != breaker.Closed {
			t.Fatalf("step 4: after an abandoned trial, the next trial call succeeded; Do returned %v and the breaker is %v. "+
				"A successful trial closes it.", err, s)
		}
	})
}

func TestStep4StateIsReadUnderTheLock(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		cb := breaker.New(breaker.Settings{Name: "test", Logger: quiet})
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() { fail(cb, 1) })
			wg.Go(func() { cb.State() }) // a dashboard looks while calls end
		}
		wg.Wait()
		// Under -race, an unlocked read in State() fails this test with a DATA RACE report.
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 4: 10 calls failed at the same time (while others asked for the state) and the breaker is %v; "+
				"5 failures in a row open it, whichever goroutines they come from", s)
		}
	})
}

func TestStep5BrokenReportingLeavesOrderingAlone(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
		sys := labtest.StartSystem(t, system.Config{})
		orders := breaker.NewOrderClient(sys.Orders(), breaker.Settings{Name: "order", Logger: quiet})
		require.NoError(t, sys.Faults.Set("order", "GET /reports/daily", faults.Fault{Status: http.StatusInternalServerError}),
			"setting up the fault")

		for range 10 {
			_, err := orders.DailyReport(context.Background(), time.Time{})
			require.Error(t, err, "step 5: the reporting endpoint answers 500, yet a report arrived")
		}
		reports := sys.Metrics.Route("order", "GET /reports/daily").Received.Load()
		if reports != 5 {
			t.Fatalf("step 5: the daily-report endpoint answered 500; %d of 10 report requests reached it. Its breaker "+
				"must open after 5 failures in a row and spare the failing endpoint the other 5.", reports)
		}

		var failed []error
		var placed fooddelivery.Order
		for range 3 {
			o, err := orders.PlaceOrder(context.Background(), "alice", pizza)
			if err != nil {
				failed = append(failed, err)
			} else {
				placed = o
			}
		}
		if len(failed) > 0 {
			t.Fatalf("step 5: only the reporting endpoint was broken, yet %d of 3 orders failed (first error: %v). "+
				"One breaker shared by every endpoint lets a broken report cut off ordering: give each endpoint its own.",
				len(failed), failed[0])
		}
		_, err := orders.Order(context.Background(), placed.ID)
		require.NoError(t, err, "step 5: only reporting was broken, yet looking up an order failed")

		// Now looking orders up breaks; placing them must go on.
		require.NoError(t, sys.Faults.Set("order", "GET /orders/{id}", faults.Fault{Status: http.StatusInternalServerError}),
			"setting up the fault")
		for range 5 {
			orders.Order(context.Background(), placed.ID)
		}
		if _, err := orders.PlaceOrder(context.Background(), "alice", pizza); err != nil {
			t.Fatalf("step 5: GET /orders/{id} answered 500 to 5 lookups in a row, yet placing an order (POST /orders) "+
				"failed: %v. Placing and looking up are two endpoints: each needs its own breaker.", err)
		}
	})
}

// transitions records what OnStateChange reports.
type transitions struct {
	mu    sync.Mutex
	seen  []string
	moves []move // the same changes, with their virtual time
	edge  *fooddelivery.EdgeStats
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

// lockedBuffer is a log destination safe for concurrent writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestStep6EveryStateChangeIsSeen(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 6}, func(t *testing.T) {
		var logs lockedBuffer
		rec := &transitions{}
		sys, cb := start(t, breaker.Settings{
			Name:          "order->payment",
			Logger:        slog.New(slog.NewJSONHandler(&logs, nil)),
			OnStateChange: rec.record,
		})
		rec.mu.Lock()
		rec.edge = sys.Metrics.Edge("order", "payment")
		rec.mu.Unlock()

		trip(t, sys, 5)
		time.Sleep(openFor)
		cb.State() // a dashboard looks: half-open
		if got := rec.list(); len(got) != 2 {
			t.Fatalf("step 6: the breaker opened, and %v later State() said half-open; Settings.OnStateChange had been called "+
				"%d times: %q. The change happens when State() computes it, so it is reported there and then, not "+
				"when the next call arrives.", openFor, len(got), got)
		}
		setPayment(t, sys, faults.Fault{})
		err, _ := place(sys)
		require.NoError(t, err, "step 6: payment recovered and the open period was over, yet the trial order failed")

		want := []string{"order->payment: closed -> open", "order->payment: open -> half-open", "order->payment: half-open -> closed"}
		if got := rec.list(); !slices.Equal(got, want) {
			t.Fatalf("step 6: the breaker opened, became half-open %v later, and closed after a successful trial; "+
				"Settings.OnStateChange was called %d times: %q. Want every change, in order: %q. "+
				"The change to half-open happens when the state is computed: report it there too.", openFor, len(got), got, want)
		}

		type record struct{ Level, Msg, Breaker, From, To string }
		var changes []record
		for line := range strings.Lines(logs.String()) {
			var r record
			if json.Unmarshal([]byte(line), &r) == nil && r.To != "" {
				changes = append(changes, r)
			}
		}
		var got []string
		for _, r := range changes {
			got = append(got, fmt.Sprintf("%s: %s -> %s", r.Breaker, r.From, r.To))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step 6: the breaker changed state 3 times; Settings.Logger received %d records with a \"to\" attribute: %q. "+
				"Want one per change, with attributes breaker, from and to (State.String()): %q.", len(changes), got, want)
		}
		for i, r := range changes {
			level := slog.LevelInfo
			if r.To == breaker.Open.String() {
				level = slog.LevelWarn
			}
			if r.Msg != "circuit breaker state changed" || r.Level != level.String() {
				t.Fatalf("step 6: the record of change %d (%s -> %s) has level %s and message %q; want level %s and "+
					"message \"circuit breaker state changed\". An opening is a symptom someone must act on (Warn); "+
					"the other changes are news (Info). A fixed message lets a log query find every change.",
					i+1, r.From, r.To, r.Level, r.Msg, level)
			}
		}

		// Per-endpoint breakers (step 5) say which endpoint failed.
		endpoints := &transitions{}
		orders := breaker.NewOrderClient(sys.Orders(), breaker.Settings{Name: "order", Logger: quiet, OnStateChange: endpoints.record})
		require.NoError(t, sys.Faults.Set("order", "GET /reports/daily", faults.Fault{Status: http.StatusInternalServerError}),
			"setting up the fault")
		require.NoError(t, sys.Faults.Set("order", "POST /orders", faults.Fault{Status: http.StatusInternalServerError}),
			"setting up the fault")
		require.NoError(t, sys.Faults.Set("order", "GET /orders/{id}", faults.Fault{Status: http.StatusInternalServerError}),
			"setting up the fault")
		for range 5 {
			orders.DailyReport(context.Background(), time.Time{})
			orders.PlaceOrder(context.Background(), "alice", pizza)
			orders.Order(context.Background(), "ord-1")
		}
		want = []string{"order GET /reports/daily: closed -> open", "order POST /orders: closed -> open", "order GET /orders/{id}: closed -> open"}
		if got := endpoints.list(); !slices.Equal(got, want) {
			t.Fatalf("step 6: the daily report, placing an order and looking one up each failed 5 times in a row (in turn) "+
				"through NewOrderClient(..., Settings{Name: \"order\"}); its breakers reported %q. Want %q: each "+
				"endpoint's breaker is named Settings.Name, a space, and the route as the order service spells it (step 5), "+
				"so that the log says which endpoint is failing.", got, want)
		}
	})
}

func TestStep6ANilLoggerLogsToTheDefault(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 6}, func(t *testing.T) {
		var logs lockedBuffer
		// slog.SetDefault also redirects the log package: restore both.
		oldDefault, oldWriter, oldFlags := slog.Default(), log.Writer(), log.Flags()
		defer func() {
			slog.SetDefault(oldDefault)
			log.SetOutput(oldWriter)
			log.SetFlags(oldFlags)
		}()
		slog.SetDefault(slog.New(slog.NewJSONHandler(&logs, nil)))

		cb := breaker.New(breaker.Settings{Name: "nil-logger"}) // Logger nil
		fail(cb, 5)
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 6: 5 calls failed in a row and the breaker is %v; it must open (step 1)", s)
		}
		if !strings.Contains(logs.String(), `"breaker":"nil-logger"`) {
			t.Fatalf("step 6: a breaker with a nil Settings.Logger opened and slog.Default() received no record about it. " +
				"nil means slog.Default(): the application's logger, not silence.")
		}
	})
}

func TestStep7RetriesStopAtAnOpenBreaker(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 7}, func(t *testing.T) {
		sys := labtest.StartSystem(t, system.Config{})
		cb := breaker.New(breaker.Settings{Name: "checkout->payment", Logger: quiet})
		payer := breaker.Payer{Breaker: cb, Next: payment.NewClient(sys.HTTPClient(), memnet.ServiceURL("payment"))}
		policy := retry.Policy{Attempts: 3, Seed: 7} // fooddelivery's plain retry helper
		charge := func(orderID string) (attempts int, err error) {
			err = policy.Do(context.Background(), orderID, func(ctx context.Context, attempt int) error {
				attempts = attempt
				_, err := payer.Charge(ctx, fooddelivery.ChargeRequest{OrderID: orderID, AmountCents: 1200, Card: "tok_visa"})
				return err
			})
			return attempts, err
		}

		setPayment(t, sys, down)
		charge("ord-1") // 3 attempts, 3 failures
		charge("ord-2") // 2 more failures open the breaker
		if s, n := cb.State(), charges(sys); s != breaker.Open {
			t.Fatalf("step 7: two charges through retry.Policy{Attempts: 3} made %d attempts against a payment service "+
				"that answers 503, and the breaker is %v; 5 failures in a row must open it. Finish step 1 first.", n, s)
		}

		before := charges(sys)
		began := time.Now()
		attempts, err := charge("ord-3")
		took := time.Since(began)
		if attempts != 1 || took > fast || !errors.Is(err, fooddelivery.ErrCircuitOpen) {
			t.Fatalf("step 7: the breaker was open; a charge through retry.Policy made %d attempts over %v (%d reached payment) "+
				"and failed with %v. An open breaker is a final answer: its error must wrap fooddelivery.ErrCircuitOpen, "+
				"which retry.Retryable does not retry (an error wrapping ErrUnavailable would be retried with backoff).",
				attempts, took, charges(sys)-before, err)
		}
	})
}
