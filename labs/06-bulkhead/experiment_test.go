package bulkhead_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery/labtest"
	bulkhead "github.com/gophereats/resilience/labs/06-bulkhead"
)

func p99String(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.String()
}

func TestStep6Experiment(t *testing.T) {
	var healthy, shared, compartmented rushResult
	labtest.Run(t, labtest.Options{Step: 6, Watchdog: 30 * time.Minute}, func(t *testing.T) {
		healthy = rush(t, 6, bulkhead.Compartments(compartments, 0), false)
		shared = rush(t, 6, nil, true)
		compartmented = rush(t, 6, bulkhead.Compartments(compartments, 0), true)
	})
	if t.Failed() {
		return
	}
	const customers = 10000
	all := float64(binomial(shardWorkers, shardSize))
	sharing := all - float64(binomial(shardWorkers-shardSize, shardSize))
	plainCombos, _, plainWhole, plainSome, _ := blastRadius(customers, func(c string) ([]int, error) {
		return plainShard(c, shardWorkers, shardSize), nil
	})
	combos, _, whole, some, err := blastRadius(customers, func(c string) ([]int, error) {
		return bulkhead.ShuffleShard(c, shardWorkers, shardSize)
	})
	if err != nil {
		t.Fatalf("step 6: ShuffleShard failed: %v", err)
	}

	t.Logf("step 6: a gateway serving at most %d requests at once; one checkout every %v; from %v on, one menu/courier page every %v",
		gatewayLimit, checkoutEvery, browseFrom, browseEvery)
	t.Logf("%-34s %16s %9s %22s", "payment hangs?", "menu/courier ok", "p99", "checkouts refused fast")
	row := func(name string, r rushResult) {
		t.Logf("%-34s %7d/%d %6.1f%% %9s %15d/%d", name, r.browseOK, r.browses, 100*r.successRate(), p99String(r.browseP99), r.refusedFast, r.checkouts)
	}
	row("no: healthy baseline, bulkheads", healthy)
	row(fmt.Sprintf("yes: one shared pool (gateway, %d)", gatewayLimit), shared)
	row(fmt.Sprintf("yes: bulkheads %d/%d/%d", ordersSlots, menuSlots, courierSlots), compartmented)
	t.Logf("step 6: %d customers on %d workers in shards of %d; one poison customer takes down its shard", customers, shardWorkers, shardSize)
	t.Logf("%-34s %12s %22s %22s", "sharding", "shards used", "lose whole shard", "share a worker")
	t.Logf("%-34s %12d %13.1f%% (1/%d) %13.1f%% (1/%d)", "plain (4 fixed pairs)", plainCombos, 100*plainWhole, shardWorkers/shardSize, 100*plainSome, shardWorkers/shardSize)
	t.Logf("%-34s %5d (of %.0f) %12.1f%% (1/%.0f) %12.1f%% (%.0f/%.0f)", "shuffle sharding (yours)", combos, all, 100*whole, all, 100*some, sharing, all)

	if r := compartmented.successRate(); r < 0.99 {
		t.Errorf("step 6: with bulkheads, %.1f%% of menu/courier requests succeeded while payment hung (mostly failing: %s); the target is at least 99%%.",
			100*r, compartmented.mainFailure())
	}
	if compartmented.browseP99 > healthy.browseP99*12/10 {
		t.Errorf("step 6: with bulkheads, the p99 of menu/courier requests was %v while payment hung, against %v healthy; the target is within 1.2x.",
			compartmented.browseP99, healthy.browseP99)
	}
	if r := shared.successRate(); r > 0.5 {
		t.Errorf("step 6: with one shared pool, %.1f%% of menu/courier requests still succeeded while payment hung; they should collapse. "+
			"Did the scenario change?", 100*r)
	}
	if combos != int(all) || whole > 1.2/all || some < sharing/all-0.03 || some > sharing/all+0.03 {
		t.Errorf("step 6: shuffle sharding used %d of %.0f combinations, %.1f%% lost their whole shard and %.1f%% shared a worker; "+
			"expected %.0f, %.1f%% and %.1f%% (step 5).", combos, all, 100*whole, 100*some, all, 100/all, 100*sharing/all)
	}
}
