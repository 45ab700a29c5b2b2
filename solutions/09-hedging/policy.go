package hedging

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// LatencyTracker keeps the latencies of the last window reads and says how
// long to wait before hedging: their percentile (nearest rank). Dean and
// Barroso (The Tail at Scale, CACM 2013) hedge at the p95, which duplicates
// about 5% of requests. It is safe for concurrent use; create one with
// NewLatencyTracker.
//
// Observe and Delay run on every request, so both avoid sorting: the
// window is kept in a ring (arrival order, to know which sample leaves)
// and in a sorted copy (to read the percentile by index). Each Observe
// costs O(window) in memory moves, about a microsecond for 2,000 samples.
type LatencyTracker struct {
	mu         sync.Mutex
	percentile float64
	initial    time.Duration
	ring       []time.Duration // the last window samples; ring[next] is the oldest once full
	next       int
	sorted     []time.Duration // the same samples, in increasing order
}

// NewLatencyTracker returns a tracker of the last window latencies that
// reports their percentile (0.95 for the p95), and initial until it has
// seen a latency. It panics when window < 1, percentile is not in (0, 1]
// or initial is negative: those are configuration errors.
//
// Choose the window long compared with a stall: a window that a stall can
// fill puts the stall's own slow reads into the percentile, and the delay
// rises exactly when hedges are needed (see the lab's README).
func NewLatencyTracker(window int, percentile float64, initial time.Duration) *LatencyTracker {
	if window < 1 || !(percentile > 0 && percentile <= 1) || initial < 0 {
		panic(fmt.Sprintf("hedging: NewLatencyTracker(%d, %v, %v): want window >= 1, percentile in (0, 1], initial >= 0",
			window, percentile, initial))
	}
	return &LatencyTracker{
		percentile: percentile,
		initial:    initial,
		ring:       make([]time.Duration, 0, window),
		sorted:     make([]time.Duration, 0, window),
	}
}

// Observe records the latency of one read (until its first answer). When
// the window is full, the oldest latency is forgotten.
func (t *LatencyTracker) Observe(latency time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.ring) < cap(t.ring) {
		t.ring = append(t.ring, latency)
	} else {
		oldest := t.ring[t.next]
		t.ring[t.next] = latency
		t.next = (t.next + 1) % len(t.ring)
		i, _ := slices.BinarySearch(t.sorted, oldest)
		t.sorted = slices.Delete(t.sorted, i, i+1)
	}
	i, _ := slices.BinarySearch(t.sorted, latency)
	t.sorted = slices.Insert(t.sorted, i, latency)
}

// Delay returns the percentile of the latencies in the window: the
// smallest of them that at least percentile x n of the n latencies do not
// exceed. With no latency yet, it returns the initial delay.
func (t *LatencyTracker) Delay() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.sorted)
	if n == 0 {
		return t.initial
	}
	// The tolerance keeps a product that floating point puts a hair above
	// a whole number (0.07*100 = 7.000000000000001) from rounding up.
	rank := int(math.Ceil(t.percentile*float64(n) - 1e-9))
	return t.sorted[min(max(rank, 1), n)-1]
}

// HedgeBudget limits hedges to a share of requests, as a token bucket:
// each request earns ratio of a hedge, each hedge spends one, and at most
// burst unspent hedges are saved. Over any stretch of time, hedges are at
// most ratio x requests + burst. It is safe for concurrent use; create one
// with NewHedgeBudget.
//
// The burst is what lets a stall through: while one of three replicas is
// stalled, a third of the reads need a hedge, far more than ratio. Size it
// to the hedges one stall needs (reads per second / replicas x stall
// length); a budget with a tiny burst turns hedging off in the middle of
// every stall.
type HedgeBudget struct {
	mu sync.Mutex
	// Tokens are counted in millionths of a hedge, in integers: adding 0.1
	// ten times in floating point gives 0.9999999999999999, not 1.
	earn, burst, tokens int64
}

const unit = 1_000_000 // millionths of a hedge

// NewHedgeBudget returns an empty budget that allows ratio hedges per
// request (0.1: one hedge per ten requests) and saves at most burst. It
// panics when ratio is not in (0, 1] or burst < 1 (configuration errors).
func NewHedgeBudget(ratio float64, burst int) *HedgeBudget {
	if !(ratio > 0 && ratio <= 1) || burst < 1 {
		panic(fmt.Sprintf("hedging: NewHedgeBudget(%v, %d): want ratio in (0, 1] and burst >= 1", ratio, burst))
	}
	return &HedgeBudget{earn: int64(math.Round(ratio * unit)), burst: int64(burst) * unit}
}

// Request records one request that could be hedged: it earns ratio of a
// hedge, up to the burst.
func (b *HedgeBudget) Request() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens = min(b.tokens+b.earn, b.burst)
}

// TryHedge spends one hedge and reports true, or reports false when less
// than one is saved: then the request waits for its first attempt alone.
func (b *HedgeBudget) TryHedge() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tokens < unit {
		return false
	}
	b.tokens -= unit
	return true
}
