package bulkhead_test

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/gophereats/resilience/fooddelivery/labtest"
	bulkhead "github.com/gophereats/resilience/labs/06-bulkhead"
)

func TestStep4PoolSizeFromLittlesLaw(t *testing.T) {
	cases := []struct {
		name     string
		rate     float64
		latency  time.Duration
		headroom float64
		want     int
	}{
		{"Hystrix's example: 30 rps x 0.2s p99", 30, 200 * time.Millisecond, 0, 6},
		{"the same with 50% headroom", 30, 200 * time.Millisecond, 0.5, 9},
		{"a fraction rounds up: 25 rps x 130ms = 3.25", 25, 130 * time.Millisecond, 0, 4},
		{"a whole number stays whole: 50 rps x 140ms = 7", 50, 140 * time.Millisecond, 0, 7},
		{"checkouts: 12 rps x 1.5s p99, 25% headroom", 12, 1500 * time.Millisecond, 0.25, 23},
		{"a quiet dependency still gets one slot", 0.5, 100 * time.Millisecond, 0, 1},
		{"1000 rps x 1ms, 20% headroom", 1000, time.Millisecond, 0.2, 2},
		{"a small fraction still rounds up: 41 rps x 50ms = 2.05", 41, 50 * time.Millisecond, 0, 3},
		{"a tiny fraction still rounds up: 2 rps x 1.001s = 2.002", 2, 1001 * time.Millisecond, 0, 3},
		{"a latency below a millisecond counts: 1000 rps x 1.5ms = 1.5", 1000, 1500 * time.Microsecond, 0, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
				got, err := bulkhead.PoolSize(c.rate, c.latency, c.headroom)
				if err != nil || got != c.want {
					inFlight := c.rate * c.latency.Seconds()
					careful := ""
					switch got {
					case c.want + 1:
						careful = " One too many: in floating point 50 x 0.14 is 7.000000000000001, which rounds up to 8."
					case c.want - 1:
						careful = " One too few: round up any real fraction (a tolerance for floating point must be tiny, like 1e-9), " +
							"and keep the latency's full precision (latency.Seconds(), not whole milliseconds)."
					}
					t.Fatalf("step 4: PoolSize(%v calls/s, %v, headroom %v) = %d, %v; want %d.\n"+
						"Little's law: %v calls/s x %v = %.4g calls in flight; with %.0f%% headroom that is %.4g, rounded up to %d.%s",
						c.rate, c.latency, c.headroom, got, err, c.want,
						c.rate, c.latency, inFlight, 100*c.headroom, inFlight*(1+c.headroom), c.want, careful)
				}
			})
		})
	}
}

func TestStep4RejectsBadInput(t *testing.T) {
	cases := []struct {
		name     string
		rate     float64
		latency  time.Duration
		headroom float64
	}{
		{"zero rate", 0, time.Second, 0},
		{"negative rate", -5, time.Second, 0},
		{"rate NaN", math.NaN(), time.Second, 0},
		{"infinite rate", math.Inf(1), time.Second, 0},
		{"zero latency", 10, 0, 0},
		{"negative latency", 10, -time.Second, 0},
		{"negative headroom", 10, time.Second, -0.5},
		{"headroom NaN", 10, time.Second, math.NaN()},
		{"infinite headroom", 10, time.Second, math.Inf(1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
				got, err := bulkhead.PoolSize(c.rate, c.latency, c.headroom)
				assert.Error(t, err, "step 4: PoolSize(%v, %v, %v) returned %d; bad input must be an error, not a guess",
					c.rate, c.latency, c.headroom, got)
			})
		})
	}
}

func customer(i int) string { return fmt.Sprintf("customer-%d", i) }

func TestStep5ShardsAreValidAndStable(t *testing.T) {
	for _, c := range []struct{ workers, size int }{{8, 2}, {10, 3}, {5, 5}, {6, 1}} {
		t.Run(fmt.Sprintf("%d workers, shards of %d", c.workers, c.size), func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
				for i := range 300 {
					shard, err := bulkhead.ShuffleShard(customer(i), c.workers, c.size)
					if err != nil {
						t.Fatalf("step 5: ShuffleShard(%q, %d, %d) failed: %v", customer(i), c.workers, c.size, err)
					}
					again, _ := bulkhead.ShuffleShard(customer(i), c.workers, c.size)
					valid := len(shard) == c.size && slices.IsSorted(shard) && len(slices.Compact(slices.Clone(shard))) == c.size &&
						shard[0] >= 0 && shard[len(shard)-1] < c.workers
					if !valid || !slices.Equal(shard, again) {
						t.Fatalf("step 5: ShuffleShard(%q, %d, %d) gave %v, then %v. A shard is %d distinct workers between 0 and %d, "+
							"in ascending order, and always the same for the same customer (derive it from the customer's name, not from a clock or a shared random source).",
							customer(i), c.workers, c.size, shard, again, c.size, c.workers-1)
					}
				}
			})
		})
	}
	for _, c := range []struct{ workers, size int }{{8, 0}, {8, 9}, {0, 0}, {8, -1}} {
		t.Run(fmt.Sprintf("bad input %d workers, shards of %d", c.workers, c.size), func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
				shard, err := bulkhead.ShuffleShard("alice", c.workers, c.size)
				assert.Error(t, err, "step 5: ShuffleShard(alice, %d, %d) returned %v; a shard size outside 1..workers is an error", c.workers, c.size, shard)
			})
		})
	}
}

