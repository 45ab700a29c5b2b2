package bulkhead

import (
	"errors"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
)

// PoolSize returns how many slots a bulkhead needs for a dependency that
// receives peakPerSecond calls a second at its busiest healthy time and
// answers within latency (a high percentile of its measured latency),
// with headroom on top (0.5 adds 50%). The result is at least 1.
//
// It returns an error when peakPerSecond or latency is not positive, or
// headroom is negative (or any of them is not a finite number).
func PoolSize(peakPerSecond float64, latency time.Duration, headroom float64) (int, error) {
	// TODO(step 4): Little's law: calls in flight = arrival rate x time
	// each call takes. Add the headroom and round up.
	return 0, errors.New("PoolSize is not written yet")
}

// ShuffleShard returns the workers, numbered 0 to workers-1 in ascending
// order, that serve customer: shardSize distinct workers, always the same
// ones for the same customer. It returns an error unless
// 1 <= shardSize <= workers.
func ShuffleShard(customer string, workers, shardSize int) ([]int, error) {
	// TODO(step 5): this is plain sharding: the workers are cut into
	// workers/shardSize fixed groups and each customer gets one group.
	// Pick any shardSize of the workers instead, so that every
	// combination is equally likely.
	if shardSize < 1 || shardSize > workers {
		return nil, errors.New("shard size must be between 1 and the number of workers")
	}
	groups := workers / shardSize
	group := int(fooddelivery.Draw(6, customer, 0) * float64(groups))
	shard := make([]int, shardSize)
	for i := range shard {
		shard[i] = group*shardSize + i
	}
	return shard, nil
}
