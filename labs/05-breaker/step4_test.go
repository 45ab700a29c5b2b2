package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	breaker "github.com/gophereats/resilience/labs/05-breaker"
)

func TestStep4HalfOpenAdmitsOnlyAFewTrials(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		const trials, customers = 2, 20
		sys, cb := start(t, breaker.Settings{HalfOpenCalls: trials})
		if n, s := trip(t, sys, 5), cb.State(); s != breaker.Open {
			t.Fatalf("step 4: 5 orders were placed while payment answered 503; %d of their charges reached payment and the "+
				"breaker is %v; it must be open before this test can look at half-open. Finish step 1 first.", n, s)
		}
		halfOpenAfter(t, 4, cb, openFor, "5 orders failed (payment answered 503) and opened the breaker")
		setPayment(t, sys, faults.Fault{Latency: 500 * time.Millisecond}) // recovered, still warming up

		before := labtest.Charges(sys)
		var mu sync.Mutex
		var quick, succeeded int
		var wg sync.WaitGroup
		for range customers {
			wg.Go(func() {
				took, err := place(sys)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					succeeded++
				} else if took <= fast {
					quick++
				}
			})
		}
		wg.Wait()
		reached := labtest.Charges(sys) - before
		if reached != trials || succeeded != trials || quick != customers-trials {
			t.Fatalf("step 4: %d customers ordered at once while the breaker was half-open (Settings.HalfOpenCalls = %d); "+
				"%d charges reached payment, %d orders succeeded, %d failed at once. Half-open admits at most HalfOpenCalls "+
				"trial calls at a time and refuses the others at once, so a recovering dependency is not flooded.",
				customers, trials, reached, succeeded, quick)
		}
		if s := cb.State(); s != breaker.Closed {
			t.Fatalf("step 4: all %d trial calls succeeded (Settings.HalfOpenCalls %d) and the breaker is %v; "+
				"HalfOpenCalls successful trials close it", trials, trials, s)
		}
		_, err := place(sys)
		require.NoError(t, err, "step 4: the breaker closed, yet the next order failed")
	})
}

func TestStep4RefusedTrialsWrapErrCircuitOpen(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		cb := breaker.New(breaker.Settings{Name: "test", Logger: quiet})
		boom := fmt.Errorf("payment: %w", fooddelivery.ErrUnavailable)
		admitted := 0
		for range 5 {
			cb.Do(context.Background(), func(context.Context) error { admitted++; return boom })
		}
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 4: 5 calls were made through a closed breaker, %d of them admitted, each failing with ErrUnavailable, "+
				"and the breaker is %v; it must be open before this test can look at half-open. Finish step 1 first.", admitted, s)
		}
		halfOpenAfter(t, 4, cb, openFor, "5 failures opened the breaker")

		release := make(chan struct{})
		started := make(chan struct{})
		trialDone := make(chan error, 1)
		go func() {
			trialDone <- cb.Do(context.Background(), func(context.Context) error {
				close(started)
				<-release
				return nil
			})
		}()
		select {
		case <-started:
		case err := <-trialDone:
			t.Fatalf("step 4: %v after it opened the breaker was half-open; the first trial call was not made: Do "+
				"returned %v. A half-open breaker admits HalfOpenCalls trial calls (zero means 1).", openFor, err)
		case <-time.After(time.Second):
			t.Fatalf("step 4: %v after it opened the breaker was half-open; 1s after the first trial call was handed "+
				"to Do, the call had not started and Do had not returned", openFor)
		}
		called := false
		err := cb.Do(context.Background(), func(context.Context) error { called = true; return nil })
		close(release)
		if trialErr := <-trialDone; trialErr != nil {
			t.Fatalf("step 4: the half-open trial call succeeded, yet Do returned %v; it must return the call's own nil error", trialErr)
		}
		if called || !errors.Is(err, fooddelivery.ErrCircuitOpen) {
			t.Fatalf("step 4: one trial call was in flight in the half-open state (HalfOpenCalls defaults to 1); a second call "+
				"was made: %v, and it returned %v. It must be refused without calling, with an error wrapping "+
				"fooddelivery.ErrCircuitOpen.", called, err)
		}
		if s := cb.State(); s != breaker.Closed {
			t.Fatalf("step 4: the only trial call (HalfOpenCalls defaults to 1) succeeded and the breaker is %v; it must close", s)
		}
	})
}

