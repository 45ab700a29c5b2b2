// Mutant: when a draw picks a worker already in the shard it takes the next free worker instead, so shards next to a popular worker are chosen more often than others. Caught by step 5.

package bulkhead

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
)

// PoolSize returns how many slots a bulkhead needs for a dependency that
// receives peakPerSecond calls a second at its busiest healthy time and
// answers within latency (a high percentile of its measured latency, p99
// say), with headroom on top: 0.5 adds 50%.
//
// It is Little's law (Little, 1961): the mean number of calls in flight is
// the arrival rate times the time each call spends in the system. Taking
// the p99 rather than the mean latency, and adding headroom, leaves room
// for bursts and a slower day. Hystrix sized thread pools the same way:
// "30 rps x 0.2 s = 6, plus breathing room: 10 threads". The result is
// rounded up, and is at least 1.
//
// It returns an error when peakPerSecond or latency is not positive, or
// headroom is negative (or any of them is not a finite number).
func PoolSize(peakPerSecond float64, latency time.Duration, headroom float64) (int, error) {
	switch {
	case !(peakPerSecond > 0) || math.IsInf(peakPerSecond, 0):
		return 0, fmt.Errorf("bulkhead: arrival rate %v is not a positive number of calls per second", peakPerSecond)
	case latency <= 0:
		return 0, fmt.Errorf("bulkhead: latency %v is not positive", latency)
	case !(headroom >= 0) || math.IsInf(headroom, 0):
		return 0, fmt.Errorf("bulkhead: headroom %v is not a non-negative fraction", headroom)
	}
	inFlight := peakPerSecond * latency.Seconds() * (1 + headroom)
	// 50 * 0.14 is 7.000000000000001 in floating point; the tolerance keeps
	// that from rounding up to 8.
	return max(1, int(math.Ceil(inFlight-1e-9))), nil
}

// shardSeed keys the shuffle-sharding draws. Changing it reshuffles every
// customer.
const shardSeed = 6

// ShuffleShard returns the workers, numbered 0 to workers-1 in ascending
// order, that serve customer: shardSize distinct workers picked by hashing
// the customer's name, so that every one of the C(workers, shardSize)
// combinations is equally likely and a customer always gets the same one
// (AWS calls this shuffle sharding). With 8 workers in shards of 2 there
// are 28 combinations: a poison customer that takes down its two workers
// takes down the whole shard of only 1 customer in 28, where plain sharding
// (4 fixed pairs) takes down 1 in 4.
//
// It returns an error unless 1 <= shardSize <= workers.
func ShuffleShard(customer string, workers, shardSize int) ([]int, error) {
	if shardSize < 1 || shardSize > workers {
		return nil, errors.New("bulkhead: shard size " + strconv.Itoa(shardSize) +
			" must be between 1 and the number of workers, " + strconv.Itoa(workers))
	}
	// A partial Fisher-Yates shuffle: the first shardSize places of the
	// permutation are a uniformly random combination. Each draw is a pure
	// function of the customer, so the shard never changes.
	taken := make([]bool, workers)
	shard := make([]int, 0, shardSize)
	for i := range shardSize {
		w := int(fooddelivery.Draw(shardSeed, customer, i) * float64(workers))
		for taken[w] {
			w = (w + 1) % workers // taken: use the next free worker
		}
		taken[w] = true
		shard = append(shard, w)
	}
	slices.Sort(shard)
	return shard, nil
}
