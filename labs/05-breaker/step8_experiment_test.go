package breaker_test

import (
	"context"
	"flag"
	"fmt"
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
	expAfter  = 32 * time.Second       // at most this long after the outage (longer than one default open period)
)

// experimentOpenFor lets you try other open periods:
//
//	go test -v -run Experiment ./labs/05-breaker/ -args -open-for=5s
//
// The pass/fail bands only apply to the default 30s.
var experimentOpenFor = flag.Duration("open-for", openFor, "lab 05 experiment: Settings.OpenFor of your breaker")

// expSettings is the breaker the experiment measures: open when half of
// the last 20 calls failed, once 10 calls were seen; one trial call.
func expSettings(rec *transitions) breaker.Settings {
	s := window()
	s.Name = "order->payment"
	s.OpenFor = *experimentOpenFor
	s.Logger = quiet
	s.OnStateChange = rec.record
	return s
}

// chargeCall is one call the breaker let through to the payment client.
type chargeCall struct {
	start, end time.Time
	failed     bool
	move       int // the breaker's last reported state change when the call started (index in transitions.moves; -1: none)
}

// loggingPayer notes every charge the breaker lets through.
type loggingPayer struct {
	next fooddelivery.Payer
	rec  *transitions // what the breaker reported so far (nil: no breaker)
	mu   *sync.Mutex
	log  *[]chargeCall
}

func (p loggingPayer) Charge(ctx context.Context, req fooddelivery.ChargeRequest) (fooddelivery.Charge, error) {
	start, move := time.Now(), -1
	if p.rec != nil {
		p.rec.mu.Lock()
		move = len(p.rec.moves) - 1
		p.rec.mu.Unlock()
	}
	ch, err := p.next.Charge(ctx, req)
	p.mu.Lock()
	defer p.mu.Unlock()
	*p.log = append(*p.log, chargeCall{start, time.Now(), err != nil, move})
	return ch, err
}

type outageResult struct {
	duringOutage int64           // charge requests that reached payment while it was down
	failed       []time.Duration // latency of each order that failed during the outage, sorted
	recovery     time.Duration   // from the end of the outage to the first successful order's answer
	recovered    bool            // some order succeeded after the outage
	transitions  int64           // breaker state changes (EdgeStats.BreakerTransitions)
	openedAfter  int             // failed payment calls in the outage before the breaker first opened; -1: not seen opening
	maxTrials    int             // most payment calls made during one half-open period; -1: no half-open period seen
}

func (r outageResult) percentile(p float64) time.Duration {
	if len(r.failed) == 0 {
		return 0
	}
	return r.failed[min(len(r.failed)-1, int(p*float64(len(r.failed))))]
}

