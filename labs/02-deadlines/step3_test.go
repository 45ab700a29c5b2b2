package deadlines_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
)

func TestStep3CallerWhoHangsUpStopsTheCheckout(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		const menuTakes, userLeaves = 3 * time.Second, 500 * time.Millisecond
		sys := start(t, nil)
		require.NoError(t, sys.Faults.Set("menu", "GET /restaurants/{id}/menu", faults.Fault{Latency: menuTakes}))

		ctx, cancel := context.WithTimeout(context.Background(), own)
		defer cancel()
		time.AfterFunc(userLeaves, cancel) // the user closes the app
		got := checkoutAbandoned(t, sys, gateway(t, sys), ctx)
		if got.wasted > 10*time.Millisecond || got.startedAfter > 0 || got.charges > 0 {
			t.Fatalf("step 3: the caller hung up %v into the checkout while the menu service took %v; the order service then "+
				"spent %v more on calls nobody waited for, started %d call(s) after the caller left, and executed %d charge(s).\n"+
				"When the caller goes, its work must stop: derive the request's deadline from r.Context() (net/http cancels it "+
				"when the caller hangs up), and send every outgoing request with the context it was given.",
				userLeaves, menuTakes, got.wasted, got.startedAfter, got.charges)
		}
	})
}

func TestStep3CallerWithoutBudgetWhoHangsUp(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		const menuTakes, userLeaves = 3 * time.Second, 500 * time.Millisecond
		sys := start(t, nil)
		require.NoError(t, sys.Faults.Set("menu", "GET /restaurants/{id}/menu", faults.Fault{Latency: menuTakes}))

		// A caller without your Transport and without a deadline: it sends
		// no budget, and hangs up.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(userLeaves, cancel)
		got := checkoutAbandoned(t, sys, gatewayWith(t, sys, nil, nil), ctx)
		if got.wasted > 10*time.Millisecond || got.startedAfter > 0 || got.charges > 0 {
			t.Fatalf("step 3: a caller that sends no budget hung up %v into the checkout while the menu service took %v; "+
				"the order service then spent %v more on calls nobody waited for, started %d call(s) after the caller left, "+
				"and executed %d charge(s).\nWithout a header the order service uses its own %v, but the request is still "+
				"its caller's: derive that deadline from r.Context() too, never from context.WithoutCancel.",
				userLeaves, menuTakes, got.wasted, got.startedAfter, got.charges, own)
		}
	})
}

func TestStep3ExpiredBudgetStopsTheCheckout(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		const menuTakes = 5 * time.Second
		sys := start(t, nil)
		require.NoError(t, sys.Faults.Set("menu", "GET /restaurants/{id}/menu", faults.Fault{Latency: menuTakes}))

		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		got := checkoutAbandoned(t, sys, gateway(t, sys), ctx)
		if got.wasted > 10*time.Millisecond || got.startedAfter > 0 || got.charges > 0 || got.payments > 0 {
			t.Fatalf("step 3: the gateway gave up after its %v budget while the menu service took %v; the order service then "+
				"spent %v more on calls nobody waited for, started %d call(s) after the gateway left, and executed %d charge(s) "+
				"for an order the user was told had failed.\nThe budget the gateway sent must end the order service's work "+
				"before the gateway gives up.", budget, menuTakes, got.wasted, got.startedAfter, got.charges)
		}
	})
}
