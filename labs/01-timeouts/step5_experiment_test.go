package timeouts_test

import (
	"context"
	"flag"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/system"
	timeouts "github.com/gophereats/resilience/labs/01-timeouts"
)

// The SRE book's bimodal-latency arithmetic (Beyer et al., Site Reliability
// Engineering, 2016, ch. 22 "Addressing Cascading Failures"), scaled down
// with the same ratios: a service with bounded workers, 10% busy in normal
// operation; 5% of its calls to a dependency never complete within the
// 100-second deadline; the rest take 100ms.
const (
	expWorkers  = 2                      // order service workers (the book: 1,000 threads)
	expEvery    = 500 * time.Millisecond // one checkout every 500ms: 2 per second (the book: 1,000 QPS)
	expNormal   = 100 * time.Millisecond // an ordinary payment
	expHangRate = 0.05                   // payments that never complete
	expHang     = 100 * time.Second      // the naive deadline (the book's 100 s)
	expWarmup   = 100 * time.Second      // left out of the counts
	expDuration = 500 * time.Second      // five times the hang time, the warm-up included
)

// experimentBudget lets you try other timeouts:
//
//	go test -v -run Experiment ./labs/01-timeouts/ -args -budget=10s
//
// The pass/fail bands only apply to the default 2s.
var experimentBudget = flag.Duration("budget", budget, "lab 01 experiment: the timeout given to your payment client")

// analyticErrorRate is the book's 1 - 1,000 / (5,000 + 95) = 80.4%: the
// workers can serve workers / (0.95*normal + 0.05*hang) checkouts a second.
func analyticErrorRate() float64 {
	perCheckout := (1-expHangRate)*expNormal.Seconds() + expHangRate*expHang.Seconds()
	served := float64(expWorkers) / perCheckout
	offered := float64(time.Second) / float64(expEvery)
	return 1 - served/offered
}

type experimentResult struct {
	checkouts, failed int64
}

func (r experimentResult) errorRate() float64 { return float64(r.failed) / float64(r.checkouts) }

// runCheckouts offers one checkout every expEvery for expDuration against a
// system whose payment client is built by client, and counts the failures
// among checkouts that started after the warm-up.
func runCheckouts(t *testing.T, client func(*memnet.Network) *http.Client) experimentResult {
	sys := labtest.StartSystem(t, system.Config{
		Seed:          7,
		Limits:        map[string]int{"order": expWorkers},
		PaymentClient: client,
	})
	err := sys.Faults.Set("payment", "POST /charges", faults.Fault{
		Latency: expNormal, TailProbability: expHangRate, TailLatency: expHang,
	})
	if err != nil {
		t.Errorf("step 5: setting up the fault: %v", err)
		return experimentResult{}
	}
	var res experimentResult
	var checkouts, failed atomic.Int64
	var wg sync.WaitGroup
	began := time.Now()
	for time.Since(began) < expDuration {
		counted := time.Since(began) >= expWarmup
		wg.Go(func() {
			_, err := sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
			if counted {
				checkouts.Add(1)
				if err != nil {
					failed.Add(1)
				}
			}
		})
		time.Sleep(expEvery)
	}
	wg.Wait()
	res.checkouts, res.failed = checkouts.Load(), failed.Load()
	return res
}

func TestStep5Experiment(t *testing.T) {
	var naive, bounded experimentResult
	labtest.Run(t, labtest.Options{Step: 5, Watchdog: 30 * time.Minute}, func(t *testing.T) {
		// Two independent systems, side by side in the same virtual time.
		var wg sync.WaitGroup
		wg.Go(func() { naive = runCheckouts(t, system.NaivePaymentClient) })
		wg.Go(func() {
			bounded = runCheckouts(t, func(n *memnet.Network) *http.Client { return timeouts.NewPaymentClient(n, *experimentBudget) })
		})
		wg.Wait()
	})
	analytic := analyticErrorRate()
	t.Logf("step 5: %d order workers, one checkout every %v, %.0f%% of payments hang (%v), %v measured after a %v warm-up",
		expWorkers, expEvery, 100*expHangRate, expHang, expDuration-expWarmup, expWarmup)
	t.Logf("%-28s %10s %10s %11s", "payment client", "checkouts", "failed", "error rate")
	t.Logf("%-28s %10d %10d %10.1f%%   (SRE book: %.1f%%)", "no timeout", naive.checkouts, naive.failed, 100*naive.errorRate(), 100*analytic)
	t.Logf("%-28s %10d %10d %10.1f%%   (each payment hangs with probability %.0f%%)", "yours, "+experimentBudget.String()+" timeout",
		bounded.checkouts, bounded.failed, 100*bounded.errorRate(), 100*expHangRate)
	if *experimentBudget != budget {
		t.Skipf("step 5: the pass/fail bands (70-90%% without a timeout, at most 8%% with yours) apply to the default %v budget only; "+
			"with -budget=%v the table above is for you to read", budget, *experimentBudget)
	}

	if r := naive.errorRate(); r < 0.70 || r > 0.90 {
		t.Errorf("step 5: without a timeout %.1f%% of checkouts failed; the SRE book's arithmetic gives %.1f%% "+
			"and the experiment expects 70-90%%. Did the system or the fault change?", 100*r, 100*analytic)
	}
	if r := bounded.errorRate(); r > 0.08 {
		t.Errorf("step 5: with your payment client %.1f%% of checkouts failed (%d of %d); with a %v timeout only the "+
			"%.0f%% of hung payments should fail, at most 8%%. Finish steps 1-4 first.",
			100*r, bounded.failed, bounded.checkouts, budget, 100*expHangRate)
	}
}
