package metrics

import (
	"math"
	"slices"
	"sync/atomic"
	"time"
)

// The fine latency sketch: logarithmic buckets narrow enough that a
// quantile read from them is within SketchAccuracy of the true one, the
// idea of DDSketch (Masson, Rim and Lee, "DDSketch: a fast and
// fully-mergeable quantile sketch with relative-error guarantees", VLDB
// 2019). Bucket 0 holds durations up to sketchMin; bucket i >= 1 holds
// (sketchMin·γ^(i-1), sketchMin·γ^i] with γ = (1+α)/(1-α), and reads as
// sketchMin·2γ^i/(γ+1), which is within α of every value in the bucket.
// Durations above sketchMax fall in the last bucket.
const (
	// SketchAccuracy is the relative accuracy α of LatencySketch.Quantile:
	// the quantile it returns is within 2% of the true quantile of the
	// observed durations (above 1µs; durations at or below 1µs read as 0).
	SketchAccuracy = 0.02
	sketchMin      = time.Microsecond
	sketchMax      = time.Hour
)

var (
	sketchGamma   = (1 + SketchAccuracy) / (1 - SketchAccuracy)
	sketchLnGamma = math.Log(sketchGamma)
	// sketchBuckets is 1 + the index of sketchMax: 552 buckets.
	sketchBuckets = 1 + int(math.Ceil(math.Log(float64(sketchMax)/float64(sketchMin))/sketchLnGamma))
)

// sketchIndex returns the bucket of d.
func sketchIndex(d time.Duration) int {
	if d <= sketchMin {
		return 0
	}
	i := int(math.Ceil(math.Log(float64(d)/float64(sketchMin)) / sketchLnGamma))
	return min(max(i, 1), sketchBuckets-1)
}

// sketchValue returns what bucket i reads as.
func sketchValue(i int) time.Duration {
	if i <= 0 {
		return 0
	}
	return time.Duration(math.Round(float64(sketchMin) * 2 * math.Pow(sketchGamma, float64(i)) / (sketchGamma + 1)))
}

// fineLatency counts durations into the sketch's buckets with atomics
// only; its zero value is ready (the buckets are allocated at the first
// observation).
type fineLatency struct {
	counts atomic.Pointer[[]atomic.Int64]
}

func (f *fineLatency) observe(d time.Duration) {
	p := f.counts.Load()
	if p == nil {
		b := make([]atomic.Int64, sketchBuckets)
		if !f.counts.CompareAndSwap(nil, &b) {
			p = f.counts.Load()
		} else {
			p = &b
		}
	}
	(*p)[sketchIndex(d)].Add(1)
}

func (f *fineLatency) snapshot() LatencySketch {
	p := f.counts.Load()
	if p == nil {
		return LatencySketch{}
	}
	var s LatencySketch
	for i := range *p {
		if n := (*p)[i].Load(); n > 0 {
			s.index = append(s.index, int32(i))
			s.count = append(s.count, n)
		}
	}
	return s
}

// LatencySketch is a copy of a route's fine latency buckets: the counts of
// its non-empty buckets, cumulative over the route's life like every
// counter of a Snapshot. Two sketches of the same routes subtract
// (Sub: what happened between them) and add (Add: several routes
// together), and Quantile reads a quantile within SketchAccuracy of the
// true one. The zero value is an empty sketch. It is not part of the
// Snapshot's JSON: the Prometheus histogram (RouteSnapshot.Latency) is
// the exported distribution.
type LatencySketch struct {
	index []int32 // increasing bucket indexes
	count []int64 // observations in each, by position
}

// Count returns the number of observations.
func (s LatencySketch) Count() int64 {
	var n int64
	for _, c := range s.count {
		n += c
	}
	return n
}

// Add returns the observations of s and o together.
func (s LatencySketch) Add(o LatencySketch) LatencySketch { return s.merge(o, 1) }

// Sub returns the observations of s that are not in o, where o is an
// earlier sketch of the same routes; a bucket that would go below zero
// (o was not earlier) counts zero.
func (s LatencySketch) Sub(o LatencySketch) LatencySketch { return s.merge(o, -1) }

func (s LatencySketch) merge(o LatencySketch, sign int64) LatencySketch {
	var out LatencySketch
	i, j := 0, 0
	put := func(idx int32, n int64) {
		if n > 0 {
			out.index = append(out.index, idx)
			out.count = append(out.count, n)
		}
	}
	for i < len(s.index) || j < len(o.index) {
		switch {
		case j == len(o.index) || i < len(s.index) && s.index[i] < o.index[j]:
			put(s.index[i], s.count[i])
			i++
		case i == len(s.index) || o.index[j] < s.index[i]:
			put(o.index[j], sign*o.count[j])
			j++
		default:
			put(s.index[i], s.count[i]+sign*o.count[j])
			i++
			j++
		}
	}
	return out
}

// Quantile returns the q-quantile (0 < q <= 1) of the observations by
// nearest rank, the ceil(q·n)-th smallest of n, within SketchAccuracy of
// it; ok is false when there are none.
func (s LatencySketch) Quantile(q float64) (d time.Duration, ok bool) {
	n := s.Count()
	if n == 0 {
		return 0, false
	}
	rank := max(int64(math.Ceil(q*float64(n)-1e-9)), 1)
	var seen int64
	for k, c := range s.count {
		seen += c
		if seen >= rank {
			return sketchValue(int(s.index[k])), true
		}
	}
	return sketchValue(int(s.index[len(s.index)-1])), true
}

// Equal reports whether s and o hold the same observations.
func (s LatencySketch) Equal(o LatencySketch) bool {
	return slices.Equal(s.index, o.index) && slices.Equal(s.count, o.count)
}