// blastRadius assigns customers to shards with assign and returns the
// number of distinct shards used, how many customers used each, and, for a
// poison customer picked at random among them, the expected fraction of
// the other customers that share its whole shard (they lose every worker
// the poison customer takes down) and that share at least one worker
// (they are degraded).
func blastRadius(customers int, assign func(string) ([]int, error)) (combos int, perShard map[string]int, whole, some float64, err error) {
	perShard = map[string]int{}
	shards := map[string][]int{}
	for i := range customers {
		s, err := assign(customer(i))
		if err != nil {
			return 0, nil, 0, 0, err
		}
		k := fmt.Sprint(s)
		perShard[k]++
		shards[k] = s
	}
	// Over all ordered pairs (poison, other) of distinct customers.
	pairs := float64(customers) * float64(customers-1)
	for a, na := range perShard {
		for b, nb := range perShard {
			n := float64(na * nb)
			if a == b {
				n = float64(na * (na - 1))
				whole += n / pairs
			}
			if overlaps(shards[a], shards[b]) {
				some += n / pairs
			}
		}
	}
	return len(perShard), perShard, whole, some, nil
}

func overlaps(a, b []int) bool {
	for _, w := range a {
		if slices.Contains(b, w) {
			return true
		}
	}
	return false
}

// plainShard is plain sharding, for comparison: workers cut into fixed
// groups of size, a customer's group from a hash of the name.
func plainShard(name string, workers, size int) []int {
	groups := workers / size
	var h uint32 = 2166136261
	for _, c := range []byte(name) {
		h = (h ^ uint32(c)) * 16777619
	}
	g := int(h % uint32(groups))
	s := make([]int, size)
	for i := range s {
		s[i] = g*size + i
	}
	return s
}

const (
	shardWorkers = 8
	shardSize    = 2
)

// binomial returns n choose k.
func binomial(n, k int) int {
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
	}
	return r
}

// chiSquareLimit is the chi-square value that 27 degrees of freedom (28
// combinations) exceed with probability 0.001: shards that are equally
// likely stay below it 999 times in 1000.
const chiSquareLimit = 55.5

func TestStep5EveryCombinationIsUsed(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
		const customers = 14000
		all := binomial(shardWorkers, shardSize)
		combos, perShard, _, _, err := blastRadius(customers, func(c string) ([]int, error) {
			return bulkhead.ShuffleShard(c, shardWorkers, shardSize)
		})
		if err != nil {
			t.Fatalf("step 5: ShuffleShard failed: %v", err)
		}
		if combos != all {
			t.Fatalf("step 5: %d customers on %d workers in shards of %d used %d different shards; there are C(%d,%d) = %d combinations, "+
				"and shuffle sharding uses them all. Pick any %d of the %d workers, not a fixed group.",
				customers, shardWorkers, shardSize, combos, shardWorkers, shardSize, all, shardSize, shardWorkers)
		}
		// Pearson's chi-square: how far the counts are from equal, in units
		// that do not depend on the number of customers.
		expected := float64(customers) / float64(all)
		chi, fewest, most := 0.0, customers, 0
		for _, n := range perShard {
			d := float64(n) - expected
			chi += d * d / expected
			fewest, most = min(fewest, n), max(most, n)
		}
		if chi > chiSquareLimit {
			t.Fatalf("step 5: %d customers on %d workers in shards of %d: the least used shard serves %d, the most used %d; "+
				"with %d equally likely combinations each serves about %.0f.\n"+
				"The chi-square of these counts is %.0f; equally likely shards stay below %.1f (27 degrees of freedom, p = 0.001). "+
				"Every combination must be equally likely: a worker picked again must not be replaced by its neighbour.",
				customers, shardWorkers, shardSize, fewest, most, all, expected, chi, chiSquareLimit)
		}
	})
}

func TestStep5BlastRadius(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
		const customers = 2800
		all := float64(binomial(shardWorkers, shardSize))
		sharing := all - float64(binomial(shardWorkers-shardSize, shardSize)) // 28 - 15 = 13
		_, _, whole, some, err := blastRadius(customers, func(c string) ([]int, error) {
			return bulkhead.ShuffleShard(c, shardWorkers, shardSize)
		})
		if err != nil {
			t.Fatalf("step 5: ShuffleShard failed: %v", err)
		}
		_, _, plainWhole, _, _ := blastRadius(customers, func(c string) ([]int, error) {
			return plainShard(c, shardWorkers, shardSize), nil
		})
		if whole < 0.8/all || whole > 1.2/all || some < sharing/all-0.03 || some > sharing/all+0.03 {
			t.Fatalf("step 5: a poison customer takes down its %d workers. With your shards, %.1f%% of the other customers lost their whole shard "+
				"and %.1f%% shared at least one worker with it.\n"+
				"Shuffle sharding over %d workers in shards of %d gives 1/%.0f = %.1f%% and %.0f/%.0f = %.1f%% "+
				"(plain sharding: %.1f%% lose everything).",
				shardSize, 100*whole, 100*some, shardWorkers, shardSize, all, 100/all, sharing, all, 100*sharing/all, 100*plainWhole)
		}
	})
}