func TestStep4LateCallsDoNotTakeTrialSlots(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		const trials = 2
		shortOpen := time.Second
		cb := breaker.New(breaker.Settings{Name: "order->payment", OpenFor: shortOpen, HalfOpenCalls: trials, Logger: quiet})
		boom := fmt.Errorf("payment: %w", fooddelivery.ErrUnavailable)

		// One slow charge is admitted while closed and succeeds 1.5 s later.
		lateStarted, lateDone := make(chan struct{}), make(chan struct{})
		defer func() { <-lateDone }() // even when the test stops early: no goroutine left behind
		go func() {
			defer close(lateDone)
			cb.Do(context.Background(), func(context.Context) error {
				close(lateStarted)
				time.Sleep(1500 * time.Millisecond)
				return nil
			})
		}()
		<-lateStarted
		admitted := 0
		for range 5 {
			cb.Do(context.Background(), func(context.Context) error { admitted++; return boom })
		}
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 4: 5 calls were made through a closed breaker, %d of them admitted, each failing with ErrUnavailable, "+
				"and the breaker is %v; it must be open before this test can look at half-open. Finish step 1 first.", admitted, s)
		}
		halfOpenAfter(t, 4, cb, shortOpen, "5 failures opened the breaker (1 call from before still in flight)")
		// Half-open now: 2 trials start and take 1 s.
		var trialsDone sync.WaitGroup
		defer trialsDone.Wait()
		for range trials {
			started := make(chan struct{})
			trialsDone.Go(func() {
				cb.Do(context.Background(), func(context.Context) error {
					close(started)
					time.Sleep(time.Second)
					return nil
				})
			})
			select {
			case <-started:
			case <-time.After(time.Millisecond):
				t.Fatalf("step 4: the breaker was half-open with Settings.HalfOpenCalls %d, yet a trial call was not made", trials)
			}
		}
		<-lateDone // the slow charge from before the opening succeeds now
		state := cb.State()
		called := false
		err := cb.Do(context.Background(), func(context.Context) error { called = true; return nil })
		trialsDone.Wait()
		if state != breaker.HalfOpen || called {
			what := "refused"
			if called {
				what = "made"
			}
			t.Fatalf("step 4: the breaker was half-open with its %d trial calls in flight when a call admitted before it "+
				"opened succeeded. Then the breaker was %v, and a new call was %s. The late success is not a trial: it "+
				"must neither free a trial slot nor count as a successful trial, so the breaker stays half-open and "+
				"refuses the new call. Ignore outcomes from another generation (README, step 1).", trials, state, what)
		}
		if !errors.Is(err, fooddelivery.ErrCircuitOpen) {
			t.Fatalf("step 4: the half-open breaker refused a call without calling, but its error does not wrap "+
				"fooddelivery.ErrCircuitOpen: %v. A refused trial fails like an open breaker (step 1's error).", err)
		}
		if s := cb.State(); s != breaker.Closed {
			t.Fatalf("step 4: all %d trial calls succeeded (Settings.HalfOpenCalls %d) and the breaker is %v; "+
				"HalfOpenCalls successful trials close it", trials, trials, s)
		}
	})
}

func TestStep4ClosesOnlyWhenEveryTrialSucceeded(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		cb := breaker.New(breaker.Settings{Name: "test", HalfOpenCalls: 2, Logger: quiet})
		if n, s := fail(cb, 5), cb.State(); s != breaker.Open {
			t.Fatalf("step 4: 5 calls were made through a new breaker, %d of them admitted, each failing with ErrUnavailable, "+
				"and the breaker is %v; it must be open before this test can look at half-open. Finish step 1 first.", n, s)
		}
		halfOpenAfter(t, 4, cb, openFor, "5 failures opened the breaker (Settings.HalfOpenCalls 2)")
		called, err := succeed(cb)
		if s := cb.State(); !called || err != nil || s != breaker.HalfOpen {
			t.Fatalf("step 4: with Settings.HalfOpenCalls 2, the breaker was half-open; the first of 2 trial calls was "+
				"made: %v, Do returned %v, and the breaker is %v. It stays half-open until HalfOpenCalls trials have "+
				"succeeded.", called, err, s)
		}
		succeed(cb)
		if s := cb.State(); s != breaker.Closed {
			t.Fatalf("step 4: with Settings.HalfOpenCalls 2, both trial calls succeeded and the breaker is %v; it must close", s)
		}
	})
}

func TestStep4AnAbandonedTrialFreesItsSlot(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		cb := breaker.New(breaker.Settings{Name: "test", Logger: quiet})
		abandonTrial(t, 4, cb)
		called, err := succeed(cb)
		if !called {
			t.Fatalf("step 4: the only trial call of a half-open breaker (HalfOpenCalls defaults to 1) was abandoned by its "+
				"caller; the next call was refused without calling (error: %v). An abandoned trial records nothing, but it "+
				"must free its trial slot, or the breaker refuses everyone until the process restarts.", err)
		}
		if s := cb.State(); err != nil || s != breaker.Closed {
			t.Fatalf("step 4: %v after 5 failures opened the breaker, its only trial was abandoned and the next trial call "+
				"succeeded; Do returned %v and the breaker is %v. A successful trial closes it.", openFor, err, s)
		}
	})
}

func TestStep4StateIsReadUnderTheLock(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		cb := breaker.New(breaker.Settings{Name: "test", Logger: quiet})
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() { fail(cb, 1) })
			wg.Go(func() { cb.State() }) // a dashboard looks while calls end
		}
		wg.Wait()
		// Under -race, an unlocked read in State() fails this test with a DATA RACE report.
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 4: 10 calls failed at the same time (while others asked for the state) and the breaker is %v; "+
				"5 failures in a row open it, whichever goroutines they come from", s)
		}
	})
}

