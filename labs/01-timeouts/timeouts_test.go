package timeouts_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	timeouts "github.com/gophereats/resilience/labs/01-timeouts"
)

func TestStep1HangingPaymentFailsWithinBudget(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "PlaceOrder was still waiting for the hanging payment service"}, func(t *testing.T) {
		sys := start(t, budget, 10)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Hang: hang}))

		began := time.Now()
		_, err := sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		took := time.Since(began)

		require.Error(t, err, "step 1: payment hung, yet PlaceOrder succeeded")
		if took > budget+slack {
			t.Fatalf("step 1: payment hung (it answers only after %v); PlaceOrder waited %v and failed with %q.\n"+
				"The order service must give up on payment within its %v budget and report that payment timed out "+
				"(errors.Is(err, fooddelivery.ErrTimeout)). Set the client's timeout.", hang, took, err, budget)
		}
		if !errors.Is(err, fooddelivery.ErrTimeout) {
			t.Fatalf("step 1: payment hung and PlaceOrder gave up after %v, but with %q, which is not a timeout "+
				"(errors.Is(err, fooddelivery.ErrTimeout) is false). Let the client's timeout end the call.", took, err)
		}
	})
}

func TestStep1OrderServiceKeepsServing(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		const workers = 10
		sys := start(t, budget, workers)
		earlier, err := sys.Orders().PlaceOrder(context.Background(), "bob", pizza)
		require.NoError(t, err, "step 1: an order placed while payment was healthy must succeed")

		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Hang: hang}))
		var wg sync.WaitGroup
		var lookups, served atomic.Int64
		for i := range 40 { // two checkouts a second for 20 seconds, one order lookup a second
			wg.Go(func() { sys.Orders().PlaceOrder(context.Background(), "alice", pizza) })
			if i%2 == 0 {
				wg.Go(func() {
					lookups.Add(1)
					if _, err := sys.Orders().Order(context.Background(), earlier.ID); err == nil {
						served.Add(1)
					}
				})
			}
			time.Sleep(500 * time.Millisecond)
		}
		wg.Wait()

		peak := sys.Metrics.Route("order", "POST /orders").PeakInFlight.Load()
		if served.Load() != lookups.Load() {
			t.Fatalf("step 1: while payment hung, %d of %d order lookups failed: checkouts waiting on payment held up to %d "+
				"of the order service's %d workers, so it had none left for anything else.\n"+
				"With a %v payment timeout a stuck checkout frees its worker after %v and lookups keep working.",
				lookups.Load()-served.Load(), lookups.Load(), peak, workers, budget, budget)
		}
	})
}

func TestStep1HealthyCheckoutStillWorks(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		sys := start(t, budget, 10)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Latency: 300 * time.Millisecond}))

		placed, err := sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		require.NoError(t, err, "step 1: payment answered in 300ms, well within the %v budget, yet the order failed. "+
			"A timeout must not cut off a healthy call (is a context cancelled before the body is read?)", budget)
		assert.Equal(t, fooddelivery.OrderPlaced, placed.Status, "step 1: a paid order is placed")
		assert.Equal(t, 1, sys.Ledger.ChargesFor(placed.ID), "step 1: the order is charged exactly once")
	})
}

func TestStep1SlowButTimelyPaymentSucceeds(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		const slow = 1800 * time.Millisecond
		sys := start(t, budget, 10)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Latency: slow}))

		began := time.Now()
		_, err := sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		if err != nil {
			t.Fatalf("step 1: payment answered in %v, inside the %v budget, but PlaceOrder failed after %v: %v.\n"+
				"The timeout is the budget you are given: a shorter one of your own fails calls that would have succeeded.",
				slow, budget, time.Since(began), err)
		}
	})
}

