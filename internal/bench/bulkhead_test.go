package bench

import (
	"context"
	"testing"

	"golang.org/x/sync/semaphore"

	bulkhead "github.com/gophereats/resilience/solutions/06-bulkhead"
)

// The bulkhead's success path: a free slot taken and given back around a
// call that succeeds. The limit is far above the goroutines that call, so
// nothing waits and nothing is refused.
const bulkheadSlots = 64

// limiter is what the three bulkheads have in common.
type limiter interface {
	Do(ctx context.Context, call func(ctx context.Context) error) error
}

// weighted is golang.org/x/sync/semaphore used as a bulkhead.
type weighted struct{ s *semaphore.Weighted }

func (w weighted) Do(ctx context.Context, call func(ctx context.Context) error) error {
	if err := w.s.Acquire(ctx, 1); err != nil {
		return err
	}
	defer w.s.Release(1)
	return call(ctx)
}

func newChanSemaphore() limiter { return ChanSemaphore(make(chan struct{}, bulkheadSlots)) }
func newWeighted() limiter      { return weighted{semaphore.NewWeighted(bulkheadSlots)} }
func newReferenceBulkhead() limiter {
	return bulkhead.New("bench", bulkheadSlots, 0)
}

func BenchmarkBulkhead(b *testing.B) {
	pair(b, "chan-semaphore", benchLimiter("channel semaphore", newChanSemaphore), benchLimiter("reference bulkhead", newReferenceBulkhead))
	pair(b, "x-sync-semaphore", benchLimiter("x/sync semaphore", newWeighted), benchLimiter("reference bulkhead", newReferenceBulkhead))
}

func BenchmarkBulkheadParallel(b *testing.B) {
	pair(b, "chan-semaphore", benchLimiterParallel("channel semaphore", newChanSemaphore), benchLimiterParallel("reference bulkhead", newReferenceBulkhead))
	pair(b, "x-sync-semaphore", benchLimiterParallel("x/sync semaphore", newWeighted), benchLimiterParallel("reference bulkhead", newReferenceBulkhead))
}

func benchLimiter(name string, newLimiter func() limiter) func(b *testing.B) {
	return func(b *testing.B) {
		ctx := context.Background()
		l := newLimiter()
		calls := 0
		call := func(context.Context) error { calls++; return nil }
		b.ReportAllocs()
		for b.Loop() {
			if err := l.Do(ctx, call); err != nil {
				b.Fatalf("%s: Do with %d free slots returned %v", name, bulkheadSlots, err)
			}
		}
		ran(b, name+": the call ran", calls)
	}
}

func benchLimiterParallel(name string, newLimiter func() limiter) func(b *testing.B) {
	return func(b *testing.B) {
		ctx := context.Background()
		l := newLimiter()
		calls := parallel(b, func(_ int, pb *testing.PB) int {
			calls := 0
			call := func(context.Context) error { calls++; return nil }
			for pb.Next() {
				if err := l.Do(ctx, call); err != nil {
					b.Errorf("%s: Do with %d slots returned %v", name, bulkheadSlots, err)
					break
				}
			}
			return calls
		})
		ran(b, name+": the call ran", calls)
	}
}
