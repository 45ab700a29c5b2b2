package bulkhead_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/system"
	bulkhead "github.com/gophereats/resilience/labs/06-bulkhead"
)

// The dinner-rush scenario of steps 2 and 6, scaled down (the curriculum's
// 40 slots per dependency, divided by four): a gateway that serves at most
// 30 requests at once, one checkout every 100ms for 6 seconds, and from
// the third second on a customer browsing a restaurant (menu and delivery
// estimate) every 50ms.
const (
	gatewayLimit   = 30
	ordersSlots    = 10
	menuSlots      = 10
	courierSlots   = 10
	menuLatency    = 20 * time.Millisecond
	courierLatency = 30 * time.Millisecond
	// browseLatency is a healthy browse: the restaurant list, then its menu
	// and its ETA side by side.
	browseLatency  = menuLatency + max(menuLatency, courierLatency)
	paymentLatency = 200 * time.Millisecond // a healthy charge
	paymentHang    = time.Minute            // a hanging charge answers 503 after this
	rushLength     = 6 * time.Second
	checkoutEvery  = 100 * time.Millisecond
	browseFrom     = 3 * time.Second // by then 30 hung checkouts fill a gateway without compartments
	browseEvery    = 50 * time.Millisecond
	browsePatience = 5 * time.Second // the app gives up on a page after this
)

var compartments = map[string]int{
	system.GatewayOrders: ordersSlots, system.GatewayMenu: menuSlots, system.GatewayCourier: courierSlots,
}

const (
	browseQuery   = `{ restaurant(id: "luigis") { name menu { name } eta } }`
	checkoutQuery = `mutation($input: PlaceOrderInput!) { placeOrder(input: $input) { id status } }`
)

var checkoutVars = map[string]any{"input": map[string]any{
	"restaurantId": system.SampleRestaurant,
	"items":        []any{map[string]any{"dishId": system.SampleDish, "quantity": 1}},
	"card":         "tok_visa",
}}

type rushResult struct {
	browses, browseOK int
	browseP99         time.Duration // over the browses that succeeded; 0 when none did
	failures          map[string]int
	checkouts         int
	refusedFast       int   // checkouts refused with BULKHEAD_FULL within slack
	orderPeak         int64 // peak checkouts in flight at the order service
}

func (r rushResult) successRate() float64 { return float64(r.browseOK) / float64(r.browses) }

// rush runs the dinner rush against a system whose gateway uses guards
// (nil: no compartments, the gateway's own limit is the only pool).
func rush(t *testing.T, step int, guards func(string) fooddelivery.Guard, paymentHangs bool) rushResult {
	sys := labtest.StartSystem(t, system.Config{
		Limits:        map[string]int{"gateway": gatewayLimit},
		GatewayGuards: guards,
	})
	charge := faults.Fault{Latency: paymentLatency}
	if paymentHangs {
		charge = faults.Fault{Hang: paymentHang}
	}
	for _, f := range []struct {
		service, route string
		fault          faults.Fault
	}{
		{"menu", "", faults.Fault{Latency: menuLatency}},
		{"courier", "GET /eta/{restaurantId}", faults.Fault{Latency: courierLatency}},
		{"payment", "POST /charges", charge},
	} {
		if err := sys.Faults.Set(f.service, f.route, f.fault); err != nil {
			t.Fatalf("step %d: setting up the faults: %v", step, err)
		}
	}

	var mu sync.Mutex
	res := rushResult{failures: map[string]int{}}
	var latencies []time.Duration
	browse := func() {
		ctx, cancel := context.WithTimeout(context.Background(), browsePatience)
		defer cancel()
		began := time.Now()
		resp, _, err := sys.GraphQL(ctx, "", browseQuery, nil)
		took := time.Since(began)
		why := ""
		switch {
		case err != nil:
			why = "gateway refused the request: " + gateway.ErrorCode(err)
		case len(resp.Errors) > 0:
			why = resp.Errors[0].Code() + " on " + pathOf(resp.Errors[0])
		default:
			var data restaurantReply
			if json.Unmarshal(resp.Data, &data) != nil || data.Restaurant == nil || len(data.Restaurant.Menu) == 0 || data.Restaurant.ETA == nil {
				why = "incomplete data"
			}
		}
		mu.Lock()
		defer mu.Unlock()
		res.browses++
		if why != "" {
			res.failures[why]++
			return
		}
		res.browseOK++
		latencies = append(latencies, took)
	}
	checkout := func() {
		ctx, cancel := context.WithTimeout(context.Background(), paymentHang+30*time.Second)
		defer cancel()
		began := time.Now()
		resp, _, err := sys.GraphQL(ctx, system.SampleToken, checkoutQuery, checkoutVars)
		took := time.Since(began)
		mu.Lock()
		defer mu.Unlock()
		res.checkouts++
		if err == nil && fieldCode(resp, "placeOrder") == gateway.CodeBulkheadFull && took <= slack {
			res.refusedFast++
		}
	}

	var wg sync.WaitGroup
	began := time.Now()
	for tick := time.Duration(0); tick < rushLength; tick += browseEvery {
		if tick%checkoutEvery == 0 {
			wg.Go(checkout)
		}
		if tick >= browseFrom {
			wg.Go(browse)
		}
		time.Sleep(began.Add(tick + browseEvery).Sub(time.Now()))
	}
	wg.Wait()
	res.orderPeak = sys.Metrics.Route("order", "POST /orders").PeakInFlight.Load()
	if len(latencies) > 0 {
		slices.Sort(latencies)
		res.browseP99 = latencies[(len(latencies)*99+99)/100-1] // nearest rank
	}
	return res
}

func pathOf(e gateway.Error) string {
	b, _ := json.Marshal(e.Path)
	return string(b)
}

// mainFailure is the most common reason browses failed, for messages.
func (r rushResult) mainFailure() string {
	best, n := "", 0
	for why, c := range r.failures {
		if c > n || (c == n && why < best) {
			best, n = why, c
		}
	}
	return best
}

func TestStep2BrowsingUnaffectedWhilePaymentHangs(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2, Stuck: "checkouts or browses were still waiting in the gateway"}, func(t *testing.T) {
		r := rush(t, 2, bulkhead.Compartments(compartments, 0), true)

		if r.browseOK != r.browses {
			t.Errorf("step 2: while payment hung, %d of %d menu/courier requests failed (mostly: %s). Checkouts waiting on payment held "+
				"the gateway's slots: its order service peaked at %d checkouts in flight.\n"+
				"With a checkout compartment of %d slots, hung checkouts can hold at most %d of the gateway's %d slots and browsing keeps working.",
				r.browses-r.browseOK, r.browses, r.mainFailure(), r.orderPeak, ordersSlots, ordersSlots, gatewayLimit)
		}
		if limit := browseLatency * 12 / 10; r.browseP99 > limit {
			t.Errorf("step 2: while payment hung, the 99th percentile of menu/courier requests was %v; healthy it is %v, and it must stay within %v.",
				r.browseP99, browseLatency, limit)
		}
		if want := r.checkouts - ordersSlots; r.refusedFast < want || r.orderPeak > ordersSlots {
			t.Errorf("step 2: payment hung during %d checkouts; %d were refused at once with %s and the order service peaked at %d checkouts in flight.\n"+
				"Expected: at most %d (the checkout compartment) reach the order service and hang; the other %d are refused at once.",
				r.checkouts, r.refusedFast, gateway.CodeBulkheadFull, r.orderPeak, ordersSlots, want)
		}
	})
}