// runOutage offers one order every expEvery through the outage, with the
// order service's payment client guarded by a breaker built from s (nil:
// no breaker). It stops at the first successful order after the outage,
// or expAfter (at least one open period) after it.
func runOutage(t *testing.T, s *breaker.Settings, rec *transitions) outageResult {
	var logMu sync.Mutex
	var calls []chargeCall
	cfg := system.Config{Seed: 5, PaymentClient: paymentHTTP}
	cfg.PaymentBreaker = func(p fooddelivery.Payer) fooddelivery.Payer {
		logged := loggingPayer{next: p, rec: rec, mu: &logMu, log: &calls}
		if s == nil {
			return logged
		}
		return breaker.Payer{Breaker: breaker.New(*s), Next: logged}
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
	after := expAfter
	if s != nil {
		after = max(after, s.OpenFor+2*time.Second)
	}
	var atStart, atEnd int64
	var firstSuccess time.Time
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !firstSuccess.IsZero()
	}
	for phase := 0; time.Since(began) < expBefore+expOutage+after && !done(); time.Sleep(expEvery) {
		now := time.Now()
		if phase == 0 && !now.Before(outageStart) {
			phase, atStart = 1, labtest.Charges(sys)
			if err := sys.Faults.Set("payment", "POST /charges", faults.Fault{Hang: 5 * time.Minute}); err != nil {
				t.Fatalf("step 8: setting up the outage: %v", err)
			}
		}
		if phase == 1 && !now.Before(outageEnd) {
			phase, atEnd = 2, labtest.Charges(sys)
			sys.Faults.Clear("payment", "POST /charges")
		}
		inOutage, afterOutage := phase == 1, phase == 2
		wg.Go(func() {
			took, err := place(sys)
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

	res.openedAfter, res.maxTrials = -1, -1
	if rec == nil {
		return res
	}
	moves := func() []move { rec.mu.Lock(); defer rec.mu.Unlock(); return slices.Clone(rec.moves) }()
	for i, m := range moves {
		switch {
		case m.to == breaker.Open && res.openedAfter < 0:
			res.openedAfter = 0
			for _, c := range calls {
				if c.failed && !c.start.Before(outageStart) && !c.end.After(m.at) {
					res.openedAfter++
				}
			}
		case m.to == breaker.HalfOpen:
			n := 0
			for _, c := range calls {
				if c.move == i {
					n++
				}
			}
			res.maxTrials = max(res.maxTrials, n)
		}
	}
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
		"breaker: half of the last %d calls, at least %d calls, open for %v, one trial",
		expOutage, paymentTimeout, expEvery, settings.Window, settings.MinCalls, settings.OpenFor)
	t.Logf("%-14s %15s %15s %12s %12s %16s", "", "payment calls", "failed orders", "failed p50", "failed p90", "first success")
	t.Logf("%-14s %15s %15s %12s %12s %16s", "", "during outage", "during outage", "latency", "latency", "after recovery")
	row := func(name string, r outageResult) {
		rec := "never"
		if r.recovered {
			rec = r.recovery.String()
		}
		t.Logf("%-14s %15d %15d %12v %12v %16s", name, r.duringOutage, len(r.failed), r.percentile(0.5), r.percentile(0.9), rec)
	}
	row("no breaker", naive)
	row("your breaker", guarded)
	t.Logf("%-14s %15s %15s %12s %12s %16s", "target", "<= 10% of naive", "", "milliseconds", "", "<= "+settings.OpenFor.String())
	seen := func(n int) string {
		if n < 0 {
			return "?"
		}
		return fmt.Sprint(n)
	}
	t.Logf("%-14s %15s %15s %12s", "", "failures", "calls in one", "state")
	t.Logf("%-14s %15s %15s %12s", "", "before opening", "half-open", "changes")
	t.Logf("%-14s %15s %15s %12d", "your breaker", seen(guarded.openedAfter), seen(guarded.maxTrials), guarded.transitions)
	t.Logf("%-14s %15s %15s %12s", "expected", "10", "1", ">= 3")
	if settings.OpenFor != openFor {
		t.Skipf("step 8: the bands are for the default %v open period; with -open-for=%v the table is for you to read",
			openFor, settings.OpenFor)
	}

	if naive.duringOutage < offered*9/10 {
		t.Errorf("step 8: without a breaker only %d of the %d charges offered during the outage reached payment; "+
			"expected nearly all. Did the system or the fault change?", naive.duringOutage, offered)
	}
	if limit := naive.duringOutage / 10; guarded.duringOutage > limit {
		t.Errorf("step 8: with your breaker %d charges reached payment during the outage, against %d without; "+
			"the breaker must cut them by at least 90%% (at most %d): it must open (steps 1-2) and, while open, "+
			"refuse without calling (step 1).", guarded.duringOutage, naive.duringOutage, limit)
	}
	if p50 := guarded.percentile(0.5); len(guarded.failed) == 0 || p50 > fast {
		t.Errorf("step 8: with your breaker half of the orders that failed during the outage took %v or more; "+
			"an open breaker answers at once (within %v), instead of after the %v payment timeout (step 1)", p50, fast, paymentTimeout)
	}
	if !guarded.recovered || guarded.recovery > openFor {
		t.Errorf("step 8: with your breaker the first order after payment recovered succeeded %v after the recovery "+
			"(recovered: %v); a half-open trial must close the breaker within one open period, %v (step 1)",
			guarded.recovery, guarded.recovered, openFor)
	}
	if guarded.transitions < 3 {
		t.Errorf("step 8: your breaker reported %d state changes to Settings.OnStateChange; it must at least open, "+
			"go half-open and close again, and report each change (step 6). Without them the experiment cannot "+
			"see when it opened.", guarded.transitions)
		return
	}
	if guarded.openedAfter < 10 || guarded.openedAfter > 11 {
		t.Errorf("step 8: your breaker opened after %d failed payment calls of the outage. With Window 20, FailureRate "+
			"0.5 and MinCalls 10, after 24 healthy orders the last 20 calls hold half failures at the 10th failure "+
			"(step 2): fewer means the window is ignored or too small (5 is step 1's failures in a row).", guarded.openedAfter)
	}
	if guarded.maxTrials > 1 {
		t.Errorf("step 8: %d payment calls were made during one half-open period of your breaker; HalfOpenCalls is "+
			"not set (zero means 1), so only one trial call may go through while it is half-open (step 4).", guarded.maxTrials)
	}
}
