package hedging

import "time"

// LatencyTracker should keep the latencies of the last window reads and
// say how long to wait before hedging: their percentile (0.95 for the
// p95). It must be safe for concurrent use.
type LatencyTracker struct {
	initial time.Duration
}

// NewLatencyTracker returns a tracker of the last window latencies that
// reports their percentile, and initial until it has seen a latency.
func NewLatencyTracker(window int, percentile float64, initial time.Duration) *LatencyTracker {
	// TODO(step 2): remember window and percentile; keep the last window
	// latencies.
	return &LatencyTracker{initial: initial}
}

// Observe records the latency of one read (until its first answer).
func (t *LatencyTracker) Observe(latency time.Duration) {
	// TODO(step 2): add latency to the window, forgetting the oldest one
	// when the window is full.
}

// Delay returns the hedge delay: the percentile of the latencies in the
// window (nearest rank: the smallest latency that at least percentile x n
// of the n latencies do not exceed), or the initial delay before the first
// latency. For now it is always the initial guess.
func (t *LatencyTracker) Delay() time.Duration {
	// TODO(step 2): the percentile of the window. Delay and Observe run on
	// every request: keep them cheap.
	return t.initial
}

// HedgeBudget should limit hedges to a share of requests, as a token
// bucket: each request earns ratio of a hedge, each hedge spends one, and
// at most burst unspent hedges are saved. It starts empty. It must be safe
// for concurrent use.
type HedgeBudget struct{}

// NewHedgeBudget returns an empty budget that allows ratio hedges per
// request (0.1: one hedge per ten requests) and saves at most burst.
func NewHedgeBudget(ratio float64, burst int) *HedgeBudget {
	// TODO(step 4): remember ratio and burst.
	return &HedgeBudget{}
}

// Request records one request that could be hedged: it earns ratio of a
// hedge, up to the burst.
func (b *HedgeBudget) Request() {
	// TODO(step 4)
}

// TryHedge spends one hedge and reports true, or reports false when less
// than one is saved. For now every hedge is allowed.
func (b *HedgeBudget) TryHedge() bool {
	// TODO(step 4)
	return true
}
