package bulkhead_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gophereats/resilience/fooddelivery/labtest"
	bulkhead "github.com/gophereats/resilience/labs/06-bulkhead"
)

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
