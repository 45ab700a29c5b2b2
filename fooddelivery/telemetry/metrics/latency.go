package metrics

import (
	"encoding/binary"
	"encoding/hex"
	"maps"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// latencyBounds are the upper bounds of the latency histogram's buckets.
// They span what the system can show: a healthy call takes milliseconds, a
// timeout set from measured latency fires within a second or two, and a
// hanging request lasts up to 30s (the fault injector's default hang). The
// 2s bound is lab 01's payment timeout, so that calls cut off there land
// in a bucket of their own.
var latencyBounds = [...]time.Duration{
	5 * time.Millisecond,
	10 * time.Millisecond,
	25 * time.Millisecond,
	50 * time.Millisecond,
	100 * time.Millisecond,
	250 * time.Millisecond,
	500 * time.Millisecond,
	1 * time.Second,
	2 * time.Second,
	5 * time.Second,
	10 * time.Second,
	30 * time.Second,
}

// LatencyBuckets returns the upper bounds of every route's latency
// histogram, in increasing order, in a new slice: 5ms, 10ms, 25ms, 50ms,
// 100ms, 250ms, 500ms, 1s, 2s, 5s, 10s and 30s. A request that takes
// longer than the last bound is counted only in the histogram's total.
func LatencyBuckets() []time.Duration { return append([]time.Duration(nil), latencyBounds[:]...) }

// latencyHistogram counts request durations into the fixed buckets of
// latencyBounds, and keeps for each bucket the trace of its latest traced
// observation (an exemplar). Its zero value is ready; it is updated and
// read with atomics only.
type latencyHistogram struct {
	// counts[i] is the number of observations in (bound[i-1], bound[i]];
	// the last element counts those above every bound. Not cumulative.
	counts [len(latencyBounds) + 1]atomic.Int64
	sum    atomic.Int64 // nanoseconds
	// exemplars[i] is the latest traced observation of counts[i].
	exemplars [len(latencyBounds) + 1]exemplarSlot
}

// bucketOf returns the index in counts of a duration d.
func bucketOf(d time.Duration) int {
	i := 0
	for i < len(latencyBounds) && d > latencyBounds[i] {
		i++
	}
	return i
}

func (h *latencyHistogram) observe(d time.Duration) {
	i := bucketOf(d)
	h.sum.Add(int64(d))
	h.counts[i].Add(1)
}

// observeTraced is observe that also makes the observation its bucket's
// exemplar, with the trace traceID, ended at the time at.
func (h *latencyHistogram) observeTraced(d time.Duration, traceID [16]byte, at time.Time) {
	i := bucketOf(d)
	h.sum.Add(int64(d))
	h.counts[i].Add(1)
	h.exemplars[i].store(traceID, d, at)
}

// exemplarSlot holds one exemplar as a sequence lock of atomics: no lock
// to wait for and no allocation. seq is odd while a writer fills the
// slot; a writer that finds it odd (or loses the race to make it odd)
// leaves its exemplar out, as the other one is just as recent. A reader
// takes the fields only when seq is even and the same before and after.
// seq 0 means the slot was never written.
type exemplarSlot struct {
	seq            atomic.Uint64
	traceHi, trace atomic.Uint64 // the trace id's first and last 8 bytes
	nanos          atomic.Int64  // the observed duration
	at             atomic.Int64  // when it ended, in Unix nanoseconds
}

func (e *exemplarSlot) store(traceID [16]byte, d time.Duration, at time.Time) {
	s := e.seq.Load()
	if s&1 != 0 || !e.seq.CompareAndSwap(s, s+1) {
		return
	}
	e.traceHi.Store(binary.BigEndian.Uint64(traceID[:8]))
	e.trace.Store(binary.BigEndian.Uint64(traceID[8:]))
	e.nanos.Store(int64(d))
	e.at.Store(at.UnixNano())
	e.seq.Store(s + 2)
}

// load returns the slot's exemplar, and false when it has none or a
// writer kept it busy through every try.
func (e *exemplarSlot) load() (Exemplar, bool) {
	for range 64 {
		s := e.seq.Load()
		if s == 0 {
			return Exemplar{}, false
		}
		if s&1 != 0 {
			runtime.Gosched()
			continue
		}
		var id [16]byte
		binary.BigEndian.PutUint64(id[:8], e.traceHi.Load())
		binary.BigEndian.PutUint64(id[8:], e.trace.Load())
		d, at := time.Duration(e.nanos.Load()), e.at.Load()
		if e.seq.Load() == s {
			return Exemplar{TraceID: hex.EncodeToString(id[:]), ValueSeconds: d.Seconds(), Time: time.Unix(0, at)}, true
		}
	}
	return Exemplar{}, false
}

// Histogram is a latency distribution in Prometheus' shape: cumulative
// buckets, a total count and a sum.
type Histogram struct {
	// Count is the number of observations, in every bucket and above the
	// last one (Prometheus' le="+Inf" bucket, which JSON cannot name).
	Count int64 `json:"count"`
	// SumSeconds is the sum of every observed duration, in seconds.
	SumSeconds float64 `json:"sumSeconds"`
	// Buckets are cumulative, in increasing order of bound, one per
	// LatencyBuckets entry.
	Buckets []Bucket `json:"buckets"`
	// Exemplars are, in increasing order of value, at most one per bucket
	// and one above the last bound: each the latest traced request that
	// fell there (RouteStats.ObserveTraced). Nil when no request was
	// traced; absent from JSON then.
	Exemplars []Exemplar `json:"exemplars,omitempty"`
}

// Exemplar is one request of a histogram's bucket that can be looked up
// in the traces: OpenMetrics' exemplar, which Prometheus shows beside the
// bucket.
type Exemplar struct {
	// TraceID is the request's OpenTelemetry trace id, 32 lower-case hex
	// digits.
	TraceID string `json:"traceId"`
	// ValueSeconds is the request's duration, in seconds: it lies in the
	// bucket the exemplar belongs to.
	ValueSeconds float64 `json:"value"`
	// Time is when the request ended, by package time.
	Time time.Time `json:"time"`
}

// Bucket is one cumulative histogram bucket.
type Bucket struct {
	// UpperBoundSeconds is the bucket's upper bound ("le"), in seconds.
	UpperBoundSeconds float64 `json:"le"`
	// Count is the number of observations at most UpperBoundSeconds.
	Count int64 `json:"count"`
}

// snapshot reads the histogram. Count is the sum of the buckets, so the
// result is self-consistent even while requests are observed; SumSeconds
// may be a few observations behind or ahead of it.
func (h *latencyHistogram) snapshot() Histogram {
	out := Histogram{Buckets: make([]Bucket, len(latencyBounds))}
	var cum int64
	for i, b := range latencyBounds {
		cum += h.counts[i].Load()
		out.Buckets[i] = Bucket{UpperBoundSeconds: b.Seconds(), Count: cum}
	}
	out.Count = cum + h.counts[len(latencyBounds)].Load()
	out.SumSeconds = time.Duration(h.sum.Load()).Seconds()
	for i := range h.exemplars {
		if e, ok := h.exemplars[i].load(); ok {
			out.Exemplars = append(out.Exemplars, e)
		}
	}
	return out
}

// statusCounts counts responses by HTTP status code. Counting a code seen
// before takes an atomic load, a map read and an atomic add; only the
// first response with a new code takes the lock, to publish a grown copy
// of the map. Its zero value is ready.
type statusCounts struct {
	mu    sync.Mutex                            // serialises publishing a new map
	codes atomic.Pointer[map[int]*atomic.Int64] // never modified once published
}

func (s *statusCounts) add(code int) {
	if p := s.codes.Load(); p != nil {
		if c, ok := (*p)[code]; ok {
			c.Add(1)
			return
		}
	}
	s.mu.Lock()
	var c *atomic.Int64
	old := s.codes.Load()
	if old != nil {
		c = (*old)[code]
	}
	if c == nil {
		next := make(map[int]*atomic.Int64, 1+len(codesOf(old)))
		maps.Copy(next, codesOf(old))
		c = new(atomic.Int64)
		next[code] = c
		s.codes.Store(&next)
	}
	s.mu.Unlock()
	c.Add(1)
}

func codesOf(p *map[int]*atomic.Int64) map[int]*atomic.Int64 {
	if p == nil {
		return nil
	}
	return *p
}

// get returns the count of code.
func (s *statusCounts) get(code int) int64 {
	if c, ok := codesOf(s.codes.Load())[code]; ok {
		return c.Load()
	}
	return 0
}

// snapshot returns every code seen with its count (an empty, non-nil map
// when none was).
func (s *statusCounts) snapshot() map[int]int64 {
	codes := codesOf(s.codes.Load())
	out := make(map[int]int64, len(codes))
	for code, c := range codes {
		out[code] = c.Load()
	}
	return out
}
