package main

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	gameplan "github.com/gophereats/resilience/fooddelivery/plan"
	"github.com/gophereats/resilience/fooddelivery/system"
	"github.com/gophereats/resilience/internal/compose"
)

// These tests start the system on memnet inside a synctest bubble with the
// system.Config that compose.Wire builds, as run wires it: fake time, no
// real sockets.

// quiet keeps the breakers' state-change logs out of the test output.
var quiet = slog.New(slog.DiscardHandler)

// startWired resolves -lab values, wires the plan as run does (on memnet, with
// the default order limit) and starts the system.
func startWired(t *testing.T, flags ...string) (*system.System, *compose.Wiring) {
	t.Helper()
	p, err := resolve(flags, noLearner)
	require.NoError(t, err)
	w := compose.Wire(p.labs(), compose.Settings{Seed: 1, Logger: quiet, Plan: gameplan.Labs(false)})
	sys := labtest.StartSystem(t, w.Cfg)
	return sys, w
}

// placePizza places one order through the gateway as alice and returns it
// (id and status), failing the test on a GraphQL error.
func placePizza(t *testing.T, sys *system.System) (id, status string) {
	t.Helper()
	resp, _, err := sys.GraphQL(context.Background(), system.SampleToken, placeOrder, orderInput())
	require.NoError(t, err)
	require.Empty(t, resp.Errors, "placeOrder answered errors")
	var data struct{ PlaceOrder struct{ ID, Status string } }
	require.NoError(t, resp.Decode(&data))
	return data.PlaceOrder.ID, data.PlaceOrder.Status
}

func TestEveryLabWiredPlacesAnOrderThroughTheGateway(t *testing.T) {
	for _, all := range []string{"all=off", "all=naive", "all=solution"} {
		t.Run(all, func(t *testing.T) {
			labtest.Run(t, labtest.Options{}, func(t *testing.T) {
				sys, w := startWired(t, all)
				id, status := placePizza(t, sys)
				assert.Equal(t, "PLACED", status)
				assert.Equal(t, 1, sys.Ledger.ChargesFor(id), "the order is charged exactly once")
				if all == "all=off" {
					assert.Nil(t, sys.Dispatch, "off is today's wiring: no dispatch queue")
					return
				}
				require.NotNil(t, sys.Dispatch, "lab 08 runs the courier-dispatch consumer")
				synctest.Wait()
				assert.NotEmpty(t, sys.Dispatch.Fleet.Couriers(id), "the consumer sent a courier for the order")
				if all == "all=solution" {
					assert.NotNil(t, w.GameDay, "lab 07's game-day switch is there for the running system")
				}
			})
		})
	}
}

