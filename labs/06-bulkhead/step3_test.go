package bulkhead_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
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
