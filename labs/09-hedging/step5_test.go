package hedging_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/system"
	hedging "github.com/gophereats/resilience/labs/09-hedging"
)

func TestStep5WinnersBodyStaysReadable(t *testing.T) {
	const trickle = 200 * time.Millisecond
	cases := []struct {
		name   string
		winner string
		rules  map[string]faults.Fault
	}{
		{"the hedge wins", "menu-2", map[string]faults.Fault{
			"menu-1": {Latency: stall},
			"menu-2": {SlowBody: trickle},
		}},
		{"the first attempt wins", "menu-1", map[string]faults.Fault{
			"menu-1": {SlowBody: trickle},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 5, Leak: leak}, func(t *testing.T) {
				sys := labtest.StartSystem(t, system.Config{})
				for replica, f := range c.rules {
					require.NoError(t, sys.Faults.Set(replica, "", f), "step 5: setting up the faults")
				}
				s, hc := hedged(t, sys, &hedging.Hedger{Delay: hedgeAfter})

				began := time.Now()
				m, err := menuAt(hc, "menu-1").Menu(context.Background(), system.SampleRestaurant)
				took := time.Since(began)
				if err != nil {
					t.Fatalf("step 5: %s sent its headers first and then its body over %v; reading the body failed "+
						"after %v: %v (requests sent to: %s).\nThe winner's body is read after RoundTrip returns: "+
						"cancelling the loser must not cancel the winner (one context per attempt), and the winner's "+
						"context may only be cancelled when its body is closed.", c.winner, trickle, took, err, s.Hosts())
				}
				require.NotEmpty(t, m.Dishes, "step 5: the menu came back without dishes")
				if took > hedgeAfter+trickle+slack {
					t.Fatalf("step 5: %s answered first (its body took %v), yet the read took %v, requests sent to: %s. "+
						"Hedge a stalled read after %v (step 1).", c.winner, trickle, took, s.Hosts(), hedgeAfter)
				}
			})
		})
	}
}
