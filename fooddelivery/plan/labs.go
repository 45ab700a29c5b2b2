package plan

import "time"

// Labs returns the settings every lab's README teaches, all at once: what
// -lab NN=solution (and learner) runs at lab NN's integration point. Each
// field's comment names its lab and the source of its figure. fast
// shortens what makes a live demo wait: the breakers' open period is 3 s
// instead of 30 s.
func Labs(fast bool) Plan {
	openFor := 30 * time.Second // lab 05: Envoy's base ejection time
	if fast {
		openFor = 3 * time.Second
	}
	breaker := Breaker{Window: 20, MinCalls: 10, OpenFor: openFor, HalfOpenCalls: 1} // lab 05: half of the last 20 calls
	ordersBreaker := breaker
	return Plan{
		Payment: Payment{
			Timeout: 2 * time.Second, // lab 01: one payment call, connect included
			Retries: Retries{
				Attempts:  3,                      // lab 03: gRPC's and the AWS SDKs' order of magnitude
				BaseDelay: 100 * time.Millisecond, // lab 03
				MaxDelay:  2 * time.Second,        // lab 03
				// lab 04: the SRE book's 10%, a minimum sized for a quiet
				// client, 2 retries saved.
				Budget: &RetryBudget{Ratio: 0.1, MinPerSecond: 1, Max: 2},
			},
			Breaker: &breaker,
		},
		Deadlines: &Deadlines{
			OwnBudget: 10 * time.Second,       // lab 02: the order service's own budget
			Need:      250 * time.Millisecond, // lab 02: the least a checkout needs to start
			Hop:       50 * time.Millisecond,  // lab 02: one network hop
		},
		Gateway: Gateway{
			Limit:         30,                                               // lab 06: the dinner rush's gateway
			Compartments:  &Compartments{Orders: 10, Menu: 10, Courier: 10}, // lab 06, no wait
			OrdersBreaker: &ordersBreaker,
			Fallbacks:     true, // lab 07
			// lab 09: the p95 of the last 2000 reads, 200 ms before any,
			// 10% budget, 100 saved up for a stall.
			Hedge: &Hedge{Window: 2000, Percentile: 0.95, FirstDelay: 200 * time.Millisecond, Ratio: 0.1, Burst: 100},
		},
		IdempotencyKeys: true, // lab 08: a key per order, kept 24 h
	}
}
