// Package gameday is the reference solution of lab 10: the plan for the
// game day. See NOTES.md for why each setting is what it is.
package gameday

import (
	"time"

	"github.com/gophereats/resilience/fooddelivery/plan"
)

// Plan returns the game-day plan.
func Plan() plan.Plan {
	return plan.Plan{
		Payment: plan.Payment{
			Timeout: 1 * time.Second,
			Retries: plan.Retries{
				Attempts:  3,
				BaseDelay: 50 * time.Millisecond,
				MaxDelay:  500 * time.Millisecond,
				Budget:    &plan.RetryBudget{Ratio: 0.2, MinPerSecond: 1, Max: 10},
			},
			Breaker: &plan.Breaker{Window: 20, FailureRate: 0.5, MinCalls: 10, OpenFor: 3 * time.Second, HalfOpenCalls: 1},
		},
		Deadlines: &plan.Deadlines{OwnBudget: 3 * time.Second, Need: 250 * time.Millisecond, Hop: 50 * time.Millisecond},
		Gateway: plan.Gateway{
			Compartments:  &plan.Compartments{Orders: 15, Menu: 30, Courier: 15},
			OrdersBreaker: nil,
			Fallbacks:     true,
			Hedge:         &plan.Hedge{Window: 500, Percentile: 0.95, FirstDelay: 100 * time.Millisecond, Ratio: 0.1, Burst: 10},
		},
		IdempotencyKeys: true,
	}
}
