package retrybudgets_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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
	"github.com/gophereats/resilience/fooddelivery/system"
	retrybudgets "github.com/gophereats/resilience/labs/04-retry-budgets"
)

var pizza = fooddelivery.PlaceOrderInput{
	RestaurantID: system.SampleRestaurant,
	Items:        []fooddelivery.OrderItem{{DishID: system.SampleDish, Quantity: 2}},
	Card:         "tok_visa",
}

// placeOrder is the app's checkout mutation, sent to the gateway.
const placeOrder = `mutation Place($input: PlaceOrderInput!) { placeOrder(input: $input) { id status } }`

var placeOrderVars = map[string]any{"input": map[string]any{
	"restaurantId": system.SampleRestaurant,
	"card":         "tok_visa",
	"items":        []any{map[string]any{"dishId": system.SampleDish, "quantity": 2}},
}}

// paymentDown makes every charge fail with HTTP 503, a plain error (no
// "don't retry"), as a payment provider that is down answers.
var paymentDown = faults.Fault{Status: http.StatusServiceUnavailable}

// start runs the whole system with the learner's retry layers, built
// around budget, and the given per-instance limits.
func start(t *testing.T, budget *retrybudgets.RetryBudget, limits map[string]int) *system.System {
	return labtest.StartSystem(t, system.Config{Limits: limits, Retries: retrybudgets.Layers(budget)})
}

// tap sends one checkout through the gateway, as the app does, and
// reports whether an order came back.
func tap(t *testing.T, sys *system.System) bool {
	resp, _, err := sys.GraphQL(context.Background(), system.SampleToken, placeOrder, placeOrderVars)
	return err == nil && len(resp.Errors) == 0
}

func paymentCalls(sys *system.System) int64 {
	return sys.Metrics.Route("payment", "POST /charges").Received.Load()
}

func orderCalls(sys *system.System) int64 {
	return sys.Metrics.Route("order", "POST /orders").Received.Load()
}

// generous is a budget that never gets in the way of a single checkout.
func generous() *retrybudgets.RetryBudget { return retrybudgets.NewRetryBudget(0.1, 10, 100) }

func TestStep1OnlyTheLayerNextToPaymentRetries(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "a checkout was still being retried"}, func(t *testing.T) {
		sys := start(t, generous(), nil)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", paymentDown))

		ok := tap(t, sys)
		require.False(t, ok, "step 1: payment answered 503 to every charge, yet the checkout succeeded")
		payments, orders := paymentCalls(sys), orderCalls(sys)
		if payments < retry.DefaultAttempts && orders == 1 {
			t.Fatalf("step 1: one tap with payment down reached the order service once and payment %d time(s): "+
				"the payment client did not retry.\n"+
				"Keep a retrying layer at PaymentClient, the layer next to payment: it makes %d attempts.",
				payments, retry.DefaultAttempts)
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
			t.Fatalf("step 1: Layers retries at the gateway: %v, the order service: %v, the payment client: %v; "+
				"want the payment client only (Gateway and Order nil).",
				layers.Gateway != nil, layers.Order != nil, layers.PaymentClient != nil)
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
				paymentCalls(sys), err, fooddelivery.HeaderDontRetry)
		}
	})
}

func TestStep1RetriesAreNumbered(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "a checkout was still being retried"}, func(t *testing.T) {
		sys := start(t, generous(), nil)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", paymentDown))

		tap(t, sys)
		edge := sys.Metrics.Edge("order", "payment")
		payments, numbered := paymentCalls(sys), edge.Retries.Load()
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
		require.ErrorIs(t, err, fooddelivery.ErrUnavailable, "step 1: the caller's deadline passed during a backoff; return payment's error, not only the context's")
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
		assert.Equal(t, int64(1), paymentCalls(sys), "step 1: a healthy checkout calls payment once")
	})
}

// failing runs n calls, one every `every`, through a BudgetedRetry built
// around budget, each failing with a retryable error, and returns how many
// calls reached the dependency.
func failing(budget *retrybudgets.RetryBudget, n int, every time.Duration) int64 {
	r := &retrybudgets.BudgetedRetry{Budget: budget}
	down := &fooddelivery.CallError{Service: "payment", Status: 503, Err: fooddelivery.ErrUnavailable}
	var calls atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r.Do(context.Background(), fmt.Sprint("call-", i), func(context.Context, int) error {
				calls.Add(1)
				return down
			})
		})
		time.Sleep(every)
	}
	wg.Wait()
	return calls.Load()
}

