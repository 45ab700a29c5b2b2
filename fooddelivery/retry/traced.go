package retry

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

// Traced wraps the call of a retry loop (Retrier.Do, Policy.Do) so that
// every attempt after the first records tracing.EventAttempt on the span
// in its context, with its number (tracing.AttrAttempt) and the wait since
// the previous attempt ended (tracing.AttrBackoffMs, in milliseconds): a
// trace then shows each retry the loop made, whoever wrote the loop. A
// context without a recording span records nothing.
func Traced(call func(ctx context.Context, attempt int) error) func(ctx context.Context, attempt int) error {
	var mu sync.Mutex
	var lastEnd time.Time
	return func(ctx context.Context, attempt int) error {
		if attempt > 1 {
			mu.Lock()
			var backoff time.Duration
			if !lastEnd.IsZero() {
				backoff = time.Since(lastEnd)
			}
			mu.Unlock()
			tracing.Event(ctx, tracing.EventAttempt, attribute.Int(tracing.AttrAttempt, attempt),
				attribute.Float64(tracing.AttrBackoffMs, float64(backoff)/float64(time.Millisecond)))
		}
		err := call(ctx, attempt)
		mu.Lock()
		lastEnd = time.Now()
		mu.Unlock()
		return err
	}
}
