package bulkhead_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/system"
	bulkhead "github.com/gophereats/resilience/labs/06-bulkhead"
)

// slack is what the tests forgive on top of an expected wait. It is zero:
// fake time is exact, so a bulkhead that refuses at once takes 0s and one
// that waits 100ms takes exactly 100ms. Anything more is a polling loop or
// a hidden grace period.
const slack = 0

// leakHint is the Leak message of the tests that take slots: a slot bug
// often shows first as a goroutine left waiting for a slot.
const leakHint = "something was still waiting for a slot on behalf of a call that had already returned " +
	"(a helper goroutine taking the slot for a waiter: see the step 3 hint \"a caller that gave up still ends up holding a slot\")"

// holdAll starts n calls through guard that each take a slot and keep it
// until release is closed. It returns how many of them got a slot after
// wait (past any bulkhead's maximum wait), and a function that lets them
// all finish.
func holdAll(guard fooddelivery.Guard, n int, wait time.Duration) (running int, release func()) {
	var started atomic.Int64
	hold := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			// A bound for a bulkhead that waits for a slot for ever.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			guard(ctx, func(context.Context) error {
				started.Add(1)
				<-hold
				return nil
			})
		})
	}
	time.Sleep(wait + time.Millisecond)
	return int(started.Load()), func() { close(hold); wg.Wait() }
}

// capacity is how many calls guard lets run at once, trying up to n.
func capacity(guard fooddelivery.Guard, n int, wait time.Duration) int {
	running, release := holdAll(guard, n, wait)
	release()
	return running
}

// attempt runs one call through guard with a minute's patience and says
// what happened.
func attempt(guard fooddelivery.Guard) (err error, took time.Duration, ran bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	err = guard(ctx, func(context.Context) error { ran = true; return nil })
	return err, time.Since(began), ran
}

func TestStep1FullBulkheadRejectsAtOnce(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "a call was still waiting for a slot of a full bulkhead", Leak: leakHint}, func(t *testing.T) {
		const limit = 3
		b := bulkhead.New("payments", limit, 0)
		running, release := holdAll(b.Do, limit, 0)
		require.Equal(t, limit, running, "step 1: a bulkhead with %d slots must let %d calls run at once", limit, limit)

		err, took, ran := attempt(b.Do)
		release()
		if !errors.Is(err, fooddelivery.ErrBulkheadFull) || took > slack || ran {
			t.Fatalf("step 1: all %d slots of a bulkhead with no wait were taken; one more call waited %v, ran: %v, and returned %v.\n"+
				"%s A full bulkhead must refuse at once, without running the call, with an error wrapping fooddelivery.ErrBulkheadFull "+
				"(waiting for a slot is how the shared pool filled up).", limit, took, ran, err, refusalProblem(err, took, ran, 0))
		}
		err, _, ran = attempt(b.Do)
		require.NoError(t, err, "step 1: once the calls holding the slots returned, a new call must run")
		require.True(t, ran, "step 1: Do returned no error but did not run the call")
	})
}

// refusalProblem names what is wrong with a call to a full bulkhead that
// should have been refused after wait.
func refusalProblem(err error, took time.Duration, ran bool, wait time.Duration) string {
	switch {
	case ran:
		return "The call ran, so the bulkhead let one more call in than it has slots."
	case err == nil:
		return "Do returned no error for a call it did not run."
	case !errors.Is(err, fooddelivery.ErrBulkheadFull):
		return "The error does not wrap fooddelivery.ErrBulkheadFull, so callers cannot tell a full bulkhead from a failed call."
	case took > wait+slack:
		return fmt.Sprintf("It waited %v longer than the bulkhead's maximum wait of %v.", took-wait, wait)
	case took < wait-slack:
		return fmt.Sprintf("It refused %v before the end of the bulkhead's maximum wait of %v.", wait-took, wait)
	}
	return ""
}

