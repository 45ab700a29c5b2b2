package bulkhead_test

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/system"
	bulkhead "github.com/gophereats/resilience/labs/06-bulkhead"
)

// compartmentSizes is the slots of the experiment's checkout, menu and
// courier compartments, in that order.
type compartmentSizes [3]int

// String is c as the table shows it.
func (c compartmentSizes) String() string { return fmt.Sprintf("%d/%d/%d", c[0], c[1], c[2]) }

// flagValue is c as written on the command line.
func (c compartmentSizes) flagValue() string { return fmt.Sprintf("%d,%d,%d", c[0], c[1], c[2]) }

func (c compartmentSizes) limits() map[string]int {
	return map[string]int{system.GatewayOrders: c[0], system.GatewayMenu: c[1], system.GatewayCourier: c[2]}
}

var defaultSizes = compartmentSizes{ordersSlots, menuSlots, courierSlots}

// experimentSizes lets you try other compartment sizes (orders,menu,courier):
//
//	go test -v -run Experiment ./labs/06-bulkhead/ -args -compartments=1,10,10
//
// The pass/fail bands only apply to the default 10,10,10.
var experimentSizes = defaultSizes

func init() {
	flag.Func("compartments", "lab 06 experiment: slots of the orders,menu,courier compartments (default 10,10,10)", func(v string) error {
		parts := strings.Split(v, ",")
		if len(parts) != len(experimentSizes) {
			return errors.New("want three sizes, orders,menu,courier, such as 1,10,10")
		}
		for i, p := range parts {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || n < 1 {
				return fmt.Errorf("size %q is not a whole number of slots of at least 1", p)
			}
			experimentSizes[i] = n
		}
		return nil
	})
}

func p99String(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.String()
}

func TestStep6Experiment(t *testing.T) {
	var healthy, shared, compartmented rushResult
	labtest.Run(t, labtest.Options{Step: 6, Watchdog: 30 * time.Minute}, func(t *testing.T) {
		healthy = rush(t, 6, bulkhead.Compartments(experimentSizes.limits(), 0), false)
		shared = rush(t, 6, nil, true)
		compartmented = rush(t, 6, bulkhead.Compartments(experimentSizes.limits(), 0), true)
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
	row("no: healthy, bulkheads "+experimentSizes.String(), healthy)
	row(fmt.Sprintf("yes: one shared pool (gateway, %d)", gatewayLimit), shared)
	row("yes: bulkheads "+experimentSizes.String(), compartmented)
	t.Logf("step 6: %d customers on %d workers in shards of %d; one poison customer takes down its shard", customers, shardWorkers, shardSize)
	groups := shardWorkers / shardSize
	pct := func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }
	expect := func(num, den int) string {
		return fmt.Sprintf("%d/%d = %.1f%%", num, den, 100*float64(num)/float64(den))
	}
	t.Logf("%-26s %11s  %-22s  %s", "", "", "lose whole shard", "share a worker")
	t.Logf("%-26s %11s  %8s %13s  %8s %13s", "sharding", "shards used", "measured", "expected", "measured", "expected")
	t.Logf("%-26s %11s  %8s %13s  %8s %13s", fmt.Sprintf("plain (%d fixed pairs)", groups), fmt.Sprintf("%d of %d", plainCombos, groups),
		pct(plainWhole), expect(1, groups), pct(plainSome), expect(1, groups))
	t.Logf("%-26s %11s  %8s %13s  %8s %13s", "shuffle sharding (yours)", fmt.Sprintf("%d of %.0f", combos, all),
		pct(whole), expect(1, int(all)), pct(some), expect(int(sharing), int(all)))
	if experimentSizes != defaultSizes {
		t.Skipf("step 6: the pass/fail bands are for the default -compartments=%s; with -compartments=%s the table is for you to read",
			defaultSizes.flagValue(), experimentSizes.flagValue())
	}

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