func TestSolutionsFillThePatternCounters(t *testing.T) {
	t.Run("retries, breaker and checkout fallback while payment answers 503", func(t *testing.T) {
		labtest.Run(t, labtest.Options{}, func(t *testing.T) {
			sys, _ := startWired(t, "all=solution")
			require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Status: http.StatusServiceUnavailable}))
			for range 12 {
				resp, _, err := sys.GraphQL(context.Background(), system.SampleToken, placeOrder, orderInput())
				require.NoError(t, err)
				require.NotNil(t, resp.ErrorAt("placeOrder"), "payment is down: the checkout fails")
				time.Sleep(100 * time.Millisecond)
			}
			pay, orders := sys.Metrics.Edge("order", "payment"), sys.Metrics.Edge("gateway", "order")
			assert.Positive(t, pay.Retries.Load(), "lab 04's loop retried")
			assert.Positive(t, pay.BreakerTransitions.Load(), "lab 05's payment breaker opened")
			assert.Positive(t, orders.BreakerTransitions.Load(), "lab 05's breaker on POST /orders opened")
			assert.Positive(t, orders.BreakerOpen.Load(), "the open breaker refused checkouts")
			assert.Positive(t, orders.Fallbacks.Load(), "lab 07 answered the failed checkouts")
		})
	})

	t.Run("replays of a charge whose answer was lost", func(t *testing.T) {
		labtest.Run(t, labtest.Options{}, func(t *testing.T) {
			sys, _ := startWired(t, "all=solution")
			require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{LoseResponse: true, Probability: 0.5}))
			for range 6 {
				sys.GraphQL(context.Background(), system.SampleToken, placeOrder, orderInput())
			}
			assert.Positive(t, sys.Metrics.Edge("order", "payment").Replays.Load(), "lab 08's key store replayed a charge")
		})
	})

	t.Run("hedges around a slow menu replica", func(t *testing.T) {
		labtest.Run(t, labtest.Options{}, func(t *testing.T) {
			sys, _ := startWired(t, "09=solution")
			read := func() {
				_, _, err := sys.GraphQL(context.Background(), "", `{ restaurant(id: "luigis") { menu { name } } }`, nil)
				require.NoError(t, err)
			}
			// Healthy reads take 10-20ms: the tracker learns their p95 and
			// the budget saves up hedges (10% of the reads).
			for _, replica := range []string{"menu-1", "menu-2", "menu-3"} {
				require.NoError(t, sys.Faults.Set(replica, "", faults.Fault{Latency: 10 * time.Millisecond, Jitter: 10 * time.Millisecond}))
			}
			for range 40 {
				read()
			}
			require.NoError(t, sys.Faults.Set("menu-1", "", faults.Fault{Latency: time.Second}))
			for range 6 {
				read()
			}
			menu := sys.Metrics.Edge("gateway", "menu")
			assert.Positive(t, menu.Hedges.Load(), "reads stuck on menu-1 were hedged")
			assert.Positive(t, menu.HedgesWon.Load(), "the hedges answered first")
			assert.Greater(t, menu.Attempts.Load(), menu.Hedges.Load(), "attempts count the first reads too")
		})
	})

	t.Run("a full compartment and default ETAs while the courier hangs", func(t *testing.T) {
		labtest.Run(t, labtest.Options{}, func(t *testing.T) {
			sys, _ := startWired(t, "06=solution", "07=solution")
			require.NoError(t, sys.Faults.Set("courier", "GET /eta/{restaurantId}", faults.Fault{Hang: time.Minute}))
			var wg sync.WaitGroup
			for range 2 * gameplan.Labs(false).Gateway.Compartments.Courier {
				wg.Go(func() {
					_, _, err := sys.GraphQL(context.Background(), "", `{ restaurant(id: "luigis") { eta } }`, nil)
					assert.NoError(t, err)
				})
				// One request at a time reaches the hung courier call (its
				// menu read done, so the menu compartment never decides),
				// at the same fake instant: the slots fill, then refuse.
				synctest.Wait()
			}
			wg.Wait()
			courier := sys.Metrics.Edge("gateway", "courier")
			assert.Positive(t, courier.BulkheadFull.Load(), "lab 06's courier compartment refused the calls beyond its slots")
			assert.Positive(t, courier.Fallbacks.Load(), "lab 07 served default ETAs")
		})
	})

	t.Run("lab 03's transport counts its retries of keyed charges", func(t *testing.T) {
		labtest.Run(t, labtest.Options{}, func(t *testing.T) {
			sys, _ := startWired(t, "03=solution", "08=solution")
			require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Status: http.StatusServiceUnavailable}))
			sys.GraphQL(context.Background(), system.SampleToken, placeOrder, orderInput())
			pay := sys.Metrics.Edge("order", "payment")
			assert.Equal(t, int64(3), pay.Attempts.Load(), "one charge, three attempts: the first counted once")
			assert.Equal(t, int64(2), pay.Retries.Load())
		})
	})
}