func TestStep2BudgetKeepsRetriesNearTenPercent(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2, Stuck: "calls were still being retried"}, func(t *testing.T) {
		const (
			n            = 1000
			every        = 10 * time.Millisecond // 100 calls a second for 10 seconds
			ratio        = 0.1
			minPerSecond = 1.0
			saved        = 10.0
		)
		calls := failing(retrybudgets.NewRetryBudget(ratio, minPerSecond, saved), n, every)
		retries := calls - n
		seconds := (n * every).Seconds()
		allowed := saved + ratio*n + minPerSecond*seconds // 120
		if float64(retries) > allowed+1 {
			t.Fatalf("step 2: %d calls failed over %.0fs and %d retries were made (%.0f%% of calls); "+
				"a budget of %.0f%% of requests, %v retry a second and %v saved up allows at most %.0f.\n"+
				"Spend a token per retry and refuse retries when none is left. Call Request once per call, for its first attempt, "+
				"not once per attempt.",
				n, seconds, retries, 100*float64(retries)/n, 100*ratio, minPerSecond, saved, allowed)
		}
		if float64(retries) < 0.8*ratio*n {
			t.Fatalf("step 2: %d calls failed over %.0fs and only %d retries were made; the budget earns %.0f retries "+
				"from %.0f%% of these first attempts alone (plus %v a second and %v saved up).\n"+
				"Count every first attempt in the budget (Request), not only the retries, and take a token only when "+
				"TryRetry says yes: a refused TryRetry must not take one.",
				n, seconds, retries, ratio*n, 100*ratio, minPerSecond, saved)
		}
	})
}

func TestStep2BudgetRefillsOverTime(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2, Stuck: "calls were still being retried"}, func(t *testing.T) {
		const minPerSecond = 2.0
		budget := retrybudgets.NewRetryBudget(0, minPerSecond, 20) // retries come from time alone
		n := 0
		for budget.TryRetry() {
			n++
			require.Less(t, n, 1000, "step 2: TryRetry kept saying yes to a budget of 20 tokens")
		}
		require.Equal(t, 20, n, "step 2: a new budget holds max (20) retries")

		const quiet = 5 * time.Second
		time.Sleep(quiet)
		got := 0
		for budget.TryRetry() && got < 1000 {
			got++
		}
		want := int(minPerSecond * quiet.Seconds())
		if got < want-1 || got > want+1 {
			t.Fatalf("step 2: a spent budget with a minimum of %v retries a second allowed %d retries after %v of quiet; want %d.\n"+
				"Time must refill the budget (time.Now, elapsed seconds x minPerSecond, up to max), "+
				"or a client that once spent it can never retry again.", minPerSecond, got, quiet, want)
		}

		// Busy, not quiet: a request every 10ms for 5s. Each update adds
		// 10ms worth of tokens, which add up to 10 retries.
		drain(budget, 1000)
		for range 500 {
			budget.Request() // ratio 0: earns nothing itself
			time.Sleep(10 * time.Millisecond)
		}
		if got := drain(budget, 1000); got < want-1 || got > want+1 {
			t.Fatalf("step 2: a spent budget with a minimum of %v retries a second allowed %d retries after %v of "+
				"a request every 10ms; want %d.\n"+
				"Add minPerSecond x the elapsed time in fractions of a second (time.Since(last).Seconds()), "+
				"not in whole seconds: between frequent calls whole seconds round down to nothing.",
				minPerSecond, got, quiet, want)
		}
	})
}

// drain counts the retries budget allows right now (at most limit).
func drain(budget *retrybudgets.RetryBudget, limit int) int {
	n := 0
	for n < limit && budget.TryRetry() {
		n++
	}
	return n
}

