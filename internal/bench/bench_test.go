package bench

import (
	"sync/atomic"
	"testing"
)

// The names of the sub-benchmarks make one benchstat table: each row is a
// benchmark and the anchor it stands beside (vs=...), the columns are
// impl=anchor (the baseline) and impl=reference. A reference with no anchor
// has the reference column only.

// pair measures the anchor, then the reference, as
// vs=<anchor>/impl=anchor and vs=<anchor>/impl=reference.
func pair(b *testing.B, vs string, anchor, reference func(b *testing.B)) {
	b.Run("vs="+vs, func(b *testing.B) {
		b.Run("impl=anchor", anchor)
		b.Run("impl=reference", reference)
	})
}

// alone measures a reference that has no anchor, as impl=reference.
func alone(b *testing.B, reference func(b *testing.B)) {
	b.Run("impl=reference", reference)
}

// parallel runs body in b.RunParallel's goroutines after b.ResetTimer and
// returns how many iterations they ran in all, which must be b.N. body
// gets the goroutine's number (0, 1, ...) and its testing.PB; it must not
// call b.Fatal (use b.Error).
func parallel(b *testing.B, body func(g int, pb *testing.PB) int) int {
	var next, total atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := int(next.Add(1) - 1)
		total.Add(int64(body(g, pb)))
	})
	b.StopTimer()
	return int(total.Load())
}

// ran fails the benchmark unless what happened n times, once per
// iteration.
func ran(b *testing.B, what string, n int) {
	b.Helper()
	if b.Failed() {
		b.FailNow()
	}
	if n != b.N {
		b.Fatalf("%s %d times in %d iterations, want once per iteration", what, n, b.N)
	}
}