// panics calls cb.Do with a call that panics, and reports whether the
// panic reached the caller.
func panics(cb *breaker.CircuitBreaker) (propagated bool) {
	defer func() { propagated = recover() != nil }()
	cb.Do(context.Background(), func(context.Context) error { panic("bug in the payment client's decoder") })
	return false
}

func TestStep4APanickingCallStillEnds(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		// Closed: a call that panics has ended, and it failed.
		cb := breaker.New(breaker.Settings{Name: "test", Logger: quiet})
		propagated := 0
		for range 5 {
			if panics(cb) {
				propagated++
			}
		}
		if s := cb.State(); propagated != 5 || s != breaker.Open {
			t.Errorf("step 4: 5 calls of a closed breaker panicked; %d of the 5 panics reached the caller and the breaker is %v. "+
				"A call that panics has failed: record its outcome in a deferred function (set the outcome to failure "+
				"before calling, and to what the call returned after), and let the panic go on.", propagated, s)
		}

		// Half-open: the panicking call is the only trial.
		cb = breaker.New(breaker.Settings{Name: "test", Logger: quiet})
		if n, s := fail(cb, 5), cb.State(); s != breaker.Open {
			t.Fatalf("step 4: 5 calls were made through a new breaker, %d of them admitted, each failing with ErrUnavailable, "+
				"and the breaker is %v; it must be open before this test can look at half-open. Finish step 1 first.", n, s)
		}
		halfOpenAfter(t, 4, cb, openFor, "5 failures opened the breaker")
		p := panics(cb)
		stateAfter := cb.State()
		time.Sleep(openFor)
		called, err := succeed(cb)
		if !p || !called {
			t.Fatalf("step 4: the only trial call of a half-open breaker panicked (the panic reached its caller: %v), and "+
				"the breaker was then %v; %v later a call was refused without calling (error: %v). A trial that panics "+
				"has ended: it must free its trial slot (record the outcome with defer), or the breaker stays half-open, "+
				"refusing every call, until the process restarts.", p, stateAfter, openFor, err)
		}
		if stateAfter != breaker.Open {
			t.Fatalf("step 4: the only trial call of a half-open breaker panicked and the breaker is then %v; a trial "+
				"that panics failed: the breaker opens again for %v.", stateAfter, openFor)
		}
		if s := cb.State(); err != nil || s != breaker.Closed {
			t.Fatalf("step 4: %v after a trial panicked, the next trial succeeded; Do returned %v and the breaker is %v. "+
				"A successful trial closes it.", openFor, err, s)
		}
	})
}

func TestStep4ConcurrentFailuresAreAllCounted(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		// A lost update needs two goroutines in the same few instructions at
		// once: the plain run makes a million calls to give it the chance
		// (and catches a breaker without a mutex in about half the runs on
		// a busy 2-core machine); the race detector needs only a few.
		goroutines, each := 8, 125000
		if raceDetector() {
			each = 500
		}
		failures := goroutines * each
		// One goroutine first: the count itself must be right.
		const alone = 1000
		cb := breaker.New(breaker.Settings{Name: "test", Logger: quiet, ConsecutiveFailures: alone})
		if n, m, s := fail(cb, alone-1), fail(cb, 1), cb.State(); n+m != alone || s != breaker.Open {
			t.Fatalf("step 4: one goroutine made %d failing calls, %d of them admitted, through a breaker with "+
				"Settings.ConsecutiveFailures %d; it is %v. It must open at the last. Finish step 1 first.", alone, n+m, alone, s)
		}
		cb = breaker.New(breaker.Settings{Name: "test", Logger: quiet, ConsecutiveFailures: failures})
		// All goroutines start at once and fail `each` calls; the last of the
		// failures is made alone, after them.
		start := make(chan struct{})
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				<-start
				n := each
				if g == 0 {
					n-- // the last failure comes later
				}
				for range n {
					cb.Do(context.Background(), func(context.Context) error { admitted.Add(1); return unavailable })
				}
			})
		}
		synctest.Wait() // every goroutine waits at the start
		close(start)
		wg.Wait()
		if s := cb.State(); s != breaker.Closed || admitted.Load() != int64(failures-1) {
			t.Fatalf("step 4: %d goroutines made %d calls at once, %d of them admitted and failed; with Settings.ConsecutiveFailures "+
				"%d the breaker is %v. It must open at failure %d, not before, and admit every call until then.",
				goroutines, failures-1, admitted.Load(), failures, s, failures)
		}
		last := fail(cb, 1)
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 4: %d goroutines made %d calls at once, each admitted and failed, then %d more failed; with "+
				"Settings.ConsecutiveFailures %d the breaker is %v. From one goroutine, %d failures open a breaker set to %d; "+
				"from %d at once, failures were lost: two goroutines read the same count and both wrote it plus one. "+
				"Guard every field of the breaker with its mutex, in admission and in recording (go test -race names the field).",
				goroutines, failures-1, last, failures, s, alone, alone, goroutines)
		}
	})
}
