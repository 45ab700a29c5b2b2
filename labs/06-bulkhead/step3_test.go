package bulkhead_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gophereats/resilience/fooddelivery/labtest"
	bulkhead "github.com/gophereats/resilience/labs/06-bulkhead"
)

func TestStep3SlotReleasedAfterSuccessAndError(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3, Stuck: "a call of the bulkhead never returned"}, func(t *testing.T) {
		const limit = 3
		b := bulkhead.New("orders", limit, 0)
		failure := errors.New("order service said no")
		for i := range 6 {
			err := b.Do(context.Background(), func(context.Context) error {
				if i%2 == 1 {
					return failure
				}
				return nil
			})
			if i%2 == 1 && !errors.Is(err, failure) {
				t.Fatalf("step 3: the call failed with %q, but Do returned %v: return the call's own error", failure, err)
			}
		}
		if n := capacity(b.Do, limit+2, 0); n != limit {
			t.Fatalf("step 3: after 3 calls that succeeded and 3 that failed, the bulkhead let %d calls run at once; its limit is %d.\n"+
				"%s", n, limit, slotAdvice(n, limit))
		}

		// Under load: a second release takes the slot of a call still running.
		const held, failed = limit - 1, 3
		_, release := holdAll(b.Do, held, 0)
		for range failed {
			b.Do(context.Background(), func(context.Context) error { return failure })
		}
		n := capacity(b.Do, limit+2, 0)
		release()
		if n != limit-held {
			t.Fatalf("step 3: while %d calls held %d of the %d slots, %d calls failed; then %d more calls could run at once, not %d.\n"+
				"%s A second release can go unnoticed while the bulkhead is idle, but under load it frees a slot that another call still holds.",
				held, held, limit, failed, n, limit-held, slotAdvice(n, limit-held))
		}
	})
}

func TestStep3SlotReleasedAfterPanic(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3, Stuck: "a call of the bulkhead never returned"}, func(t *testing.T) {
		const limit, panics = 3, 3
		b := bulkhead.New("menu", limit, 0)
		propagated := 0
		for range panics {
			func() {
				defer func() {
					if recover() != nil {
						propagated++
					}
				}()
				b.Do(context.Background(), func(context.Context) error { panic("bug in a menu decoder") })
			}()
		}
		if n := capacity(b.Do, limit+2, 0); n != limit {
			t.Fatalf("step 3: after %d calls that panicked, the bulkhead let %d calls run at once; its limit is %d.\n%s",
				panics, n, limit, slotAdvice(n, limit))
		}
		if propagated != panics {
			t.Fatalf("step 3: %d calls panicked but only %d panics reached the caller: give the slot back (defer) and let the panic go on; "+
				"hiding it turns a bug into a silent wrong answer.", panics, propagated)
		}
	})
}

func TestStep3CancelledWaitTakesNoSlot(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3, Stuck: "a call was still waiting for a slot",
		Leak: "something was still waiting for a slot on behalf of a caller that had given up"}, func(t *testing.T) {
		const limit, waiters, maxWait, gaveUp = 2, 3, time.Second, 100 * time.Millisecond
		b := bulkhead.New("courier", limit, maxWait)
		_, release := holdAll(b.Do, limit, 0)

		var wg sync.WaitGroup
		var ran, cancelled atomic.Int64
		var slowest atomic.Int64
		var other atomic.Value // an error that did not wrap the context's, for the message
		for range waiters {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), gaveUp)
				defer cancel()
				began := time.Now()
				err := b.Do(ctx, func(context.Context) error { ran.Add(1); return nil })
				if errors.Is(err, context.DeadlineExceeded) {
					cancelled.Add(1)
				} else {
					other.Store(fmt.Sprint(err))
				}
				if took := int64(time.Since(began)); took > slowest.Load() {
					slowest.Store(took)
				}
			})
		}
		wg.Wait()
		release()
		time.Sleep(maxWait) // anything still waiting on the callers' behalf would take its slot now

		if ran.Load() != 0 || cancelled.Load() != waiters || time.Duration(slowest.Load()) > gaveUp+slack {
			got := ""
			if e := other.Load(); e != nil {
				got = fmt.Sprintf(" (one returned: %v)", e)
			}
			t.Fatalf("step 3: %d callers waited for a slot of a full bulkhead and gave up after %v; %d calls ran anyway, "+
				"%d of %d returned an error wrapping the context's error%s, the slowest returned after %v.\n"+
				"A caller that gives up while waiting must get its context's error at once (wrap ctx.Err() with %%w), and nothing may run for it.",
				waiters, gaveUp, ran.Load(), cancelled.Load(), waiters, got, time.Duration(slowest.Load()))
		}
		if n := capacity(b.Do, limit+2, maxWait); n != limit {
			t.Fatalf("step 3: %d callers gave up waiting for a slot; once the calls holding the slots returned, the bulkhead let %d calls run at once; its limit is %d.\n"+
				"%s A waiter that gave up must hold nothing: nobody is left to give back a slot handed to it later.",
				waiters, n, limit, slotAdvice(n, limit))
		}
	})
}

