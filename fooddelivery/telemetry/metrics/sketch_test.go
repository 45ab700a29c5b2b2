package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// trueQuantile is the nearest-rank q-quantile of sorted durations.
func trueQuantile(sorted []time.Duration, q float64) time.Duration {
	rank := max(int(math.Ceil(q*float64(len(sorted))-1e-9)), 1)
	return sorted[rank-1]
}

func TestSketchQuantilesWithinTheirAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := map[string]func() time.Duration{
		"log-uniform 2µs..60s": func() time.Duration {
			return time.Duration(math.Exp(math.Log(2e3) + rng.Float64()*(math.Log(60e9)-math.Log(2e3))))
		},
		"fast, with 2% cut off at a 2s timeout": func() time.Duration {
			if rng.Float64() < 0.02 {
				return 2*time.Second + time.Duration(rng.IntN(40))*time.Millisecond
			}
			return time.Duration(1+rng.IntN(20)) * time.Millisecond
		},
		"one value": func() time.Duration { return 487 * time.Millisecond },
	}
	for name, draw := range shapes {
		for _, n := range []int{1, 7, 100, 10000} {
			var f fineLatency
			ds := make([]time.Duration, n)
			for i := range ds {
				ds[i] = draw()
				f.observe(ds[i])
			}
			slices.Sort(ds)
			s := f.snapshot()
			if s.Count() != int64(n) {
				t.Fatalf("%s, %d observations: the sketch counts %d", name, n, s.Count())
			}
			for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
				got, ok := s.Quantile(q)
				want := trueQuantile(ds, q)
				if err := math.Abs(float64(got-want)) / float64(want); !ok || err > SketchAccuracy {
					t.Errorf("%s, %d observations: p%g reads %v, the true one is %v (off by %.2f%%, more than %g%%)",
						name, n, q*100, got, want, err*100, SketchAccuracy*100)
				}
			}
		}
	}
}

func TestSketchSubtractsAndAdds(t *testing.T) {
	var a, b fineLatency
	for _, ms := range []int{1, 1, 5, 300} {
		a.observe(time.Duration(ms) * time.Millisecond)
	}
	early := a.snapshot()
	for _, ms := range []int{2000, 2000, 2000, 5} {
		a.observe(time.Duration(ms) * time.Millisecond)
	}
	b.observe(30 * time.Second)
	window := a.snapshot().Sub(early)
	if window.Count() != 4 {
		t.Fatalf("the window between two snapshots holds %d observations, want the 4 made between them", window.Count())
	}
	if p99, _ := window.Quantile(0.99); math.Abs(p99.Seconds()-2) > 2*SketchAccuracy {
		t.Errorf("p99 of three 2s calls and one 5ms call reads %v, want 2s within %g%%", p99, SketchAccuracy*100)
	}
	both := window.Add(b.snapshot())
	if p99, _ := both.Quantile(0.99); math.Abs(p99.Seconds()-30)/30 > SketchAccuracy {
		t.Errorf("adding a route with one 30s call: p99 reads %v, want 30s", p99)
	}
	if !both.Sub(b.snapshot()).Equal(window) {
		t.Errorf("(w + b) - b differs from w")
	}
	if _, ok := (LatencySketch{}).Quantile(0.99); ok {
		t.Errorf("an empty sketch reads a quantile")
	}
	if got := early.Sub(a.snapshot()).Count(); got != 0 {
		t.Errorf("subtracting a later sketch leaves %d observations, want 0 (no negative counts)", got)
	}
}

func TestSketchBucketsCoverMicrosecondsToAnHour(t *testing.T) {
	if sketchBuckets > 600 {
		t.Errorf("%d buckets per route, want at most 600 (memory per route)", sketchBuckets)
	}
	if got := sketchValue(sketchIndex(sketchMax)); math.Abs(float64(got-sketchMax))/float64(sketchMax) > SketchAccuracy {
		t.Errorf("an hour reads %v", got)
	}
	if got := sketchIndex(0); got != 0 || sketchValue(0) != 0 {
		t.Errorf("0 falls in bucket %d and reads %v, want bucket 0 reading 0", got, sketchValue(0))
	}
	if got := sketchIndex(100 * time.Hour); got != sketchBuckets-1 {
		t.Errorf("100h falls in bucket %d, want the last, %d", got, sketchBuckets-1)
	}
}
