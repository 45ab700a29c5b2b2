package bulkhead_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
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

func TestStep1FullBulkheadRejectsAtOnce(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "a call was still waiting for a slot of a full bulkhead", Leak: leakHint}, func(t *testing.T) {
		const limit = 3
		b := bulkhead.New("payments", limit, 0)
		running, release := holdAll(b.Do, limit, 0)
		require.Equal(t, limit, running, "step 1: a bulkhead with %d slots must let %d calls run at once", limit, limit)

		took, ran, err := attempt(b.Do)
		release()
		if !errors.Is(err, fooddelivery.ErrBulkheadFull) || took > slack || ran {
			t.Fatalf("step 1: all %d slots of a bulkhead with no wait were taken; one more call waited %v, ran: %v, and returned %v.\n"+
				"%s A full bulkhead must refuse at once, without running the call, with an error wrapping fooddelivery.ErrBulkheadFull "+
				"(waiting for a slot is how the shared pool filled up).", limit, took, ran, err, refusalProblem(err, took, ran, 0))
		}
		_, ran, err = attempt(b.Do)
		require.NoError(t, err, "step 1: once the calls holding the slots returned, a new call must run")
		require.True(t, ran, "step 1: Do returned no error but did not run the call")
	})
}

func TestStep1WaitIsBounded(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "a call was still waiting for a slot of a full bulkhead", Leak: leakHint}, func(t *testing.T) {
		const maxWait = 100 * time.Millisecond
		b := bulkhead.New("menu", 1, maxWait)
		_, release := holdAll(b.Do, 1, 0)

		took, ran, err := attempt(b.Do)
		if !errors.Is(err, fooddelivery.ErrBulkheadFull) || took < maxWait-slack || took > maxWait+slack || ran {
			release()
			t.Fatalf("step 1: the bulkhead's only slot was taken and it may wait %v for one; a call waited %v, ran: %v, and returned %v.\n"+
				"%s It must wait for a free slot at most %v, then refuse with an error wrapping fooddelivery.ErrBulkheadFull.",
				maxWait, took, ran, err, refusalProblem(err, took, ran, maxWait), maxWait)
		}

		// A slot that frees up within the wait is taken.
		const freedAfter = 37 * time.Millisecond
		go func() { time.Sleep(freedAfter); release() }()
		took, ran, err = attempt(b.Do)
		if err != nil || !ran || took > freedAfter+slack {
			why := "It must take the slot as soon as it is free: send on the channel in the same select as the timer, rather than checking now and then."
			if errors.Is(err, fooddelivery.ErrBulkheadFull) && took >= maxWait {
				why = "The slot was free, yet the call never got it: something else took it first. Was a goroutine started for the call " +
					"refused just before still waiting to take a slot on its behalf? A refused call must leave nothing behind: a helper goroutine that takes a slot for a waiter holds it for nobody."
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
		var guarded []string
		for _, dep := range []string{system.GatewayOrders, system.GatewayCourier} {
			if guards(dep) != nil {
				guarded = append(guarded, dep)
			}
		}
		if len(guarded) > 0 {
			t.Fatalf("step 1: Compartments was given a limit for %q only (1 slot), yet returned a guard for %d of the 2 others: %q. "+
				"A dependency without an entry in limits gets a nil guard, and the system calls it unguarded.", system.GatewayMenu, len(guarded), guarded)
		}
		first := guards(system.GatewayMenu)
		if first == nil {
			t.Fatalf("step 1: Compartments was given a limit for %q but returned no guard for it", system.GatewayMenu)
		}
		_, release := holdAll(first, 1, 0)
		took, ran, err := attempt(guards(system.GatewayMenu))
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
		for i, r := range results {
			require.NoError(t, r.transport, "step 1: the courier service hung for %v; query %d of %d to the gateway failed outright after %v",
				courierHang, i+1, queries, r.took)
			require.NotEmpty(t, r.name, "step 1: the courier service hung for %v, but the restaurant's name (from the menu service) must still "+
				"be served; query %d of %d got none after %v", courierHang, i+1, queries, r.took)
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

// TestStep1BadSettingsPanic builds bulkheads that cannot work: no slot at
// all refuses every call for ever, and a negative wait means nothing.
// Both are mistakes in the code that builds them, so New panics, and the
// service fails as it starts rather than in its first rush.
func TestStep1BadSettingsPanic(t *testing.T) {
	for _, c := range []struct {
		slots int
		wait  time.Duration
	}{{0, 0}, {-1, 0}, {3, -time.Millisecond}} {
		panicked := func() (p bool) {
			defer func() { p = recover() != nil }()
			bulkhead.New("payments", c.slots, c.wait)
			return false
		}()
		if !panicked {
			t.Errorf("step 1: New(\"payments\", %d, %v) returned a bulkhead; a bulkhead with fewer than 1 slot or a negative wait "+
				"is a mistake in the code that builds it: panic, so it shows when the service starts.", c.slots, c.wait)
		}
	}
}