func TestStep2BudgetSavesAtMostMax(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		const saved = 5
		// Time: a minute of quiet at 1 retry a second earns 60, but the bucket holds 5.
		byTime := retrybudgets.NewRetryBudget(0.1, 1, saved)
		time.Sleep(time.Minute)
		if got := drain(byTime, 1000); got != saved {
			t.Fatalf("step 2: a budget of at most %d saved retries (1 a second) allowed %d retries after a minute of quiet; want %d.\n"+
				"Cap the tokens at max when time refills them: a long quiet spell must not save up a burst of retries. "+
				"Update the last-refill time on every call, even when the bucket is full.",
				saved, got, saved)
		}
		// One retry taken, then a minute of quiet: still at most 5.
		partly := retrybudgets.NewRetryBudget(0, 1, saved)
		partly.TryRetry()
		time.Sleep(time.Minute)
		if got := drain(partly, 1000); got != saved {
			t.Fatalf("step 2: a budget of at most %d saved retries (1 a second), 1 of them taken, allowed %d retries "+
				"after a minute of quiet; want %d.\n"+
				"Cap the sum, not the starting point: tokens = min(max, tokens + earned).", saved, got, saved)
		}
		// Requests: ten first attempts at 1 retry each on a full bucket of 3.
		byRequests := retrybudgets.NewRetryBudget(1, 0, 3)
		for range 10 {
			byRequests.Request()
		}
		if got := drain(byRequests, 1000); got != 3 {
			t.Fatalf("step 2: a full budget of at most 3 retries, earning 1 per request, allowed %d retries after 10 more requests; want 3.\n"+
				"Cap the tokens at max in Request too.", got)
		}
		partlyByRequests := retrybudgets.NewRetryBudget(1, 0, 3)
		partlyByRequests.TryRetry()
		for range 10 {
			partlyByRequests.Request()
		}
		if got := drain(partlyByRequests, 1000); got != 3 {
			t.Fatalf("step 2: a budget of at most 3 retries, earning 1 per request, 1 of them taken, allowed %d retries "+
				"after 10 more requests; want 3.\n"+
				"Cap the sum, not the starting point: tokens = min(max, tokens + ratio).", got)
		}
	})
}

// TestStep2RetryNeedsAWholeToken: half a token is not a retry.
func TestStep2RetryNeedsAWholeToken(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		budget := retrybudgets.NewRetryBudget(0.5, 0, 1)
		if got := drain(budget, 1000); got != 1 {
			t.Fatalf("step 2: a new budget of 1 retry allowed %d; want 1.\n"+
				"Write the token bucket first: TryRetry takes a token and refuses when fewer than 1 is left.", got)
		}
		budget.Request() // half a token
		if budget.TryRetry() {
			t.Fatalf("step 2: a spent budget earning 0.5 per request allowed a retry after 1 request; want none until 2.\n" +
				"Refuse a retry when fewer than 1 token is left (tokens < 1), not only when none is.")
		}
		budget.Request() // a whole token
		if !budget.TryRetry() {
			t.Fatalf("step 2: a spent budget earning 0.5 per request refused a retry after 2 requests; want one.")
		}
	})
}

// TestStep2OnlyRetriesSpendEveryCallEarns: the budget is charged for the
// retries Do makes, nothing else, and credited for every call.
func TestStep2OnlyRetriesSpendEveryCallEarns(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2, Stuck: "a call was still being retried"}, func(t *testing.T) {
		down := &fooddelivery.CallError{Service: "payment", Status: 503, Err: fooddelivery.ErrUnavailable}
		declined := &fooddelivery.CallError{Service: "payment", Status: 402, Err: fooddelivery.ErrRejected}
		count := func(r *retrybudgets.BudgetedRetry, key string, fail error) int {
			n := 0
			r.Do(context.Background(), key, func(context.Context, int) error { n++; return fail })
			return n
		}

		// 4 tokens, no refill: two failing calls make 2 retries each.
		r := &retrybudgets.BudgetedRetry{Budget: retrybudgets.NewRetryBudget(0, 0, 4)}
		if a, b := count(r, "a", down), count(r, "b", down); a != 3 || b != 3 {
			t.Fatalf("step 2: a budget of 4 retries let two failing calls make %d and %d attempts; want 3 and 3 (2 retries each).\n"+
				"Ask TryRetry only for a retry you are about to make: after the last attempt there is none, so check "+
				"the attempts first and the budget last.", a, b)
		}

		// 2 tokens, no refill: declined cards are not retried, so take none.
		r = &retrybudgets.BudgetedRetry{Budget: retrybudgets.NewRetryBudget(0, 0, 2)}
		for range 10 {
			count(r, "declined", declined)
		}
		if got := count(r, "down", down); got != 3 {
			t.Fatalf("step 2: after 10 declined cards, a budget of 2 retries let a failing call make %d attempt(s); want 3.\n"+
				"A declined card is final, not retried: ask TryRetry only after Retryable said yes.", got)
		}

		// Spent budget, ratio 0.1: 100 successful calls earn 10 retries.
		budget := retrybudgets.NewRetryBudget(0.1, 0, 10)
		if got := drain(budget, 1000); got != 10 {
			t.Fatalf("step 2: a new budget of 10 retries allowed %d; want 10.\n"+
				"Write the token bucket first: TryRetry takes a token and refuses when fewer than 1 is left.", got)
		}
		r = &retrybudgets.BudgetedRetry{Budget: budget}
		for range 100 {
			count(r, "ok", nil)
		}
		if got := drain(budget, 1000); got < 9 || got > 10 {
			t.Fatalf("step 2: 100 successful calls earned a spent budget (10%% of requests) %d retries; want 10.\n"+
				"Call Request for every call's first attempt, before the loop, whether it succeeds or fails: "+
				"retries are a fraction of all requests.", got)
		}

		// No budget, no retries.
		calls := 0
		noBudget := &retrybudgets.BudgetedRetry{}
		err := noBudget.Do(context.Background(), "nil", func(context.Context, int) error { calls++; return down })
		if calls != 1 || !fooddelivery.DontRetry(err) {
			t.Fatalf("step 2: a BudgetedRetry with a nil Budget made %d attempt(s) against a payment answering 503 "+
				"and returned it marked \"don't retry\": %v; want 1 attempt, marked.\n"+
				"A nil Budget allows no retries: give up at once, as when TryRetry says no.", calls, fooddelivery.DontRetry(err))
		}
	})
}

