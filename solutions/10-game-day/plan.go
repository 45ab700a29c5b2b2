// Package gameday is the reference solution of lab 10: the plan for the
// game day. NOTES.md says why each setting is what it is and what the
// score card measured.
package gameday

import (
	"time"

	"github.com/gophereats/resilience/fooddelivery/plan"
)

// Plan returns the game-day plan: every pattern on, each sized from the
// platform's capacity and latencies as the lab's README states them.
func Plan() plan.Plan {
	return plan.Plan{
		Payment: plan.Payment{
			// Above payment's 700 ms tail and its slow days (up to 750
			// ms), so a slow success is not cut; short enough that a hung
			// charge leaves time for a retry in the gateway's 2 s.
			Timeout: 1 * time.Second,
			// Only the layer next to payment retries, within a budget;
			// the first retry drawn from 0-200 ms, the second from 0-400
			// ms (full jitter), so most retries land after a 100-200 ms
			// failover instead of inside it.
			Retries: plan.Retries{
				Attempts:  3,
				BaseDelay: 200 * time.Millisecond,
				MaxDelay:  500 * time.Millisecond,
				Budget:    &plan.RetryBudget{Ratio: 0.2, MinPerSecond: 1, Max: 10},
			},
			// Half of the last 20 charges, judged from 10; open for less
			// than an outage lasts, so checkouts come back soon after it.
			Breaker: &plan.Breaker{Window: 20, FailureRate: 0.5, MinCalls: 10, OpenFor: 3 * time.Second, HalfOpenCalls: 1},
		},
		Deadlines: &plan.Deadlines{OwnBudget: 3 * time.Second, Need: 250 * time.Millisecond, Hop: 50 * time.Millisecond},
		Gateway: plan.Gateway{
			// Orders: fewer slots than the gateway has (30), so hung
			// checkouts leave room for browsing; menus and estimates sized
			// from a rush's concurrency with room to spare.
			Compartments: &plan.Compartments{Orders: 15, Menu: 30, Courier: 15},
			Fallbacks:    true,
			AuthFailOpen: false,
			// After the p95 of the last 500 reads, at most 10% more reads.
			Hedge: &plan.Hedge{Window: 500, Percentile: 0.95, FirstDelay: 100 * time.Millisecond, Ratio: 0.1, Burst: 10},
		},
		IdempotencyKeys: true,
	}
}