// TestStep3CancelAsTheSlotFreesRunsNothing: a slot that frees up at the
// moment the waiting caller gives up must not start the call on a context
// that is already cancelled.
func TestStep3CancelAsTheSlotFreesRunsNothing(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3, Stuck: "a call was still waiting for a slot", Leak: leakHint}, func(t *testing.T) {
		// One P: the goroutine that frees the slot also cancels the waiter,
		// and the waiter cannot run in between, so the two always coincide.
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		const trials, maxWait = 20, time.Second
		var ranCancelled, ran, gaveUp, leaked int
		var other error // an error that did not wrap context.Canceled, for the message
		for range trials {
			b := bulkhead.New("payments", 1, maxWait)
			hold := make(chan struct{})
			waiterCtx, cancelWaiter := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { // holds the only slot; when it ends, its caller gives up on the waiter
				b.Do(context.Background(), func(context.Context) error { <-hold; return nil })
				cancelWaiter()
			})
			synctest.Wait() // the holder has the slot
			var err error
			wg.Go(func() {
				err = b.Do(waiterCtx, func(ctx context.Context) error {
					ran++
					if ctx.Err() != nil {
						ranCancelled++
					}
					return nil
				})
			})
			synctest.Wait() // the waiter waits for the slot
			close(hold)     // the slot frees up, and at once the waiter's caller gives up
			wg.Wait()
			switch {
			case errors.Is(err, context.Canceled):
				gaveUp++
			case err != nil:
				other = err
			}
			if n := capacity(b.Do, 2, 0); n != 1 {
				leaked++
			}
		}
		if ranCancelled > 0 || leaked > 0 || ran+gaveUp != trials {
			t.Fatalf("step 3: %d times, a slot freed up in the same instant as the caller waiting for it gave up. %d calls "+
				"ran, %d of them on a context that was already cancelled; %d times Do returned an error wrapping "+
				"context.Canceled (other error: %v); %d times the bulkhead was left without its one slot.\n"+
				"The wait's select picks either case when both are ready: after taking a slot, check ctx.Err() again "+
				"(as x/sync/semaphore does), and if the caller has gone, give the slot back and return the context's error.",
				trials, ran, ranCancelled, gaveUp, other, leaked)
		}
	})
}

// TestStep3CallerAlreadyGoneRunsNothing: a caller whose context is already
// done when it calls Do gets its context's error at once, and its call does
// not run, whether a slot is free or not.
func TestStep3CallerAlreadyGoneRunsNothing(t *testing.T) {
	cases := []struct {
		name    string
		maxWait time.Duration
		held    int // of the 2 slots, held by other calls
		ended   func() (context.Context, context.CancelFunc)
		want    error
	}{
		{"cancelled, both slots free, no wait", 0, 0, cancelledCtx, context.Canceled},
		{"cancelled, one slot free, 1s wait", time.Second, 1, cancelledCtx, context.Canceled},
		{"deadline passed, both slots free, 1s wait", time.Second, 0, expiredCtx, context.DeadlineExceeded},
		{"cancelled, both slots held, 1s wait", time.Second, 2, cancelledCtx, context.Canceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 3, Stuck: "a call of the bulkhead never returned", Leak: leakHint}, func(t *testing.T) {
				const limit, trials = 2, 10
				b := bulkhead.New("menu", limit, c.maxWait)
				_, release := holdAll(b.Do, c.held, 0)
				ran, wrapped := 0, 0
				var slowest time.Duration
				var other error
				for range trials {
					ctx, cancel := c.ended()
					began := time.Now()
					err := b.Do(ctx, func(context.Context) error { ran++; return nil })
					cancel()
					slowest = max(slowest, time.Since(began))
					if errors.Is(err, c.want) {
						wrapped++
					} else {
						other = err
					}
				}
				release()
				if ran != 0 || wrapped != trials || slowest > slack {
					t.Fatalf("step 3: %s: %d of %d calls whose caller had already gone (%v) ran anyway; %d of %d returned "+
						"an error wrapping %v (other: %v); the slowest returned after %v.\n"+
						"Check ctx.Err() before taking a slot, on the fast path too: a caller whose context is done gets "+
						"its context's error at once, and nothing runs for it, whether a slot is free or not.",
						c.name, ran, trials, c.want, wrapped, trials, c.want, other, slowest)
				}
				if n := capacity(b.Do, limit+2, 0); n != limit {
					t.Fatalf("step 3: %s: after %d calls of callers already gone, the bulkhead let %d calls run at once; its limit is %d.\n%s",
						c.name, trials, n, limit, slotAdvice(n, limit))
				}
			})
		})
	}
}

func cancelledCtx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx, cancel
}

func expiredCtx() (context.Context, context.CancelFunc) {
	return context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
}
