package breaker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	breaker "github.com/gophereats/resilience/labs/05-breaker"
)

func TestStep1OpensAfterFiveFailuresInARow(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		sys, cb := start(t, breaker.Settings{})
		if n := trip(t, sys, 4); cb.State() != breaker.Closed {
			t.Fatalf("step 1: 4 orders were placed while payment answered 503; %d of their charges reached payment and the "+
				"breaker is %v; with the default settings it opens at the 5th failure", n, cb.State())
		}
		if n := trip(t, sys, 1); cb.State() != breaker.Open {
			t.Fatalf("step 1: 5 orders were placed while payment answered 503, the 5th one's charge reaching payment: %v; "+
				"%d charges in all reached payment and the breaker is %v. It must open after "+
				"Settings.ConsecutiveFailures failures in a row (zero means 5).", n == 1, labtest.Charges(sys), cb.State())
		}

		before := labtest.Charges(sys)
		var slowest time.Duration
		for range 10 {
			took, err := place(sys)
			require.Error(t, err, "step 1: payment is down and the breaker is open, yet an order succeeded")
			slowest = max(slowest, took)
		}
		if reached := labtest.Charges(sys) - before; reached != 0 || slowest > fast {
			t.Fatalf("step 1: while the breaker was open, %d of 10 orders still reached payment and the slowest took %v. "+
				"An open breaker refuses at once, without calling: Do must return an error wrapping "+
				"fooddelivery.ErrCircuitOpen and not call the function it was given.", reached, slowest)
		}
	})
}

func TestStep1ASuccessResetsTheCount(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		sys, cb := start(t, breaker.Settings{})
		trip(t, sys, 4)
		setPayment(t, sys, faults.Fault{})
		_, err := place(sys)
		require.NoError(t, err, "step 1: payment was healthy again, yet the order failed (breaker %v)", cb.State())
		trip(t, sys, 4)
		if s, n := cb.State(), labtest.Charges(sys); s != breaker.Closed || n != 9 {
			t.Fatalf("step 1: payment failed 4 times, succeeded once, failed 4 more times; the breaker is %v and %d of 9 "+
				"charges reached payment. Failures in a row open the breaker: a success starts the count again.", s, n)
		}
	})
}

func TestStep1HalfOpenAfterTheOpenPeriod(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		sys, cb := start(t, breaker.Settings{})
		if n, s := trip(t, sys, 5), cb.State(); s != breaker.Open {
			t.Fatalf("step 1: 5 orders were placed while payment answered 503; %d of their charges reached payment and the "+
				"breaker is %v. It must open after Settings.ConsecutiveFailures failures in a row (zero means 5). "+
				"Start with TestStep1OpensAfterFiveFailuresInARow.", n, s)
		}

		time.Sleep(openFor - time.Second)
		setPayment(t, sys, faults.Fault{}) // payment has recovered
		before := labtest.Charges(sys)
		_, err := place(sys)
		if s, n := cb.State(), labtest.Charges(sys)-before; err == nil || s != breaker.Open || n != 0 {
			t.Fatalf("step 1: %v after the breaker opened (of a %v open period) it is %v; %d of 1 order reached payment "+
				"(error: %v). It must stay open, refusing every call, for the whole period.", openFor-time.Second, openFor, s, n, err)
		}

		time.Sleep(time.Second)
		if s := cb.State(); s != breaker.HalfOpen {
			t.Fatalf("step 1: %v after the breaker opened it is %v; once Settings.OpenFor (zero means %v) has passed it is half-open. "+
				"Compute the state from time.Now() when asked: no timer needed.", openFor, s, openFor)
		}
		_, err = place(sys)
		if s := cb.State(); err != nil || s != breaker.Closed || labtest.Charges(sys) != before+1 {
			t.Fatalf("step 1: payment has recovered; the trial order in the half-open state failed with %v, "+
				"%d charges reached payment, and the breaker is now %v. A successful trial closes the breaker.",
				err, labtest.Charges(sys)-before, s)
		}
		for range 3 {
			_, err := place(sys)
			require.NoError(t, err, "step 1: the breaker closed after a successful trial, yet a later order failed")
		}
	})
}