func TestStep1WaitIsBounded(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "a call was still waiting for a slot of a full bulkhead", Leak: leakHint}, func(t *testing.T) {
		const maxWait = 100 * time.Millisecond
		b := bulkhead.New("menu", 1, maxWait)
		_, release := holdAll(b.Do, 1, 0)

		err, took, ran := attempt(b.Do)
		if !errors.Is(err, fooddelivery.ErrBulkheadFull) || took < maxWait-slack || took > maxWait+slack || ran {
			release()
			t.Fatalf("step 1: the bulkhead's only slot was taken and it may wait %v for one; a call waited %v, ran: %v, and returned %v.\n"+
				"%s It must wait for a free slot at most %v, then refuse with an error wrapping fooddelivery.ErrBulkheadFull.",
				maxWait, took, ran, err, refusalProblem(err, took, ran, maxWait), maxWait)
		}

		// A slot that frees up within the wait is taken.
		const freedAfter = 37 * time.Millisecond
		go func() { time.Sleep(freedAfter); release() }()
		err, took, ran = attempt(b.Do)
		if err != nil || !ran || took > freedAfter+slack {
			why := "It must take the slot as soon as it is free: send on the channel in the same select as the timer, rather than checking now and then."
			if errors.Is(err, fooddelivery.ErrBulkheadFull) && took >= maxWait {
				why = "The slot was free, yet the call never got it: something else took it first. Was a goroutine started for the call " +
					"refused just before still waiting to take a slot on its behalf? A refused call must leave nothing behind (step 3 hint)."
			}
			t.Fatalf("step 1: a slot freed up %v into a call's wait of at most %v; the call waited %v, ran: %v, error: %v.\n%s",
				freedAfter, maxWait, took, ran, err, why)
		}
	})
}

func TestStep1CompartmentsAreSeparate(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Leak: leakHint}, func(t *testing.T) {
		const slots = 2
		guards := bulkhead.Compartments(map[string]int{
			system.GatewayOrders: slots, system.GatewayMenu: slots, system.GatewayCourier: slots,
		}, 0)
		orders, menu, courier := guards(system.GatewayOrders), guards(system.GatewayMenu), guards(system.GatewayCourier)
		require.NotNil(t, orders, "step 1: Compartments returned no guard for %q", system.GatewayOrders)
		require.NotNil(t, menu, "step 1: Compartments returned no guard for %q", system.GatewayMenu)
		require.NotNil(t, courier, "step 1: Compartments returned no guard for %q", system.GatewayCourier)

		running, release := holdAll(orders, 3*slots, 0)
		defer release()
		if running != slots {
			t.Fatalf("step 1: the checkout compartment has %d slots, yet %d of %d checkout calls ran at once through it. "+
				"Each dependency needs its own bulkhead, created once and used for every call.", slots, running, 3*slots)
		}
		for _, c := range []struct {
			name  string
			guard fooddelivery.Guard
		}{{"menu", menu}, {"courier", courier}} {
			if n := capacity(c.guard, 2*slots, 0); n != slots {
				t.Errorf("step 1: with every checkout slot taken, %d of %d %s calls could run at once; the %s compartment has %d slots of its own. "+
					"One pool shared by all dependencies lets a hanging one take everything: give each dependency its own bulkhead.",
					n, 2*slots, c.name, c.name, slots)
			}
		}
	})
}

func TestStep1CompartmentsFollowLimitsAndWait(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "a call was still waiting for a slot of a full compartment", Leak: leakHint}, func(t *testing.T) {
		const maxWait = 50 * time.Millisecond
		guards := bulkhead.Compartments(map[string]int{system.GatewayMenu: 1}, maxWait)
		for _, dep := range []string{system.GatewayOrders, system.GatewayCourier} {
			if guards(dep) != nil {
				t.Fatalf("step 1: Compartments was given a limit for %q only, yet returned a guard for %q. "+
					"A dependency without an entry in limits gets a nil guard, and the system calls it unguarded.", system.GatewayMenu, dep)
			}
		}
		first := guards(system.GatewayMenu)
		if first == nil {
			t.Fatalf("step 1: Compartments was given a limit for %q but returned no guard for it", system.GatewayMenu)
		}
		_, release := holdAll(first, 1, 0)
		err, took, ran := attempt(guards(system.GatewayMenu))
		release()
		if !errors.Is(err, fooddelivery.ErrBulkheadFull) || took < maxWait-slack || took > maxWait+slack || ran {
			t.Fatalf("step 1: the menu compartment has 1 slot and a maximum wait of %v. One call held the slot through the guard Compartments returned; "+
				"a call through the guard returned by a second lookup waited %v, ran: %v, and returned %v.\n"+
				"%s Every lookup of a dependency must give the same bulkhead, created once in Compartments with the maxWait it was given.",
				maxWait, took, ran, err, refusalProblem(err, took, ran, maxWait))
		}
	})
}

