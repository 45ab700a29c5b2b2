// Package gameday is lab 10, the game day: the plan that says which
// pattern runs at each integration point of the food-delivery system, and
// with which settings. Edit Plan; the README gives the SLOs each stage is
// judged by and the kinds of incident it plays.
package gameday

import (
	"time"

	"github.com/gophereats/resilience/fooddelivery/plan"
)

// Plan returns the team's plan for the game day. This one was written in
// a hurry the night before; go doc ./fooddelivery/plan says what every
// field means and what its zero value does.
func Plan() plan.Plan {
	return plan.Plan{
		Payment: plan.Payment{
			// TODO(step 2): a hung payment holds every checkout this long.
			Timeout: 10 * time.Second,
			// TODO(step 3): three tries at every layer, to be safe.
			Retries: plan.Retries{Attempts: 3, EveryLayer: true},
			// TODO(step 3): no breaker: payment is never down for long.
			Breaker: nil,
		},
		Deadlines: nil,
		Gateway: plan.Gateway{
			// TODO(step 1): small compartments, so nothing can take the gateway.
			Compartments: &plan.Compartments{Orders: 5, Menu: 5, Courier: 5},
			Fallbacks:    true,
			// TODO(step 7): never lose an order to an auth blip.
			AuthFailOpen: true,
			// TODO(step 6): hedge everything early: it is always faster.
			Hedge: &plan.Hedge{Window: 100, Percentile: 0.5, FirstDelay: 10 * time.Millisecond, Ratio: 1, Burst: 1000},
		},
		// TODO(step 4): keys are for later.
		IdempotencyKeys: false,
	}
}