// TestStep1ACallAfterTheOpenPeriodIsATrial never asks State(): a call
// that arrives once the open period is over must find the breaker
// half-open by itself, so Do reads the clock when the breaker is open.
func TestStep1ACallAfterTheOpenPeriodIsATrial(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		cb := breaker.New(breaker.Settings{Name: "test", Logger: quiet})
		if made := fail(cb, 6); made != 5 {
			t.Fatalf("step 1: 6 calls were made through a new breaker, each failing with ErrUnavailable, and %d of them "+
				"were admitted; the breaker must open at the 5th failure and refuse the 6th call "+
				"(Settings.ConsecutiveFailures, zero means 5)", made)
		}
		time.Sleep(openFor)
		called, err := succeed(cb)
		if !called || err != nil {
			t.Fatalf("step 1: 5 failures opened the breaker; %v later (its Settings.OpenFor), with nobody asking State(), "+
				"a call that succeeds was made: %v (Do returned %v). Once the open period is over the next call is a "+
				"trial: Do must look at the clock whenever it finds the breaker open, not leave that to State().",
				openFor, called, err)
		}
		if s := cb.State(); s != breaker.Closed {
			t.Fatalf("step 1: %v after 5 failures opened the breaker, a trial call succeeded and the breaker is %v; "+
				"a successful trial closes it", openFor, s)
		}
	})
}

func TestStep1AFailedTrialOpensAgain(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		sys, cb := start(t, breaker.Settings{})
		if n, s := trip(t, sys, 5), cb.State(); s != breaker.Open {
			t.Fatalf("step 1: 5 orders were placed while payment answered 503; %d of their charges reached payment and the "+
				"breaker is %v. It must open after Settings.ConsecutiveFailures failures in a row (zero means 5).", n, s)
		}
		halfOpenAfter(t, 1, cb, openFor, "5 orders failed (payment answered 503) and opened the breaker")
		before := labtest.Charges(sys)
		_, err := place(sys) // payment is still down
		require.Error(t, err, "step 1: payment is still down, yet the trial order succeeded")
		if s := cb.State(); s != breaker.Open || labtest.Charges(sys) != before+1 {
			t.Fatalf("step 1: after the open period one trial order reached payment (%d did) and failed; the breaker is %v. "+
				"A failed trial opens the breaker again, for another full period.", labtest.Charges(sys)-before, s)
		}
		time.Sleep(openFor - time.Second)
		place(sys)
		if s := cb.State(); s != breaker.Open || labtest.Charges(sys) != before+1 {
			t.Fatalf("step 1: %v after a failed trial the breaker is %v and %d more charges reached payment; "+
				"it must stay open for a whole new period of %v", openFor-time.Second, s, labtest.Charges(sys)-before-1, openFor)
		}
		time.Sleep(time.Second)
		if s := cb.State(); s != breaker.HalfOpen {
			t.Fatalf("step 1: %v after the failed trial the breaker is %v; after a whole new open period it is half-open again", openFor, s)
		}
	})
}

