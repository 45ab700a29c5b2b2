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
	"github.com/gophereats/resilience/fooddelivery/retry"
	retrybudgets "github.com/gophereats/resilience/labs/04-retry-budgets"
)

func TestStep1OnlyTheLayerNextToPaymentRetries(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "a checkout was still being retried"}, func(t *testing.T) {
		sys := start(t, generous(), nil)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", paymentDown))

		ok := tap(t, sys)
		require.False(t, ok, "step 1: payment answered 503 to every charge, yet the checkout succeeded")
		payments, orders := labtest.Charges(sys), labtest.OrderCalls(sys)
		if payments < retry.DefaultAttempts && orders == 1 {
			t.Fatalf("step 1: one tap with payment down reached the order service once and payment %d time(s): "+
				"the payment client did not retry.\n"+
				"Keep a retrying layer at PaymentClient, the layer next to payment: it makes %d attempts.",
				payments, retry.DefaultAttempts)
		}
		if orders == 1 && payments > retry.DefaultAttempts {
			t.Fatalf("step 1: one tap with payment down reached the order service once and payment %d times: one layer "+
				"retried, and made %d attempts where it may make %d.\n"+
				"Attempts is the number of attempts in all, the first included: stop when attempt >= Attempts "+
				"(the first attempt is number 1), not after one more.",
				payments, payments, retry.DefaultAttempts)
		}
		if payments != retry.DefaultAttempts || orders != 1 {
			t.Fatalf("step 1: one tap with payment down reached the order service %d times and payment %d times "+
				"(more than one layer retried; all three make %d x %d x %d).\n"+
				"Retry at one layer only, the payment client next to payment: 1 call to the order service and %d to payment. "+
				"The gateway and the order service pass the failure up.",
				orders, payments, retry.DefaultAttempts, retry.DefaultAttempts, retry.DefaultAttempts, retry.DefaultAttempts)
		}
		// The order service retrying its payment client would send payment
		// the same 3 calls; the README puts the retries next to payment.
		layers := retrybudgets.Layers(generous())
		if layers.Gateway != nil || layers.Order != nil || layers.PaymentClient == nil {
			retrying := 0
			for _, l := range []retry.Retrier{layers.Gateway, layers.Order, layers.PaymentClient} {
				if l != nil {
					retrying++
				}
			}
			t.Fatalf("step 1: Layers gives %d of the 3 layers a retry loop: the gateway: %v, the order service: %v, the payment client: %v; "+
				"want the payment client only (Gateway and Order nil).",
				retrying, layers.Gateway != nil, layers.Order != nil, layers.PaymentClient != nil)
		}
	})
}

// TestStep1DoKeepsItsAttemptsAndBackoff: the loop makes the attempts it is
// configured for, waits the policy's backoff for this call's key between
// them, and passes a final error (a declined card) up as it came.
func TestStep1DoKeepsItsAttemptsAndBackoff(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "a call was still being retried"}, func(t *testing.T) {
		down := &fooddelivery.CallError{Service: "payment", Status: 503, Err: fooddelivery.ErrUnavailable}
		for _, attempts := range []int{1, 5} {
			r := &retrybudgets.BudgetedRetry{Attempts: attempts, Budget: generous()}
			calls := 0
			r.Do(context.Background(), "tries", func(context.Context, int) error { calls++; return down })
			if calls != attempts {
				t.Fatalf("step 1: a BudgetedRetry with Attempts: %d made %d attempts against a payment answering 503; want %d.\n"+
					"Use r.Attempts (zero means retry.DefaultAttempts).", attempts, calls, attempts)
			}
		}

		// Fake time is exact: each attempt starts when the previous backoff ends.
		p := retry.Policy{Base: time.Second, Cap: 10 * time.Second, Seed: 7}
		r := &retrybudgets.BudgetedRetry{Budget: generous(), Backoff: p}
		for _, key := range []string{"order-a", "order-b"} {
			began := time.Now()
			var at []time.Duration
			r.Do(context.Background(), key, func(context.Context, int) error {
				at = append(at, time.Since(began))
				return down
			})
			want := []time.Duration{0, p.Backoff(key, 1), p.Backoff(key, 1) + p.Backoff(key, 2)}
			if len(at) != len(want) || at[1] != want[1] || at[2] != want[2] {
				last := time.Duration(0)
				if len(at) > 0 {
					last = at[len(at)-1]
				}
				t.Fatalf("step 1: call %q made %d attempts, the last %v after the first; want 3, the last %v after the first "+
					"(waits of %v and %v).\n"+
					"Wait r.Backoff.Backoff(key, attempt) between attempts: full jitter, drawn per call key, so that "+
					"failed calls do not all retry at the same instant.",
					key, len(at), last, want[2], want[1], want[2]-want[1])
			}
		}

		declined := &fooddelivery.CallError{Service: "payment", Status: 402, Err: fooddelivery.ErrRejected}
		calls := 0
		err := r.Do(context.Background(), "declined", func(context.Context, int) error { calls++; return declined })
		if calls != 1 || !errors.Is(err, fooddelivery.ErrRejected) || fooddelivery.DontRetry(err) {
			t.Fatalf("step 1: a declined card (402) made %d attempt(s) and came back as %q, marked \"don't retry\": %v; "+
				"want 1 attempt and the error unchanged, not marked.\n"+
				"Mark only the retryable failures this layer gives up on: a final error says enough by itself.",
				calls, err, fooddelivery.DontRetry(err))
		}
	})
}

