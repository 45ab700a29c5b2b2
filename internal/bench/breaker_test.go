package bench

import (
	"context"
	"log/slog"
	"testing"

	"github.com/sony/gobreaker/v2"

	breaker "github.com/gophereats/resilience/solutions/05-breaker"
)

// The breaker's success path: a call that succeeds, through a closed
// breaker with its defaults. The lab's breaker gets a discard logger so
// that nothing it might log costs anything here (on this path it logs
// nothing anyway).

func newReferenceBreaker() *breaker.CircuitBreaker {
	return breaker.New(breaker.Settings{Logger: slog.New(slog.DiscardHandler)})
}

func BenchmarkBreaker(b *testing.B) {
	ctx := context.Background()
	pair(b, "gobreaker", func(b *testing.B) {
		cb := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{})
		calls := 0
		call := func() (struct{}, error) { calls++; return struct{}{}, nil }
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cb.Execute(call); err != nil {
				b.Fatalf("gobreaker: Execute of a call that succeeds returned %v", err)
			}
		}
		ran(b, "gobreaker: the call ran", calls)
		checkGobreakerClosed(b, cb)
	}, func(b *testing.B) {
		cb := newReferenceBreaker()
		calls := 0
		call := func(context.Context) error { calls++; return nil }
		b.ReportAllocs()
		for b.Loop() {
			if err := cb.Do(ctx, call); err != nil {
				b.Fatalf("reference breaker: Do of a call that succeeds returned %v", err)
			}
		}
		ran(b, "reference breaker: the call ran", calls)
		checkReferenceClosed(b, cb)
	})
}

func BenchmarkBreakerParallel(b *testing.B) {
	ctx := context.Background()
	pair(b, "gobreaker", func(b *testing.B) {
		cb := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{})
		calls := parallel(b, func(_ int, pb *testing.PB) int {
			calls := 0
			call := func() (struct{}, error) { calls++; return struct{}{}, nil }
			for pb.Next() {
				if _, err := cb.Execute(call); err != nil {
					b.Errorf("gobreaker: Execute of a call that succeeds returned %v", err)
					break
				}
			}
			return calls
		})
		ran(b, "gobreaker: the call ran", calls)
		checkGobreakerClosed(b, cb)
	}, func(b *testing.B) {
		cb := newReferenceBreaker()
		calls := parallel(b, func(_ int, pb *testing.PB) int {
			calls := 0
			call := func(context.Context) error { calls++; return nil }
			for pb.Next() {
				if err := cb.Do(ctx, call); err != nil {
					b.Errorf("reference breaker: Do of a call that succeeds returned %v", err)
					break
				}
			}
			return calls
		})
		ran(b, "reference breaker: the call ran", calls)
		checkReferenceClosed(b, cb)
	})
}

func checkGobreakerClosed(b *testing.B, cb *gobreaker.CircuitBreaker[struct{}]) {
	b.Helper()
	if s := cb.State(); s != gobreaker.StateClosed {
		b.Fatalf("gobreaker: %s after %d successful calls, want closed", s, b.N)
	}
}

func checkReferenceClosed(b *testing.B, cb *breaker.CircuitBreaker) {
	b.Helper()
	if s := cb.State(); s != breaker.Closed {
		b.Fatalf("reference breaker: %s after %d successful calls, want closed", s, b.N)
	}
}