func TestStep1LateFailuresFromBeforeTheOpeningAreIgnored(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		const late, lateAfter = 5, 1900 * time.Millisecond
		shortOpen := time.Second // short, so that the breaker closes before the late calls end
		cb := breaker.New(breaker.Settings{Name: "order->payment", OpenFor: shortOpen, Logger: quiet})
		timedOut := fmt.Errorf("payment: %w", fooddelivery.ErrTimeout)
		refused := fmt.Errorf("payment: %w", fooddelivery.ErrUnavailable)

		// 5 charges are admitted while the breaker is closed; payment hangs
		// and they time out 1.9 s later.
		var admitted, ended sync.WaitGroup
		defer ended.Wait() // even when the test stops early: no goroutine left behind
		for range late {
			admitted.Add(1)
			ended.Go(func() {
				cb.Do(context.Background(), func(context.Context) error {
					admitted.Done()
					time.Sleep(lateAfter)
					return timedOut
				})
			})
		}
		admitted.Wait()
		// Meanwhile 5 other charges fail at once and open the breaker.
		others := 0
		for range 5 {
			cb.Do(context.Background(), func(context.Context) error { others++; return refused })
		}
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 1: 5 more calls were made (5 still in flight), %d of them admitted, each failing at once, and the "+
				"breaker is %v; it must open after Settings.ConsecutiveFailures failures in a row (zero means 5)", others, s)
		}
		// The open period ends and a trial succeeds: payment has recovered.
		halfOpenAfter(t, 1, cb, shortOpen, fmt.Sprintf("5 calls failed at once and opened the breaker (%d more in flight)", late))
		trial := cb.Do(context.Background(), func(context.Context) error { return nil })
		if s := cb.State(); trial != nil || s != breaker.Closed {
			t.Fatalf("step 1: %v after the breaker opened (Settings.OpenFor %v) a trial call succeeded; it returned %v and "+
				"the breaker is %v. A successful trial closes the breaker.", shortOpen, shortOpen, trial, s)
		}
		// The 5 charges admitted before the breaker opened time out now.
		ended.Wait()
		if s := cb.State(); s != breaker.Closed {
			t.Fatalf("step 1: %d calls admitted while the breaker was closed failed %v later. In between, the breaker had "+
				"opened, gone half-open after %v and closed on a successful trial; their late failures left it %v. "+
				"An outcome says something about the state its call was admitted in, not about today's: tag each call "+
				"with a generation when it is admitted, change the generation at every state change, and ignore "+
				"outcomes from another generation.", late, lateAfter, shortOpen, s)
		}
		called := false
		err := cb.Do(context.Background(), func(context.Context) error { called = true; return nil })
		if !called || err != nil {
			t.Fatalf("step 1: the breaker closed after a successful trial and stayed closed, yet the next call was refused "+
				"without calling (error: %v); a closed breaker makes every call", err)
		}
	})
}

func TestStep1ConsecutiveFailuresIsASetting(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		for _, n := range []int{3, 8} {
			cb := breaker.New(breaker.Settings{Name: "test", ConsecutiveFailures: n, Logger: quiet})
			if made, s := fail(cb, n-1), cb.State(); s != breaker.Closed {
				t.Fatalf("step 1: with Settings.ConsecutiveFailures %d, %d calls were made, %d of them admitted and failed, "+
					"and the breaker is %v; it must open at failure %d, not before", n, n-1, made, s, n)
			}
			if made, s := fail(cb, 1), cb.State(); s != breaker.Open {
				t.Fatalf("step 1: with Settings.ConsecutiveFailures %d, %d failures in a row left the breaker %v (the last "+
					"call admitted: %v); it must open at failure %d. Only a zero ConsecutiveFailures means 5: read the setting.",
					n, n, s, made == 1, n)
			}
		}
	})
}

func TestStep1TheCountStartsOverAfterClosing(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		cb := breaker.New(breaker.Settings{Name: "test", Logger: quiet})
		if n, s := fail(cb, 5), cb.State(); s != breaker.Open {
			t.Fatalf("step 1: 5 calls were made through a new breaker, %d of them admitted, each failing with ErrUnavailable, "+
				"and the breaker is %v; it must open after Settings.ConsecutiveFailures failures in a row (zero means 5)", n, s)
		}
		halfOpenAfter(t, 1, cb, openFor, "5 failures opened the breaker")
		if called, err := succeed(cb); !called || err != nil || cb.State() != breaker.Closed {
			t.Fatalf("step 1: 5 failures opened the breaker and %v later it was half-open; a trial call that succeeds "+
				"was made: %v; Do returned %v and the breaker is %v. A successful trial closes it "+
				"(TestStep1HalfOpenAfterTheOpenPeriod).", openFor, called, err, cb.State())
		}
		for n := 1; n <= 4; n++ {
			fail(cb, 1)
			if s := cb.State(); s != breaker.Closed {
				t.Fatalf("step 1: the breaker closed after a successful trial; %d failure(s) later it is %v. It must take "+
					"5 new failures in a row: every state change starts the counts over, and the failures that "+
					"opened it last time are history.", n, s)
			}
		}
	})
}