func TestStep1CallGetsCallersContext(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "a call never saw its caller give up"}, func(t *testing.T) {
		type key struct{}
		const cancelAfter = time.Second
		b := bulkhead.New("courier", 1, 0)
		ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "order-42"))
		defer cancel()
		time.AfterFunc(cancelAfter, cancel)
		var value any
		var sawCancel bool
		err := b.Do(ctx, func(ctx context.Context) error {
			value = ctx.Value(key{})
			timer := time.NewTimer(time.Minute)
			defer timer.Stop()
			select {
			case <-ctx.Done():
				sawCancel = true
				return ctx.Err()
			case <-timer.C:
				return nil
			}
		})
		if value != "order-42" || !sawCancel || !errors.Is(err, context.Canceled) {
			t.Fatalf("step 1: the caller's context carried the value %q and was cancelled after %v. Inside the call the context carried %v, "+
				"the cancellation reached the call: %v, and Do returned %v.\n"+
				"Pass the caller's ctx to call unchanged: its deadline and cancellation must reach the dependency.",
				"order-42", cancelAfter, value, sawCancel, err)
		}
	})
}

// restaurantReply is the data of browseQuery.
type restaurantReply struct {
	Restaurant *struct {
		Name string           `json:"name"`
		Menu []map[string]any `json:"menu"`
		ETA  *string          `json:"eta"`
	} `json:"restaurant"`
}

// fieldCode returns the error code reported at path, or "".
func fieldCode(resp *gateway.Response, path ...any) string {
	want, _ := json.Marshal(path)
	for _, e := range resp.Errors {
		if pathOf(e) == string(want) {
			return e.Code()
		}
	}
	return ""
}

func TestStep1GatewayRefusesFastWhenCompartmentFull(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "the gateway was still waiting for the hanging courier service"}, func(t *testing.T) {
		const courierSlots, queries, courierHang = 5, 8, 30 * time.Second
		sys := labtest.StartSystem(t, system.Config{
			Limits: map[string]int{"gateway": gatewayLimit},
			GatewayGuards: bulkhead.Compartments(map[string]int{
				system.GatewayOrders: 10, system.GatewayMenu: 10, system.GatewayCourier: courierSlots,
			}, 0),
		})
		require.NoError(t, sys.Faults.Set("courier", "GET /eta/{restaurantId}", faults.Fault{Hang: courierHang}))

		type result struct {
			took      time.Duration
			code      string
			name      string
			transport error
		}
		results := make([]result, queries)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				began := time.Now()
				resp, _, err := sys.GraphQL(ctx, "", `{ restaurant(id: "luigis") { name eta } }`, nil)
				results[i].took, results[i].transport = time.Since(began), err
				if err == nil {
					var data restaurantReply
					if json.Unmarshal(resp.Data, &data) == nil && data.Restaurant != nil {
						results[i].name = data.Restaurant.Name
					}
					results[i].code = fieldCode(resp, "restaurant", "eta")
				}
			})
		}
		wg.Wait()

		refused, slowest := 0, time.Duration(0)
		for _, r := range results {
			require.NoError(t, r.transport, "step 1: a query to the gateway failed outright")
			require.NotEmpty(t, r.name, "step 1: the courier service hung, but the restaurant's name (from the menu service) must still be served")
			if r.code == gateway.CodeBulkheadFull {
				refused++
				slowest = max(slowest, r.took)
			}
		}
		reached := sys.Metrics.Route("courier", "GET /eta/{restaurantId}").Received.Load()
		if refused != queries-courierSlots || reached > courierSlots || slowest > slack {
			t.Fatalf("step 1: the courier service hung and %d queries asked for an ETA at once; the courier compartment has %d slots.\n"+
				"%d calls reached the courier service and %d ETAs were refused (slowest refusal took %v).\n"+
				"Expected: %d reach it, the other %d are refused at once with extensions.code %s "+
				"(errors.Is(err, fooddelivery.ErrBulkheadFull)).", queries, courierSlots, reached, refused, slowest,
				courierSlots, queries-courierSlots, gateway.CodeBulkheadFull)
		}
	})
}

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

// slotAdvice explains a capacity that is not the limit.
func slotAdvice(got, limit int) string {
	if got > limit {
		return "A slot was given back twice, so the bulkhead grew. Give a slot back exactly once, in one place (a defer)."
	}
	return "A slot was never given back, so the bulkhead shrank. Give it back on every way out of the call."
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