func TestStep1FailedPaymentIsNotRetried(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		sys := start(t, budget, 10)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Status: http.StatusServiceUnavailable}))

		_, err := sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		require.Error(t, err, "step 1: payment answered 503, yet PlaceOrder succeeded")
		if n := labtest.Charges(sys); n != 1 {
			t.Fatalf("step 1: one checkout sent %d charge requests to payment. A timeout is all this lab asks for: "+
				"retrying a charge is lab 03's subject, and it is only safe with an idempotency key (lab 08).", n)
		}
	})
}

func TestStep2BlackHoledPaymentFailsAtConnect(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		const connectBound = time.Second            // the connect must end before this...
		const connectFloor = 100 * time.Millisecond // ...but not absurdly early
		sys := start(t, budget, 10)
		require.NoError(t, sys.Faults.Set("payment", "", faults.Fault{Connect: memnet.BlackHoled}))

		// The caller of the order service gives up after a minute at most.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		began := time.Now()
		_, err := sys.Orders().PlaceOrder(ctx, "alice", pizza)
		took := time.Since(began)

		require.Error(t, err, "step 2: payment's host is unreachable, yet PlaceOrder succeeded")
		if took < connectFloor {
			t.Fatalf("step 2: the connect to payment's black-holed host gave up after only %v. A connect timeout that short "+
				"would also cut off healthy connects on a real network (a handshake across a busy data centre, a full "+
				"accept queue): choose a few hundred milliseconds (check the unit: memnet.Dialer.Timeout is a time.Duration).", took)
		}
		if took >= connectBound {
			t.Fatalf("step 2: payment's host was black-holed (connects never complete); PlaceOrder took %v and failed with %q.\n"+
				"A healthy server accepts a connection almost at once: a connect timeout of a few hundred milliseconds "+
				"must end this well before the %v request budget, within %v.", took, err, budget, connectBound)
		}
		assert.ErrorIs(t, err, fooddelivery.ErrTimeout, "step 2: a connect that timed out is a timeout")
	})
}

func TestStep3TimeoutFromMeasuredLatencies(t *testing.T) {
	cases := []struct {
		name    string
		samples []time.Duration
		rate    float64
	}{
		{"1% of 1000 samples", latencies(1, 1000), 0.01},
		{"0.1% of 1000 samples", latencies(2, 1000), 0.001},
		{"5% of 1000 samples", latencies(3, 1000), 0.05},
		{"10% of 20 samples", latencies(4, 20), 0.10},
		{"1% of 150 samples", latencies(7, 150), 0.01},
		{"10% of 25 samples", latencies(8, 25), 0.10},
		{"all samples equal", slices.Repeat([]time.Duration{80 * time.Millisecond}, 50), 0.01},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
				given := slices.Clone(c.samples)
				got, err := timeouts.TimeoutFromLatencies(given, c.rate)
				if err != nil {
					t.Fatalf("step 3: TimeoutFromLatencies(%d samples, %v) failed: %v", len(c.samples), c.rate, err)
				}
				if i := firstDifference(c.samples, given); i >= 0 {
					t.Errorf("step 3: TimeoutFromLatencies changed the caller's samples (sample %d was %v, now %v): "+
						"sort a copy, not the caller's slice", i, c.samples[i], given[i])
				}

				allowed := math.Floor(c.rate*float64(len(c.samples)) + 1e-9) // samples allowed above the timeout
				above, atOrAbove := exceeding(c.samples, got)
				if float64(above) > allowed {
					t.Errorf("step 3: with a timeout of %v, %d of %d measured requests would have timed out; "+
						"a false-timeout rate of %v allows at most %.1f. Pick a higher percentile.", got, above, len(c.samples), c.rate, allowed)
				}
				if float64(atOrAbove) <= allowed {
					t.Errorf("step 3: a timeout of %v is longer than needed: only %d of %d samples reach it, and %v allows %.1f "+
						"to time out. The timeout is the smallest sample that at most %.1f samples exceed.",
						got, atOrAbove, len(c.samples), c.rate, allowed, allowed)
				}
			})
		})
	}
}