func TestStep2BudgetIsSafeForConcurrentUse(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		const (
			goroutines = 8
			rounds     = 2000
			tokens     = 100 // more than goroutines: no TryRetry below may fail
		)
		if got := drain(retrybudgets.NewRetryBudget(1, 0, 3), 1000); got != 3 {
			t.Fatalf("step 2: a new budget of 3 retries allowed %d; write the token bucket first (TryRetry takes a token, "+
				"refuses when fewer than 1 is left), then make it safe for concurrent use.", got)
		}
		// Each round takes a retry and gives it back with a request (ratio 1),
		// so the budget must end as it began, with exactly `tokens` retries.
		budget := retrybudgets.NewRetryBudget(1, 0, tokens)
		var refused atomic.Int64
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for range rounds {
					if !budget.TryRetry() {
						refused.Add(1)
					}
					budget.Request()
				}
			})
		}
		wg.Wait()
		left := drain(budget, 10*tokens)
		if left != tokens || refused.Load() != 0 {
			t.Fatalf("step 2: %d goroutines each took a retry and gave it back (ratio 1) %d times; the budget of %d refused %d "+
				"retries and ended with %d, want 0 refused and %d left.\n"+
				"Updates were lost: guard the tokens (and the time of the last update) with a sync.Mutex in Request and TryRetry. "+
				"go test -race ./labs/04-retry-budgets/ shows where.",
				goroutines, rounds, tokens, refused.Load(), left, tokens)
		}
	})
}

func TestStep2BudgetProtectsPayment(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2, Stuck: "checkouts were still being retried"}, func(t *testing.T) {
		const (
			n            = 50
			every        = 100 * time.Millisecond // 10 checkouts a second for 5 seconds
			ratio        = 0.1
			minPerSecond = 1.0
			saved        = 2.0
		)
		sys := start(t, retrybudgets.NewRetryBudget(ratio, minPerSecond, saved), nil)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", paymentDown))
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() { sys.Orders().PlaceOrder(context.Background(), "alice", pizza) })
			time.Sleep(every)
		}
		wg.Wait()

		payments := paymentCalls(sys)
		allowed := n + saved + ratio*n + minPerSecond*(n*every).Seconds() // 62
		if float64(payments) > allowed+1 {
			t.Fatalf("step 2: %d checkouts with payment down sent %d calls to payment (%.1f per checkout); "+
				"a budget of %.0f%% plus %v retry a second and %v saved up allows at most %.0f (%.2f per checkout).\n"+
				"One budget for the whole payment client, shared by every call: a budget made per call has no memory. "+
				"And one layer using it: when more than one layer calls Request on the same budget, each checkout earns its retries more than once.",
				n, payments, float64(payments)/n, 100*ratio, minPerSecond, saved, allowed, allowed/n)
		}
	})
}

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
		assert.True(t, fooddelivery.DontRetry(err), "step 3: a failure the payment client gave up on says \"don't retry\" to the layers above")
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
		if paymentCalls(sys) != 1 || took > 0 || ce.Code != "payment_unavailable" {
			t.Fatalf("step 3: with an empty budget a checkout called payment %d times, took %v and failed with %q.\n"+
				"Want one call, no waiting, and the order service reporting payment_unavailable: the original error, passed up.",
				paymentCalls(sys), took, err)
		}
	})
}

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

		payments := paymentCalls(sys)
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
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
				if got := retrybudgets.Retryable(c.err); got != c.want {
					t.Fatalf("step 4: Retryable(%s: %v) = %v, want %v (see the list of final errors in step 4)", c.name, c.err, got, c.want)
				}
			})
		})
	}
}
