package gameday

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/plan"
	"github.com/gophereats/resilience/internal/gameday"
)

// The game day's stages, their incidents and their SLOs are in package
// internal/gameday (gameday.Stages); every limit there is the README's.
// Each step plays one stage with your Plan over the stage's seeds, on the
// in-memory network in fake time, and fails with every SLO it missed.

// why says, per measure, what a miss usually means about a plan.
var why = map[gameday.Measure]string{
	gameday.BrowseAvailability:   "browsing failed: something the failing dependency held (a shared pool, the gateway's own slots) was taken from the requests that never touch it",
	gameday.CheckoutAvailability: "checkouts failed that could have succeeded: a setting refuses, gives up or stays open too eagerly, a failure nobody retried, or retries sent so close together that they met the same failure",
	gameday.TrackAvailability:    "order lookups failed while checkouts were in trouble",
	gameday.CheckoutP99:          "customers waited for checkouts that were going to fail: a payment timeout that leaves no room for a retry inside the gateway's 2 s, or something waiting longer than the checkout's budget",
	gameday.BrowseP99:            "a slow replica's stalls reached the customers: nobody answered them from another replica",
	gameday.FallbackShare:        "healthy requests were answered from a fallback: a compartment or a budget refused work the system could do (size compartments by Little's law: concurrency = arrival rate x latency)",
	gameday.CallsPerCheckout:     "the failing payment was called again and again: retries multiplied across layers or without a budget, or a breaker that opens too late (or never) did not stop the calls",
	gameday.Recovery:             "checkouts kept failing after payment had recovered: something kept refusing them (an open period longer than the outage?)",
	gameday.DoubleCharges:        "a charge whose answer was lost was sent again and charged again: a retry without an idempotency key",
	gameday.LetInWithoutAuth:     "requests got in although the auth service could not vouch for them: a security decision must fail closed",
	gameday.ExtraMenuReads:       "hedges doubled the load on replicas that were all slow: hedging too early, or with too large a budget",
	gameday.LateWork:             "the order service and payment went on working for customers who had already left: nothing told them the customer's deadline",
	gameday.OrderSlots:           "the order service's slots were held by calls that were going to fail: a timeout longer than the work needs",
	gameday.PaymentLoad:          "payment saw more charges at once than it can take: retries fired together or without a budget",
	gameday.RetriesPerCharge:     "charges were retried while payment answered every one (a timeout at or below its 700 ms tail), or more often than a budget allows",
}

// playStage plays stage step with Plan() over the stage's seeds and
// fails t with each SLO a seed missed.
func playStage(t *testing.T, step int) {
	t.Helper()
	s := gameday.Stages[step-1]
	p := Plan()
	if err := gameday.CheckPlan(p); err != nil {
		t.Fatalf("step %d: your Plan cannot run: %v", step, err)
	}
	for _, seed := range s.Seeds {
		r, ok := play(t, step, "your plan", p, s, seed)
		if !ok {
			continue
		}
		var missed []string
		for _, v := range gameday.Judge(s, r) {
			if !v.Met {
				missed = append(missed, fmt.Sprintf("  %s: measured %s, the SLO is %s\n    (%s)", v.SLO.Measure, v.Format(), v.SLO, why[v.SLO.Measure]))
			}
		}
		if len(missed) > 0 {
			t.Errorf("step %d, stage %q (%s), seed %d: %d of %d SLOs missed over %d customer requests:\n%s",
				step, s.Name, s.Incident, seed, len(missed), len(s.SLOs), len(r.Requests), strings.Join(missed, "\n"))
		}
	}
}

// play plays stage s with p (whose is "your plan" or another plan's
// name) and seed in a synctest bubble, for the test of step; ok is false
// when the play could not run (t has failed with why).
func play(t *testing.T, step int, whose string, p plan.Plan, s gameday.Stage, seed int64) (r gameday.Result, ok bool) {
	t.Helper()
	// One P: the race detector of Go 1.26 crashes when two threads run
	// timers of one bubble at once; with one P they never do.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	labtest.Run(t, labtest.Options{
		Step:     step,
		Watchdog: s.Length(seed) + 2*time.Minute,
		Stuck:    "the stage's customers or the system were still busy long after the stage's end",
		Leak:     "a request of the customers or of the system outlived the stage",
	}, func(t *testing.T) {
		var err error
		r, err = gameday.Play(p, s, seed)
		if err != nil {
			t.Errorf("step %d, stage %q, seed %d: the stage could not run with %s: %v", step, s.Name, seed, whose, err)
			return
		}
		ok = true
	})
	return r, ok
}

// starterPlan is the plan this lab starts from, as plan.go shipped it, for
// the score card's first column (a test in internal/gameday keeps the two
// the same).
func starterPlan() plan.Plan {
	return plan.Plan{
		Payment: plan.Payment{
			Timeout: 10 * time.Second,
			Retries: plan.Retries{Attempts: 3, EveryLayer: true},
			Breaker: nil,
		},
		Deadlines: nil,
		Gateway: plan.Gateway{
			Compartments: &plan.Compartments{Orders: 5, Menu: 5, Courier: 5},
			Fallbacks:    true,
			AuthFailOpen: true,
			Hedge:        &plan.Hedge{Window: 100, Percentile: 0.5, FirstDelay: 10 * time.Millisecond, Ratio: 1, Burst: 1000},
		},
		IdempotencyKeys: false,
	}
}
