package retrybudgets_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/retry"
	retrybudgets "github.com/gophereats/resilience/labs/04-retry-budgets"
)

func TestStep4OverloadedPaymentIsNotRetried(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4, Stuck: "checkouts were still being retried"}, func(t *testing.T) {
		const checkouts = 10
		sys := start(t, generous(), map[string]int{"payment": 1})
		// Payment takes a second per charge and handles one at a time: the
		// other nine are turned away with 503 and "don't retry".
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Latency: time.Second}))

		var wg sync.WaitGroup
		var overloaded atomic.Int64
		for range checkouts {
			wg.Go(func() {
				_, err := sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
				if errors.Is(err, fooddelivery.ErrOverloaded) {
					overloaded.Add(1)
				}
			})
		}
		wg.Wait()

		payments := labtest.Charges(sys)
		rejected := sys.Metrics.Route("payment", "POST /charges").Rejected.Load()
		if payments != checkouts {
			t.Fatalf("step 4: %d checkouts at once against a payment service that handles one at a time: payment received "+
				"%d calls and turned away %d with 503 and %s.\n"+
				"An overloaded server asks not to be retried; retrying only adds to its load. Want %d calls: one per checkout.",
				checkouts, payments, rejected, fooddelivery.HeaderDontRetry, checkouts)
		}
		assert.Equal(t, int64(checkouts-1), overloaded.Load(),
			"step 4: the turned-away checkouts fail as overloaded (errors.Is(err, fooddelivery.ErrOverloaded))")
	})
}

func TestStep4RetryableRespectsTheSignal(t *testing.T) {
	down := &fooddelivery.CallError{Service: "payment", Status: 502, Err: fooddelivery.ErrUnavailable}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		// Retried: the dependency may answer next time.
		{"unavailable", down, true},
		{"dependency timed out", &fooddelivery.CallError{Service: "payment", Err: fooddelivery.ErrTimeout}, true},
		{"attempt's own deadline passed", &fooddelivery.CallError{Service: "payment", Err: fooddelivery.ErrTimeout, Cause: context.DeadlineExceeded}, true},
		{"context deadline exceeded", fmt.Errorf("charge: %w", context.DeadlineExceeded), true},
		// Final: the answer says so, or asking again cannot help.
		{"overloaded, don't retry", &fooddelivery.CallError{Service: "payment", Status: 503, DontRetry: true, Err: fooddelivery.ErrOverloaded}, false},
		{"overloaded, without the header", &fooddelivery.CallError{Service: "payment", Status: 503, Err: fooddelivery.ErrOverloaded}, false},
		{"unavailable, a layer below already retried", &fooddelivery.CallError{Service: "order", Status: 502, DontRetry: true, Err: fooddelivery.ErrUnavailable}, false},
		{"marked don't retry", retry.MarkDontRetry(down), false},
		{"circuit open", fooddelivery.ErrCircuitOpen, false},
		{"bulkhead full", fmt.Errorf("payment: %w", fooddelivery.ErrBulkheadFull), false},
		{"card declined", &fooddelivery.CallError{Service: "payment", Status: 402, Err: fooddelivery.ErrRejected}, false},
		{"not found", &fooddelivery.CallError{Service: "menu", Status: 404, Err: fooddelivery.ErrNotFound}, false},
		{"unauthorized", &fooddelivery.CallError{Service: "auth", Status: 401, Err: fooddelivery.ErrUnauthorized}, false},
		{"caller cancelled", context.Canceled, false},
		{"caller cancelled mid-request", &fooddelivery.CallError{Service: "payment", Err: fooddelivery.ErrUnavailable, Cause: context.Canceled}, false},
		{"an error nobody named", errors.New("malformed answer from payment"), false},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
				if got := retrybudgets.Retryable(c.err); got != c.want {
					t.Fatalf("step 4: case %d of %d, Retryable(%s: %v) = %v, want %v (see the list of final errors in step 4)",
						i+1, len(cases), c.name, c.err, got, c.want)
				}
			})
		})
	}
}
