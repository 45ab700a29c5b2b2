package retry_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/retry"
)

var errDown = &fooddelivery.CallError{Service: "payment", Status: 503, Err: fooddelivery.ErrUnavailable}

func TestRetriesTransientFailuresUpToAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		err := retry.Policy{}.Do(context.Background(), "order-1", func(ctx context.Context, attempt int) error {
			calls++
			assert.Equal(t, calls, attempt)
			return errDown
		})
		assert.Same(t, errDown, err, "the last error comes back unchanged")
		assert.Equal(t, retry.DefaultAttempts, calls)
	})
}

func TestStopsOnSuccessAndOnFinalErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		final := []error{
			&fooddelivery.CallError{Service: "payment", Status: 503, DontRetry: true, Err: fooddelivery.ErrOverloaded},
			fooddelivery.ErrCircuitOpen,
			fooddelivery.ErrBulkheadFull,
			&fooddelivery.CallError{Service: "payment", Status: 404, Err: fooddelivery.ErrNotFound},
			context.Canceled,
		}
		for _, e := range final {
			calls := 0
			err := retry.Policy{Attempts: 5}.Do(context.Background(), "k", func(context.Context, int) error { calls++; return e })
			assert.Equal(t, 1, calls, "%v must not be retried", e)
			assert.Equal(t, e, err)
		}
		calls := 0
		err := retry.Policy{}.Do(context.Background(), "k", func(context.Context, int) error {
			calls++
			if calls == 2 {
				return nil
			}
			return errDown
		})
		assert.NoError(t, err)
		assert.Equal(t, 2, calls)
	})
}

func TestBackoffIsCappedJitteredAndDeterministic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := retry.Policy{Base: 100 * time.Millisecond, Cap: time.Second, Seed: 7}
		for n := 1; n <= 100; n++ {
			d := p.Backoff("order-9", n)
			ceiling := min(time.Second, 100*time.Millisecond<<min(n-1, 20))
			assert.True(t, d >= 0 && d < ceiling, "retry %d waited %v, ceiling %v", n, d, ceiling)
			assert.Equal(t, d, p.Backoff("order-9", n), "the same key and retry give the same wait")
		}
		assert.NotEqual(t, p.Backoff("order-1", 3), p.Backoff("order-2", 3), "different calls are spread apart")
	})
}

func TestBackoffBelowTheFirstRetryIsTheFirstRetrysWait(t *testing.T) {
	p := retry.Policy{Seed: 7}
	for _, n := range []int{0, -1, -100} {
		assert.Equal(t, p.Backoff("order-9", 1), p.Backoff("order-9", n),
			"retry %d is read as retry 1 instead of panicking on a negative shift", n)
	}
}

func TestWaitEndsWhenTheContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		start := time.Now()
		p := retry.Policy{Attempts: 10, Base: time.Second, Cap: time.Minute}
		err := p.Do(ctx, "k", func(context.Context, int) error { return errDown })
		assert.ErrorIs(t, err, errDown)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.LessOrEqual(t, time.Since(start), 150*time.Millisecond)
	})
}

func TestAttemptHeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := http.Header{}
		assert.Equal(t, 1, retry.Attempt(h))
		h.Set(fooddelivery.HeaderAttempt, "3")
		assert.Equal(t, 3, retry.Attempt(h))
		h.Set(fooddelivery.HeaderAttempt, "-2")
		assert.Equal(t, 1, retry.Attempt(h))
	})
}

// TestBackoffIsTheDrawOfTheKeyAndAllocatesNothing: the wait is the
// documented draw of key+"#retry", and computing it allocates nothing,
// however long the key (a retried call computes one per retry).
func TestBackoffIsTheDrawOfTheKeyAndAllocatesNothing(t *testing.T) {
	p := retry.Policy{Base: 100 * time.Millisecond, Cap: 2 * time.Second, Seed: 7}
	long := strings.Repeat("order-", 40) + strconv.Itoa(p.Attempts) // built at run time, 241 bytes
	for _, key := range []string{"", "order-9", long} {
		for n := 1; n <= 6; n++ {
			limit := min(2*time.Second, 100*time.Millisecond<<(n-1))
			want := time.Duration(fooddelivery.Draw(7, key+"#retry", n) * float64(limit))
			assert.Equal(t, want, p.Backoff(key, n), "retry %d of %q", n, key)
		}
	}
	var sum time.Duration
	if allocs := testing.AllocsPerRun(100, func() { sum += p.Backoff(long, 3) }); allocs != 0 {
		t.Errorf("Backoff of a %d-byte key allocates %v times per call, want 0", len(long), allocs)
	}
	_ = sum
}
