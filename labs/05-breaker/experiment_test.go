package breaker_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/system"
	breaker "github.com/gophereats/resilience/labs/05-breaker"
)

// The outage: payment accepts charges and never answers for a minute, then
// recovers. Orders keep coming at a steady rate; the order service gives
// up on each payment after paymentTimeout.
const (
	expEvery  = 250 * time.Millisecond // one order every 250ms
	expBefore = 6 * time.Second        // healthy, before the outage: fills the window
	expOutage = 60 * time.Second       // payment hangs
	expAfter  = 32 * time.Second       // healthy again: longer than one open period
)

// expSettings is the breaker the experiment measures: half of the last 20
// calls, at least 10 calls, 30 s open, one trial.
func expSettings(rec *transitions) breaker.Settings {
	s := window()
	s.Name = "order->payment"
	s.SlowCall = time.Second
	s.Logger = quiet
	s.OnStateChange = rec.record
	return s
}

type outageResult struct {
	duringOutage  int64           // charge requests that reached payment while it was down
	failed        []time.Duration // latency of each order that failed during the outage, sorted
	recovery      time.Duration   // from the end of the outage to the first successful order's answer
	recovered     bool            // some order succeeded after the outage
	transitions   int64           // breaker state changes (EdgeStats.BreakerTransitions)
	ordersOffered int
}

func (r outageResult) percentile(p float64) time.Duration {
	if len(r.failed) == 0 {
		return 0
	}
	return r.failed[min(len(r.failed)-1, int(p*float64(len(r.failed))))]
}

// runOutage offers one order every expEvery through the outage, with the
// order service's payment client guarded by a breaker built from s (nil:
// no breaker).
func runOutage(t *testing.T, s *breaker.Settings, rec *transitions) outageResult {
	cfg := system.Config{Seed: 5, PaymentClient: paymentHTTP}
	if s != nil {
		cb := breaker.New(*s)
		cfg.PaymentBreaker = func(p fooddelivery.Payer) fooddelivery.Payer { return breaker.Payer{Breaker: cb, Next: p} }
	}
	sys := labtest.StartSystem(t, cfg)
	if rec != nil {
		rec.mu.Lock()
		rec.edge = sys.Metrics.Edge("order", "payment")
		rec.mu.Unlock()
	}

	var res outageResult
	var mu sync.Mutex
	var wg sync.WaitGroup
	began := time.Now()
	outageStart, outageEnd := began.Add(expBefore), began.Add(expBefore+expOutage)
	var atStart, atEnd int64
	var firstSuccess time.Time
	for phase := 0; time.Since(began) < expBefore+expOutage+expAfter; time.Sleep(expEvery) {
		now := time.Now()
		if phase == 0 && !now.Before(outageStart) {
			phase, atStart = 1, charges(sys)
			if err := sys.Faults.Set("payment", "POST /charges", faults.Fault{Hang: 5 * time.Minute}); err != nil {
				t.Fatalf("step 8: setting up the outage: %v", err)
			}
		}
		if phase == 1 && !now.Before(outageEnd) {
			phase, atEnd = 2, charges(sys)
			sys.Faults.Clear("payment", "POST /charges")
		}
		res.ordersOffered++
		inOutage, afterOutage := phase == 1, phase == 2
		wg.Go(func() {
			err, took := place(sys)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && inOutage:
				res.failed = append(res.failed, took)
			case err == nil && afterOutage && firstSuccess.IsZero():
				firstSuccess = time.Now()
			}
		})
	}
	wg.Wait()
	slices.Sort(res.failed)
	res.duringOutage = atEnd - atStart
	if !firstSuccess.IsZero() {
		res.recovered, res.recovery = true, firstSuccess.Sub(outageEnd)
	}
	res.transitions = sys.Metrics.Edge("order", "payment").BreakerTransitions.Load()
	return res
}

func TestStep8Experiment(t *testing.T) {
	var naive, guarded outageResult
	settings := expSettings(&transitions{})
	labtest.Run(t, labtest.Options{Step: 8, Watchdog: 10 * time.Minute}, func(t *testing.T) {
		naive = runOutage(t, nil, nil)
		rec := &transitions{}
		s := expSettings(rec)
		guarded = runOutage(t, &s, rec)
	})
	offered := int64(expOutage / expEvery)
	t.Logf("step 8: payment hangs for %v (the order service gives up after %v); one order every %v; "+
		"breaker: half of the last %d calls, at least %d calls, open for %v",
		expOutage, paymentTimeout, expEvery, settings.Window, settings.MinCalls, openFor)
	t.Logf("%-14s %15s %15s %12s %12s %16s %12s", "", "payment calls", "failed orders", "failed p50", "failed p90", "first success", "breaker")
	t.Logf("%-14s %15s %15s %12s %12s %16s %12s", "", "during outage", "during outage", "latency", "latency", "after recovery", "changes")
	row := func(name string, r outageResult) {
		rec := "never"
		if r.recovered {
			rec = r.recovery.String()
		}
		t.Logf("%-14s %15d %15d %12v %12v %16s %12d", name, r.duringOutage, len(r.failed), r.percentile(0.5), r.percentile(0.9), rec, r.transitions)
	}
	row("no breaker", naive)
	row("your breaker", guarded)
	t.Logf("%-14s %15s %15s %12s %12s %16s", "target", "<= 10% of naive", "", "milliseconds", "", "<= "+openFor.String())

	if naive.duringOutage < offered*9/10 {
		t.Errorf("step 8: without a breaker only %d of the %d charges offered during the outage reached payment; "+
			"expected nearly all. Did the system or the fault change?", naive.duringOutage, offered)
	}
	if limit := naive.duringOutage / 10; guarded.duringOutage > limit {
		t.Errorf("step 8: with your breaker %d charges reached payment during the outage, against %d without; "+
			"the breaker must cut them by at least 90%% (at most %d). Finish steps 1-4 first.",
			guarded.duringOutage, naive.duringOutage, limit)
	}
	if p50 := guarded.percentile(0.5); len(guarded.failed) == 0 || p50 > fast {
		t.Errorf("step 8: with your breaker half of the orders that failed during the outage took %v or more; "+
			"an open breaker answers at once (within %v), instead of after the %v payment timeout", p50, fast, paymentTimeout)
	}
	if !guarded.recovered || guarded.recovery > openFor {
		t.Errorf("step 8: with your breaker the first order after payment recovered succeeded %v after the recovery "+
			"(recovered: %v); a half-open trial must close the breaker within one open period (%v)",
			guarded.recovery, guarded.recovered, openFor)
	}
}
