package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	hedging "github.com/gophereats/resilience/solutions/09-hedging"
)

// The hedging latency tracker of lab 09, alone: Observe, after every read,
// and Delay, before every read, on a full window of 100, 2,000 (the
// running system's) and 20,000 latencies at the p95. The latencies are
// varied and repeatable: 20ms plus an exponential tail of mean 15ms, from
// a seeded generator, drawn before the timer starts.
var trackerWindows = []int{100, 2_000, 20_000}

const hedgePercentile = 0.95

// latencies holds the latencies the benchmarks observe, in the order they
// observe them (a power of two, to wrap with a mask).
var latencies = func() []time.Duration {
	r := rand.New(rand.NewPCG(9, 9))
	l := make([]time.Duration, 1<<16)
	for i := range l {
		l[i] = 20*time.Millisecond + time.Duration(r.ExpFloat64()*float64(15*time.Millisecond))
	}
	return l
}()

// fullTracker returns a tracker whose window is full, and the delay it
// must then give: the nearest-rank p95 of the latencies it observed.
func fullTracker(window int) (*hedging.LatencyTracker, time.Duration) {
	t := hedging.NewLatencyTracker(window, hedgePercentile, 200*time.Millisecond)
	for i := range window {
		t.Observe(latencies[i&(len(latencies)-1)])
	}
	return t, p95(latencies[:window])
}

// p95 is the nearest-rank 95th percentile of window.
func p95(window []time.Duration) time.Duration {
	sorted := slices.Sorted(slices.Values(window))
	rank := int(math.Ceil(hedgePercentile*float64(len(sorted)) - 1e-9)) // 95.00000000000001 is rank 95
	return sorted[rank-1]
}

// lastObserved returns the window latencies a tracker observed last when
// it observed latencies in order (wrapping around), up to index to.
func lastObserved(window, to int) []time.Duration {
	w := make([]time.Duration, window)
	for i := range w {
		w[i] = latencies[(to-window+i)&(len(latencies)-1)]
	}
	return w
}

// checkDelay fails unless the tracker's delay is one of the latencies it
// could have observed.
func checkDelay(b *testing.B, window int, d time.Duration) {
	b.Helper()
	lo, hi := latencies[0], latencies[0]
	for _, l := range latencies {
		lo, hi = min(lo, l), max(hi, l)
	}
	if d < lo || d > hi {
		b.Fatalf("reference tracker, window %d: Delay is %v, want the p95 of latencies in [%v, %v]", window, d, lo, hi)
	}
}

func BenchmarkLatencyTracker(b *testing.B) {
	for _, window := range trackerWindows {
		w := "window=" + strconv.Itoa(window)
		b.Run("op=observe/"+w, func(b *testing.B) {
			alone(b, func(b *testing.B) {
				t, _ := fullTracker(window)
				b.ReportAllocs()
				i := window
				for b.Loop() {
					t.Observe(latencies[i&(len(latencies)-1)])
					i++
				}
				// Untimed: a whole window more, so that every sample the
				// window held has been evicted once, whatever b.N was.
				for range window {
					t.Observe(latencies[i&(len(latencies)-1)])
					i++
				}
				if got, want := t.Delay(), p95(lastObserved(window, i)); got != want {
					b.Fatalf("reference tracker, window %d: after %d more latencies Delay is %v, want the p95 of the last %d, %v",
						window, b.N+window, got, window, want)
				}
			})
		})
		b.Run("op=delay/"+w, func(b *testing.B) {
			alone(b, func(b *testing.B) {
				t, want := fullTracker(window)
				b.ReportAllocs()
				var d time.Duration
				for b.Loop() {
					d = t.Delay()
				}
				if d != want {
					b.Fatalf("reference tracker, window %d: Delay is %v on a full window, want its p95, %v", window, d, want)
				}
			})
		})
	}
}

func BenchmarkLatencyTrackerParallel(b *testing.B) {
	for _, window := range trackerWindows {
		w := "window=" + strconv.Itoa(window)
		b.Run("op=observe/"+w, func(b *testing.B) {
			alone(b, func(b *testing.B) {
				t, _ := fullTracker(window)
				n := parallel(b, func(g int, pb *testing.PB) int {
					i := 0
					for ; pb.Next(); i++ {
						t.Observe(latencies[(window+g*7919+i)&(len(latencies)-1)])
					}
					return i
				})
				ran(b, "reference tracker: Observe ran", n)
				checkDelay(b, window, t.Delay())
			})
		})
		b.Run("op=delay/"+w, func(b *testing.B) {
			alone(b, func(b *testing.B) {
				t, want := fullTracker(window)
				n := parallel(b, func(g int, pb *testing.PB) int {
					i := 0
					var d time.Duration
					for ; pb.Next(); i++ {
						d = t.Delay()
					}
					if i > 0 && d != want {
						b.Errorf("reference tracker, window %d: Delay is %v on a full window, want its p95, %v", window, d, want)
					}
					return i
				})
				ran(b, "reference tracker: Delay ran", n)
			})
		})
	}
}
