package hedging_test

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery/hedgesim"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	hedging "github.com/gophereats/resilience/labs/09-hedging"
)

// The experiment's hedging policy. Try others:
//
//	go test -v -run Experiment ./labs/09-hedging/ -args -window=200 -percentile=0.98 -burst=10
//
// The pass/fail bands only apply to the defaults.
var (
	expWindow     = flag.Int("window", 2000, "lab 09 experiment: the reads your LatencyTracker remembers")
	expPercentile = flag.Float64("percentile", 0.95, "lab 09 experiment: the percentile of latency to hedge at")
	expBurst      = flag.Int("burst", 100, "lab 09 experiment: the hedges your HedgeBudget saves up at most")
)

const (
	expRatio   = 0.1                    // hedges per request the budget allows
	expInitial = 200 * time.Millisecond // the tracker's delay before its first latency: a cautious first guess
)

// policy builds the learner's tracker and budget for the simulation.
func policy(window int, percentile float64, burst int) *hedgesim.Policy {
	return &hedgesim.Policy{
		Tracker: hedging.NewLatencyTracker(window, percentile, expInitial),
		Budget:  hedging.NewHedgeBudget(expRatio, burst),
	}
}

func TestStep6Experiment(t *testing.T) {
	if raceEnabled {
		t.Skip("step 6: skipped under -race: the experiment is one goroutine driving your tracker and budget " +
			"through a simulation, and steps 2 and 4 already check them for races. Run it without -race.")
	}
	m := hedgesim.Default()
	type row struct {
		name string
		r    hedgesim.Result
	}
	var rows []row
	labtest.Run(t, labtest.Options{Step: 6}, func(t *testing.T) {
		rows = append(rows,
			row{"no hedging", hedgesim.Run(m, nil)},
			row{fmt.Sprintf("p%g of last %d, burst %d", 100**expPercentile, *expWindow, *expBurst),
				hedgesim.Run(m, policy(*expWindow, *expPercentile, *expBurst))},
			row{"p95 of last 200, burst 100", hedgesim.Run(m, policy(200, 0.95, 100))},
			row{"p95 of last 2000, burst 5", hedgesim.Run(m, policy(2000, 0.95, 5))},
		)
	})
	t.Logf("step 6: a simulation drives your LatencyTracker and HedgeBudget (not your Hedger): %d home pages of %d menu "+
		"reads over %d replicas; each replica stalls %v once every %v (%.1f%% of the time)",
		m.Pages, m.FanOut, m.Replicas, m.StallFor, m.StallEvery, 100*m.StallShare())
	t.Logf("%-30s %9s %9s %9s %7s", "hedging", "p50", "p99", "p99.9", "extra")
	for _, r := range rows {
		t.Logf("%-30s %9v %9v %9v %6.1f%%", r.name, r.r.P50.Round(100*time.Microsecond), r.r.P99.Round(100*time.Microsecond),
			r.r.P999.Round(100*time.Microsecond), 100*r.r.Extra())
	}
	t.Logf("%-30s %9s %9s %9s %7s", "(The Tail at Scale)", "", "", "1800ms", "")
	t.Logf("%-30s %9s %9s %9s %6.1f%%", "(... hedged after 10ms)", "", "", "74ms", 2.0)
	if *expWindow != 2000 || *expPercentile != 0.95 || *expBurst != 100 {
		t.Skipf("step 6: the pass/fail targets are for -window=2000 -percentile=0.95 -burst=100; with other values the table is for you to read")
	}

	none, yours := rows[0].r, rows[1].r
	if none.P999 < 500*time.Millisecond {
		t.Fatalf("step 6: without hedging the p99.9 page took %v; the model's 1s stalls should put it near a second. "+
			"Did the model change?", none.P999.Round(100*time.Microsecond))
	}
	if x := float64(none.P999) / float64(yours.P999); x < 10 || yours.Extra() > 0.06 {
		t.Fatalf("step 6: hedging at the p95 of the last 2000 reads cut the p99.9 page from %v to %v (%.1fx) "+
			"with %.1f%% extra requests; the target is at least 10x with at most 6%% extra (The Tail at Scale: "+
			"1800ms to 74ms with 2%% more). Check steps 2 and 4: the tracker's percentile and window, and the budget's "+
			"ratio and burst.", none.P999.Round(100*time.Microsecond), yours.P999.Round(100*time.Microsecond), x, 100*yours.Extra())
	}
	if small := rows[3].r; small.P999 < none.P999/2 {
		t.Fatalf("step 6: with a burst of 5, the p99.9 page took %v (%.1f%% extra), close to the %v of a burst of 100; the "+
			"reference's burst-5 row stays near a second (951.5ms), because 5 saved hedges run dry within milliseconds of "+
			"a stall. Your budget does not limit the hedges: check step 4 (Request earns ratio up to burst, TryHedge "+
			"spends one and refuses when less than one is saved, and the Hedger asks it before every hedge).",
			small.P999.Round(100*time.Microsecond), 100*small.Extra(), yours.P999.Round(100*time.Microsecond))
	}
}