func TestStep3RejectsBadInput(t *testing.T) {
	ok := latencies(5, 10)
	cases := []struct {
		name    string
		samples []time.Duration
		rate    float64
	}{
		{"no samples", nil, 0.01},
		{"zero rate", ok, 0},
		{"rate of one", ok, 1},
		{"negative rate", ok, -0.1},
		{"rate is not a number", ok, math.NaN()},
		{"negative sample", []time.Duration{10 * time.Millisecond, -time.Millisecond}, 0.01},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
				got, err := timeouts.TimeoutFromLatencies(c.samples, c.rate)
				assert.Error(t, err, "step 3: TimeoutFromLatencies(%v, %v) returned %v; bad input must be an error, not a guess", c.samples, c.rate, got)
			})
		})
	}
}

func TestStep3OrdinarySlowPaymentsSucceed(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		samples := latencies(6, 1000)
		timeout, err := timeouts.TimeoutFromLatencies(samples, 0.01)
		if err != nil {
			t.Fatalf("step 3: TimeoutFromLatencies(1000 samples, 1%%) failed: %v", err)
		}
		sorted := slices.Sorted(slices.Values(samples))
		ordinary := sorted[900] // the 90th percentile: slow, but normal

		sys := start(t, timeout, 10)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Latency: ordinary}))
		_, err = sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		require.NoError(t, err, "step 3: payment took %v, the 90th percentile of its measured latency, and the timeout derived "+
			"for a 1%% false-timeout rate is %v, yet the order failed", ordinary, timeout)

		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Latency: 3 * sorted[len(sorted)-1]}))
		began := time.Now()
		_, err = sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		took := time.Since(began)
		if err == nil || took > timeout+slack {
			t.Fatalf("step 3: payment took %v, slower than any measured request; PlaceOrder waited %v (error: %v), "+
				"but the derived timeout is %v. NewPaymentClient must use the timeout it is given, not a constant of its own.",
				3*sorted[len(sorted)-1], took, err, timeout)
		}
	})
}

func TestStep4SlowBodyIsCutOff(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4, Stuck: "PlaceOrder was still reading a trickling payment response"}, func(t *testing.T) {
		const trickle = time.Minute
		sys := start(t, budget, 10)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{SlowBody: trickle}))

		began := time.Now()
		_, err := sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		took := time.Since(began)
		if took <= budget+slack && err != nil && !errors.Is(err, fooddelivery.ErrTimeout) {
			t.Fatalf("step 4: payment sent its headers at once, then trickled the body over %v; PlaceOrder failed after %v "+
				"with %q, which is not a timeout. Is a context cancelled before the body is read (a deferred cancel() "+
				"inside RoundTrip)?", trickle, took, err)
		}
		if took > budget+slack || !errors.Is(err, fooddelivery.ErrTimeout) {
			outcome := "and succeeded"
			if err != nil {
				outcome = fmt.Sprintf("and failed with %q", err)
			}
			t.Fatalf("step 4: payment sent its headers at once, then trickled the body over %v; PlaceOrder took %v %s.\n"+
				"A timeout that stops at the response headers does not cover the body: the whole call, reading the body "+
				"included, must end within the %v budget as a timeout.", trickle, took, outcome, budget)
		}
	})
}

func TestStep4TimelyBodyIsRead(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		const trickle = time.Second
		sys := start(t, budget, 10)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{SlowBody: trickle}))

		placed, err := sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		require.NoError(t, err, "step 4: payment's body took %v to arrive, within the %v budget, yet the order failed. "+
			"Is a context cancelled before the body is read (a deferred cancel() inside RoundTrip)? "+
			"The timeout must cover the body, not cut it short.", trickle, budget)
		assert.Equal(t, 1, sys.Ledger.ChargesFor(placed.ID), "step 4: the order is charged exactly once")
	})
}
