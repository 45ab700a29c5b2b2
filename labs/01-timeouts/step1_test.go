package timeouts_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
)

func TestStep1HangingPaymentFailsWithinBudget(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "PlaceOrder was still waiting for the hanging payment service"}, func(t *testing.T) {
		sys := start(t, 1, budget, 10)
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
		sys := start(t, 1, budget, workers)
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
		sys := start(t, 1, budget, 10)
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
		sys := start(t, 1, budget, 10)
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

// TestStep1TimeoutIsTheWholeBudget checks the boundary on both sides: fake
// time is exact, so a payment answering a microsecond before the budget ends
// must succeed and one answering a microsecond after it must time out. Any
// timeout shorter than the budget (95% of it, or the budget less a "safety"
// margin) fails the first case; any longer one fails the second. It does so
// for short budgets too (500ms, 20ms): a floor under the timeout ("never
// less than a second") or a rounding of it stretches a short budget.
func TestStep1TimeoutIsTheWholeBudget(t *testing.T) {
	const edge = time.Microsecond
	for _, budget := range []time.Duration{budget, 500 * time.Millisecond, 20 * time.Millisecond} {
		t.Run(fmt.Sprintf("%v budget, answers just inside it", budget), func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
				sys := start(t, 1, budget, 10)
				require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Latency: budget - edge}))

				began := time.Now()
				_, err := sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
				took := time.Since(began)
				if err != nil && errors.Is(err, fooddelivery.ErrTimeout) {
					t.Fatalf("step 1: payment answered in %v, %v before the %v budget ran out, but PlaceOrder timed out after %v "+
						"(%.2f%% of the budget): %v.\nA timeout shorter than the budget fails every call that answers in its last "+
						"%v, although the caller is still waiting. The timeout is the whole budget you are given, with no margin "+
						"taken off.", budget-edge, edge, budget, took, 100*float64(took)/float64(budget), err, budget-took)
				}
				if err != nil {
					t.Fatalf("step 1: payment answered in %v, inside the %v budget, but PlaceOrder failed after %v with %q, "+
						"which is not a timeout.", budget-edge, budget, took, err)
				}
			})
		})
		t.Run(fmt.Sprintf("%v budget, answers just after it", budget), func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 1, Stuck: "PlaceOrder was still waiting for a payment slower than the budget"}, func(t *testing.T) {
				sys := start(t, 1, budget, 10)
				require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Latency: budget + edge}))

				began := time.Now()
				_, err := sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
				took := time.Since(began)
				if err == nil {
					t.Fatalf("step 1: payment answered in %v, %v after the %v budget ran out, and PlaceOrder waited %v for it and "+
						"succeeded: the client's timeout is longer than the budget (or there is none), so the order service waits "+
						"past the point where its budget is spent. The timeout is the budget, not more, however short the "+
						"budget: no floor, no rounding.", budget+edge, edge, budget, took)
				}
				if took > budget || !errors.Is(err, fooddelivery.ErrTimeout) {
					t.Fatalf("step 1: payment answered only after the %v budget (%v), so PlaceOrder must fail as a timeout at %v; "+
						"it failed after %v with %q (errors.Is(err, fooddelivery.ErrTimeout) = %v).",
						budget, budget+edge, budget, took, err, errors.Is(err, fooddelivery.ErrTimeout))
				}
			})
		})
	}
}

func TestStep1FailedPaymentIsNotRetried(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		sys := start(t, 1, budget, 10)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Status: http.StatusServiceUnavailable}))

		_, err := sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		require.Error(t, err, "step 1: payment answered 503, yet PlaceOrder succeeded")
		if n := labtest.Charges(sys); n != 1 {
			t.Fatalf("step 1: one checkout sent %d charge requests to payment. A timeout is all this lab asks for: "+
				"retrying a charge is lab 03's subject, and it is only safe with an idempotency key (lab 08).", n)
		}
	})
}