// Each cause is counted once, on the edge where it happened: lab 01's
// timeout on order->payment, not on gateway->order, which got the order
// service's answer; lab 05's open breaker in BreakerOpen of the edge it
// guards; lab 04's budget in BudgetSpent.
func TestCausesAreCountedWhereTheyHappen(t *testing.T) {
	t.Run("lab 01 while payment hangs", func(t *testing.T) {
		labtest.Run(t, labtest.Options{}, func(t *testing.T) {
			sys, _ := startWired(t, "01=solution")
			require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Hang: 30 * time.Second}))
			for range 3 {
				resp, _, err := sys.GraphQL(context.Background(), system.SampleToken, placeOrder, orderInput())
				require.NoError(t, err)
				require.NotNil(t, resp.ErrorAt("placeOrder"), "payment hangs: the checkout fails")
			}
			pay, orders := sys.Metrics.Edge("order", "payment"), sys.Metrics.Edge("gateway", "order")
			assert.Equal(t, int64(3), pay.Timeouts.Load(), "order->payment: the payment client gave up on each of the 3 charges at its 2 s timeout")
			assert.Zero(t, orders.Timeouts.Load(), "gateway->order: the order service answered (504), so no timeout of the gateway's")
			assert.Zero(t, pay.BreakerOpen.Load()+pay.BulkheadFull.Load()+pay.BudgetSpent.Load(), "no other cause")
		})
	})
	t.Run("lab 01 under lab 04's naive retries at every layer while payment hangs", func(t *testing.T) {
		labtest.Run(t, labtest.Options{}, func(t *testing.T) {
			sys, _ := startWired(t, "01=solution", "04=naive")
			require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Hang: 30 * time.Second}))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a customer's patience
			defer cancel()
			_, _, err := sys.GraphQL(ctx, system.SampleToken, placeOrder, orderInput())
			t.Logf("the checkout ended with %v", err)
			pay := sys.Metrics.Edge("order", "payment")
			assert.GreaterOrEqual(t, pay.Timeouts.Load(), int64(4),
				"in 10 s each of the stacked attempts that lab 01's client cut off at 2 s counts, though the customer gave up before the last")
		})
	})
	t.Run("lab 07 while auth hangs", func(t *testing.T) {
		labtest.Run(t, labtest.Options{}, func(t *testing.T) {
			sys, _ := startWired(t, "07=solution")
			require.NoError(t, sys.Faults.Set("auth", "", faults.Fault{Hang: 30 * time.Second}))
			resp, _, err := sys.GraphQL(context.Background(), system.SampleToken, placeOrder, orderInput())
			require.NoError(t, err)
			require.NotNil(t, resp.ErrorAt("placeOrder"), "auth hangs: the gateway denies (fail closed)")
			assert.Equal(t, int64(1), sys.Metrics.Edge("gateway", "auth").Timeouts.Load(), "the auth check lab 07 cut off counts on gateway->auth")
		})
	})
	t.Run("every solution while payment answers 503", func(t *testing.T) {
		labtest.Run(t, labtest.Options{}, func(t *testing.T) {
			sys, _ := startWired(t, "all=solution")
			require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Status: http.StatusServiceUnavailable}))
			for range 40 {
				_, _, err := sys.GraphQL(context.Background(), system.SampleToken, placeOrder, orderInput())
				require.NoError(t, err)
				time.Sleep(100 * time.Millisecond)
			}
			pay, orders := sys.Metrics.Edge("order", "payment"), sys.Metrics.Edge("gateway", "order")
			t.Logf("order->payment: %d refused by its breaker, %d retries withheld; gateway->order: %d refused by its breaker",
				pay.BreakerOpen.Load(), pay.BudgetSpent.Load(), orders.BreakerOpen.Load())
			assert.Positive(t, orders.BreakerOpen.Load(), "the gateway's breaker on POST /orders refused checkouts")
			assert.Positive(t, pay.BudgetSpent.Load(), "lab 04's budget (10%% + 1 a second) withheld retries of 40 failing checkouts in 4 s")
			assert.Zero(t, pay.Timeouts.Load(), "payment answered at once: no timeouts")
		})
	})
}
