package retrybudgets_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	retrybudgets "github.com/gophereats/resilience/labs/04-retry-budgets"
)

func TestStep3SpentBudgetFailsAtOnceWithTheOriginalError(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3, Stuck: "a call was still being retried"}, func(t *testing.T) {
		budget := retrybudgets.NewRetryBudget(0.1, 0, 2)
		r := &retrybudgets.BudgetedRetry{Budget: budget}
		down := &fooddelivery.CallError{Service: "payment", Status: 503, Code: "injected", Err: fooddelivery.ErrUnavailable}
		fail := func(calls *int) func(context.Context, int) error {
			return func(context.Context, int) error { *calls++; return down }
		}

		first := 0
		r.Do(context.Background(), "first", fail(&first))
		require.Equal(t, 3, first, "step 3: a budget holding 2 retries lets the first failing call make 3 attempts")

		second := 0
		began := time.Now()
		err := r.Do(context.Background(), "second", fail(&second))
		took := time.Since(began)
		if second != 1 || took > 0 {
			t.Fatalf("step 3: the budget was spent, yet the next failing call made %d attempts and took %v.\n"+
				"With no retry left, fail at once: one attempt, no backoff.", second, took)
		}
		var ce *fooddelivery.CallError
		if !errors.Is(err, fooddelivery.ErrUnavailable) || !errors.As(err, &ce) || ce.Status != 503 || ce.Code != "injected" {
			t.Fatalf("step 3: the budget was spent and the call failed with %q; callers must see the original error "+
				"(payment unavailable, HTTP 503), which says what is wrong with payment, not a budget error that hides it.", err)
		}
		assert.True(t, fooddelivery.DontRetry(err), "step 3: the budget was spent by the first call's %d attempts; the second call "+
			"made %d attempt and returned %q, not marked \"don't retry\". A failure the payment client gave up on says so to the layers above.",
			first, second, err)
	})
}

func TestStep3SpentBudgetInTheSystem(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3, Stuck: "a checkout was still being retried"}, func(t *testing.T) {
		sys := start(t, retrybudgets.NewRetryBudget(0, 0, 0), nil) // no retries at all
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", paymentDown))

		began := time.Now()
		_, err := sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		took := time.Since(began)
		var ce *fooddelivery.CallError
		require.ErrorAs(t, err, &ce, "step 3: payment was down; the checkout must fail")
		if labtest.Charges(sys) != 1 || took > 0 || ce.Code != "payment_unavailable" {
			t.Fatalf("step 3: with an empty budget a checkout called payment %d times, took %v and failed with %q.\n"+
				"Want one call, no waiting, and the order service reporting payment_unavailable: the original error, passed up.",
				labtest.Charges(sys), took, err)
		}
	})
}
