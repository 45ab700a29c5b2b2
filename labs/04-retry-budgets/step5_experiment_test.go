package retrybudgets_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/retry"
	"github.com/gophereats/resilience/fooddelivery/system"
	retrybudgets "github.com/gophereats/resilience/labs/04-retry-budgets"
)

// The experiment: steady user traffic through the gateway while payment
// answers every charge with HTTP 503 (not connection resets, which Go's
// transport may replay on its own), with no deadline propagation, so inner
// retries are never cut short. Then payment recovers, with a bounded
// capacity, while the traffic goes on.
const (
	expEvery    = 100 * time.Millisecond // one tap every 100ms: 10 user actions a second
	expActions  = 30                     // taps measured while payment is down
	expStorm    = 3 * time.Second        // payment still down before it recovers (phase 2)
	expAfter    = 4 * time.Second        // taps after the recovery
	expCapacity = 2                      // charges payment handles at once once recovered
	expCharge   = 150 * time.Millisecond // a healthy charge: capacity 13 charges a second, 1.3x the traffic
	expPoll     = 50 * time.Millisecond  // how often the experiment looks at payment's counters

	// The budget of the layer next to payment: 10% of requests (SRE book),
	// a small minimum of 1 retry a second (Finagle's is 10 a second, sized
	// for busier clients), and at most 2 retries saved up.
	expRatio        = 0.1
	expMinPerSecond = 1.0
	expSaved        = 2.0
)

// budgetBound is the most payment calls per action the budget allows while
// payment is down: 1 first attempt + 10% + (the minimum over the outage +
// what was saved up) spread over its actions.
func budgetBound() float64 {
	outage := (expActions * expEvery).Seconds()
	return 1 + expRatio + (expMinPerSecond*outage+expSaved)/expActions
}

type variant struct {
	name   string
	target string
	layers func() retry.Layers
}

type outcome struct {
	perAction  float64       // payment calls per user action while payment was down
	overloaded time.Duration // from the recovery to payment's last rejected call
	rejected   int64         // calls payment turned away after the recovery
	failed     int64         // taps after the recovery that failed
}

// taps sends one checkout every expEvery for d through the gateway and
// waits for them all; it counts the failures.
func taps(t *testing.T, sys *system.System, d time.Duration) (n, failed int64) {
	var wg sync.WaitGroup
	var bad atomic.Int64
	for began := time.Now(); time.Since(began) < d; n++ {
		wg.Go(func() {
			if !tap(t, sys) {
				bad.Add(1)
			}
		})
		time.Sleep(expEvery)
	}
	wg.Wait()
	return n, bad.Load()
}

func runVariant(t *testing.T, v variant) outcome {
	var out outcome
	sys := labtest.StartSystem(t, system.Config{Seed: 4, Limits: map[string]int{"payment": expCapacity}, Retries: v.layers()})
	charges := sys.Metrics.Route("payment", "POST /charges")
	if err := sys.Faults.Set("payment", "POST /charges", paymentDown); err != nil {
		t.Fatalf("step 5: setting up the fault: %v", err)
	}

	// Phase 1: payment down, count what reaches it per user action.
	n, _ := taps(t, sys, expActions*expEvery)
	out.perAction = float64(charges.Received.Load()) / float64(n)

	// Phase 2: payment down for expStorm while traffic goes on, then
	// recovered (with its capacity) while traffic still goes on.
	var wg sync.WaitGroup
	wg.Go(func() { taps(t, sys, expStorm) })
	time.Sleep(expStorm)
	if err := sys.Faults.Set("payment", "POST /charges", faults.Fault{Latency: expCharge}); err != nil {
		t.Fatalf("step 5: recovering payment: %v", err)
	}
	fixed, before := time.Now(), charges.Rejected.Load()
	done := make(chan struct{})
	var last atomic.Int64
	wg.Go(func() {
		seen := before
		for {
			select {
			case <-done:
				return
			case <-time.After(expPoll):
			}
			if r := charges.Rejected.Load(); r > seen {
				seen = r
				last.Store(int64(time.Since(fixed)))
			}
		}
	})
	_, out.failed = taps(t, sys, expAfter)
	close(done)
	wg.Wait()
	out.overloaded = time.Duration(last.Load())
	out.rejected = charges.Rejected.Load() - before
	return out
}

func TestStep5Experiment(t *testing.T) {
	variants := []variant{
		{"three retrying layers", "27", func() retry.Layers { return retry.NaiveLayers(4) }},
		{"one retrying layer", "3", func() retry.Layers {
			return retry.Layers{PaymentClient: retry.Policy{Retryable: retry.RetryEveryFailure, Seed: 4}}
		}},
		{"yours: one layer, budget", "", func() retry.Layers {
			return retrybudgets.Layers(retrybudgets.NewRetryBudget(expRatio, expMinPerSecond, expSaved))
		}},
	}
	bound := budgetBound()
	variants[2].target = fmt.Sprintf("<= %.2f", bound)
	results := make([]outcome, len(variants))
	labtest.Run(t, labtest.Options{Step: 5, Watchdog: 10 * time.Minute, Stuck: "checkouts were still being retried"}, func(t *testing.T) {
		for i, v := range variants {
			results[i] = runVariant(t, v)
		}
	})

	t.Logf("step 5: payment answers 503 to every charge; one tap every %v through gateway -> order -> payment; "+
		"%d taps measured; then payment recovers (%d charges at once, %v each) with taps going on",
		expEvery, expActions, expCapacity, expCharge)
	t.Logf("%-26s %18s %10s  %15s %12s %12s", "retries", "payment calls/tap", "(target)", "overloaded for", "turned away", "taps failed")
	for i, v := range variants {
		r := results[i]
		t.Logf("%-26s %18.2f %10s  %15v %12d %12d", v.name, r.perAction, "("+v.target+")", r.overloaded, r.rejected, r.failed)
	}
	t.Logf("after the recovery: overloaded for = until payment's last refusal, turned away = calls it refused, taps failed = taps that still failed")
	t.Logf("budget: %.0f%% of requests + %v retry/s minimum + %v saved; at %d taps/s over %v that is 1 + %.2f + %.2f = %.2f calls per tap",
		100*expRatio, expMinPerSecond, expSaved, int(time.Second/expEvery), expActions*expEvery,
		expRatio, bound-1-expRatio, bound)

	naive, one, yours := results[0], results[1], results[2]
	if naive.perAction < 26 || naive.perAction > 27.5 || one.perAction < 2.9 || one.perAction > 3.1 {
		t.Errorf("step 5: the naive variants measured %.2f and %.2f payment calls per tap; expected 27 and 3. "+
			"Did the system or the fault change?", naive.perAction, one.perAction)
	}
	if yours.perAction > bound+0.02 {
		t.Errorf("step 5: with your layers %.2f payment calls per tap reached the downed payment service; "+
			"a 10%% budget with its minimum allows at most %.2f. Finish steps 1 and 2 first (one retrying layer, under the budget).", yours.perAction, bound)
	}
	if yours.rejected > 0 {
		t.Errorf("step 5: with your layers the recovered payment service still turned away %d calls (last %v after it "+
			"recovered); at this traffic a single retrying layer leaves it nothing to reject. Finish step 1 first (retry at the payment client only).",
			yours.rejected, yours.overloaded)
	}
}