func TestStep1GivenUpFailureSaysDontRetry(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "a checkout was still being retried"}, func(t *testing.T) {
		sys := start(t, generous(), nil)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", paymentDown))

		// The order service's own caller (the gateway, or anyone else) reads
		// its answer.
		_, err := sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		require.Error(t, err, "step 1: payment answered 503 to every charge, yet the order was placed")
		assert.ErrorIs(t, err, fooddelivery.ErrUnavailable, "step 1: payment was unavailable; the order service must say so")
		if !fooddelivery.DontRetry(err) {
			t.Fatalf("step 1: payment was called %d times and the order service gave up, but the order service's answer (%v) "+
				"did not carry %s, so a caller above would retry it all again.\n"+
				"Return what your retry loop gives up on through retry.MarkDontRetry.",
				labtest.Charges(sys), err, fooddelivery.HeaderDontRetry)
		}
	})
}

func TestStep1RetriesAreNumbered(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "a checkout was still being retried"}, func(t *testing.T) {
		sys := start(t, generous(), nil)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", paymentDown))

		tap(t, sys)
		edge := sys.Metrics.Edge("order", "payment")
		payments, numbered := labtest.Charges(sys), edge.Retries.Load()
		switch {
		case payments >= 2 && numbered == 0:
			t.Fatalf("step 1: payment received %d calls for one tap and none of them was sent as a retry (%s above 1): "+
				"every attempt went out as attempt 1.\n"+
				"Pass each attempt's number down to call (1, 2, 3, ...): payment, and its operators, can only tell "+
				"retries from new requests by it (the SRE book's retry counter in the request metadata).",
				payments, fooddelivery.HeaderAttempt)
		case payments >= 2 && numbered != payments-1:
			t.Fatalf("step 1: payment received %d calls for one tap but only %d were sent as retries (%s above 1): "+
				"each retrying layer numbers its attempts from 1, so the retries of the layers above reach payment as new requests.\n"+
				"Retry at the payment client only (TestStep1OnlyTheLayerNextToPaymentRetries): then its numbers are the whole story.",
				payments, numbered, fooddelivery.HeaderAttempt)
		case payments < 2:
			t.Fatalf("step 1: payment answered 503, yet it received %d call(s) for one tap: the payment client did not retry.", payments)
		}
	})
}

// TestStep1ContextEndingDuringBackoffSaysDontRetry: a caller whose
// deadline passes while the loop waits its backoff gets the failure back
// at once, marked "don't retry" like any other failure this layer gave up on.
func TestStep1ContextEndingDuringBackoffSaysDontRetry(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "a call was still waiting its backoff"}, func(t *testing.T) {
		// Backoffs of up to an hour: the caller's 1s deadline passes during the first.
		r := &retrybudgets.BudgetedRetry{Budget: generous(), Backoff: retry.Policy{Base: time.Hour, Cap: time.Hour}}
		down := &fooddelivery.CallError{Service: "payment", Status: 503, Err: fooddelivery.ErrUnavailable}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		calls := 0
		began := time.Now()
		err := r.Do(ctx, "late", func(context.Context, int) error { calls++; return down })
		took := time.Since(began)
		if calls != 1 || took > time.Second {
			t.Fatalf("step 1: the caller's 1s deadline passed during a backoff, yet the call made %d attempts and returned after %v.\n"+
				"Stop waiting when ctx is done (select on ctx.Done() and the timer).", calls, took)
		}
		if !errors.Is(err, fooddelivery.ErrUnavailable) {
			t.Fatalf("step 1: the caller's 1s deadline passed during the backoff after attempt %d (503); Do returned %q after %v, "+
				"which does not wrap payment's error (fooddelivery.ErrUnavailable).\n"+
				"Return payment's error, marked don't-retry, not only the context's: the caller needs to know why it failed.",
				calls, err, took)
		}
		if !fooddelivery.DontRetry(err) {
			t.Fatalf("step 1: the caller's deadline passed while the payment client waited to retry, and it returned %q "+
				"without \"don't retry\": a layer above would retry what this layer gave up on.\n"+
				"Return retry.MarkDontRetry(err) when ctx ends during the backoff too.", err)
		}
	})
}

func TestStep1HealthyCheckoutCallsPaymentOnce(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		sys := start(t, generous(), nil)
		ok := tap(t, sys)
		require.True(t, ok, "step 1: everything was healthy, yet the checkout failed")
		assert.Equal(t, int64(1), labtest.Charges(sys), "step 1: a healthy checkout calls payment once")
	})
}
