package retrybudgets_test

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/retry"
	retrybudgets "github.com/gophereats/resilience/labs/04-retry-budgets"
)

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

		// Busy, not quiet: a request and a retry attempt every 10ms for 5s.
		// Each refill adds 10ms worth of tokens, which add up to 10 retries.
		drain(budget, 1000)
		got = 0
		for range 500 {
			budget.Request() // ratio 0: earns nothing itself
			if budget.TryRetry() {
				got++
			}
			time.Sleep(10 * time.Millisecond)
		}
		if got += drain(budget, 1000); got < want-1 || got > want+1 {
			t.Fatalf("step 2: a spent budget with a minimum of %v retries a second allowed %d retries over %v of "+
				"a request and a retry attempt every 10ms; want %d.\n"+
				"Add minPerSecond x the elapsed time in fractions of a second (time.Since(last).Seconds()), "+
				"not in whole seconds: between frequent calls whole seconds round down to nothing. And move the "+
				"last-refill time only where you add the tokens of the time since it: moved without them, they are lost.",
				minPerSecond, got, quiet, want)
		}
	})
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
				"Refill (and move the last-refill time) in every TryRetry, even when the bucket is full or holds a token already: "+
				"a quiet spell credited later lands on a bucket that retries have emptied, past the cap.",
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
		a, b := count(r, "a", down), count(r, "b", down)
		if a > retry.DefaultAttempts || b > retry.DefaultAttempts {
			t.Fatalf("step 2: two failing calls with a budget of 4 retries made %d and %d attempts; a call may make at most "+
				"%d (Attempts zero means retry.DefaultAttempts), whatever the budget holds. The attempt limit is step 1's: "+
				"stop when attempt >= Attempts.", a, b, retry.DefaultAttempts)
		}
		if a != 3 || b != 3 {
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
			t.Fatalf("step 2: 100 successful calls earned a spent budget (10%% of requests) %d retries; want 10 (9 if the sum of 0.1s lands a hair under 10).\n"+
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
		const goroutines = 8
		// A lost update needs two goroutines in the same few instructions at
		// once: the plain run gives it 2,000,000 chances (and catches a budget
		// without a mutex in about 60% of runs on a busy 2-core machine);
		// the race detector needs only a few.
		each := 125000
		if raceDetector() {
			each = 500
		}
		tokens := goroutines * each
		if got := drain(retrybudgets.NewRetryBudget(1, 0, 3), 1000); got != 3 {
			t.Fatalf("step 2: a new budget of 3 retries allowed %d; write the token bucket first (TryRetry takes a token, "+
				"refuses when fewer than 1 is left), then make it safe for concurrent use.", got)
		}
		// together runs f each times on every goroutine, all starting at once.
		together := func(f func()) {
			start := make(chan struct{})
			var wg sync.WaitGroup
			for range goroutines {
				wg.Go(func() {
					<-start
					for range each {
						f()
					}
				})
			}
			synctest.Wait() // every goroutine waits at the start
			close(start)
			wg.Wait()
		}

		// A full budget of exactly one retry per TryRetry below: every one
		// succeeds and none is left.
		budget := retrybudgets.NewRetryBudget(1, 0, float64(tokens))
		var refused atomic.Int64
		together(func() {
			if !budget.TryRetry() {
				refused.Add(1)
			}
		})
		if left := drain(budget, tokens); left != 0 || refused.Load() != 0 {
			t.Fatalf("step 2: %d goroutines took %d retries each, at once, from a full budget of %d: %d were refused and %d "+
				"were still left, want 0 and 0.\n"+
				"Updates were lost: two goroutines read the same count and both wrote it minus one. Guard the tokens (and "+
				"the time of the last update) with a sync.Mutex in Request and TryRetry; go test -race shows where.",
				goroutines, each, tokens, refused.Load(), left)
		}

		// The spent budget earns them back, one per request (ratio 1), up to
		// its max: exactly as many as before.
		together(budget.Request)
		if got := drain(budget, 2*tokens); got != tokens {
			t.Fatalf("step 2: %d goroutines made %d requests each, at once, earning 1 retry each for a spent budget of at "+
				"most %d; it then allowed %d retries, want %d.\n"+
				"Updates were lost: two goroutines read the same count and both wrote it plus one. Guard the tokens (and "+
				"the time of the last update) with a sync.Mutex in Request and TryRetry; go test -race shows where.",
				goroutines, each, tokens, got, tokens)
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

		payments := labtest.Charges(sys)
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

// TestStep2BadConfigurationPanics: a budget that can never allow a retry,
// or allows a nonsensical number, is refused when it is made, not found out
// in an outage.
func TestStep2BadConfigurationPanics(t *testing.T) {
	type config struct{ ratio, minPerSecond, max float64 }
	panicked := func(c config) (msg any) {
		defer func() { msg = recover() }()
		retrybudgets.NewRetryBudget(c.ratio, c.minPerSecond, c.max)
		return nil
	}
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		bad := []struct {
			c   config
			why string
		}{
			{config{0.1, 10, 0.5}, "it earns, but a bucket of at most 0.5 tokens never holds the whole token a retry costs"},
			{config{0.1, 0, 0}, "it earns 0.1 a request, but a bucket of at most 0 tokens never holds one"},
			{config{0, 10, 0.99}, "time earns 10 tokens a second, but a bucket of at most 0.99 never holds one"},
			{config{1e-17, 0, 10}, "a ratio of 1e-17 is lost to rounding when added to a count below one token (anything up to 2^-54 is): it never earns a whole token"},
			{config{0x1p-54, 1, 10}, "a ratio of 2^-54 is lost to rounding when added to a count just below one token"},
			{config{-0.1, 10, 100}, "a negative ratio"},
			{config{0.1, -1, 100}, "a negative minimum rate"},
			{config{0.1, 10, -1}, "a negative max"},
			{config{math.NaN(), 10, 100}, "a ratio that is not a number"},
			{config{0.1, 10, math.Inf(1)}, "an infinite max"},
		}
		for _, b := range bad {
			if panicked(b.c) == nil {
				t.Errorf("step 2: NewRetryBudget(%v, %v, %v) returned a budget; want a panic: %s. A rate that can never earn a "+
					"whole token, or a value that makes no sense, is an error of the code that wrote it: panic in NewRetryBudget.",
					b.c.ratio, b.c.minPerSecond, b.c.max, b.why)
			}
		}
		good := []config{{0, 0, 0}, {0, 0, 4}, {0.5, 0, 1}, {0.1, 10, 100}, {1e-9, 0, 1}, {0x1p-53, 0, 1}, {0, 1, 1}}
		for _, c := range good {
			if msg := panicked(c); msg != nil {
				t.Errorf("step 2: NewRetryBudget(%v, %v, %v) panicked (%v); want a budget. It can hold a whole token and earn "+
					"more (or, with all three zero, is a budget of no retries on purpose).", c.ratio, c.minPerSecond, c.max, msg)
			}
		}
	})
}
