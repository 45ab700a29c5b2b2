package bulkhead_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/system"
)

// The helpers of every step: holding a bulkhead's slots (holdAll,
// attempt), the dinner rush through the gateway (rush), the shard
// arithmetic (blastRadius).
// The step tests are in stepN_test.go, one file per README step; the
// experiment, the last step, is in step6_experiment_test.go (go test runs
// the files in name order, so it runs after the other steps).

// slack is what the tests forgive on top of an expected wait. It is zero:
// fake time is exact, so a bulkhead that refuses at once takes 0s and one
// that waits 100ms takes exactly 100ms. Anything more is a polling loop or
// a hidden grace period.
const slack = 0

// leakHint is the Leak message of the tests that take slots: a slot bug
// often shows first as a goroutine left waiting for a slot.
const leakHint = "something was still waiting for a slot on behalf of a call that had already returned " +
	"(a helper goroutine taking the slot for a waiter, after the waiter left, holds it for nobody)"

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
// what happened: how long guard took, whether the call ran, and what guard
// returned.
func attempt(guard fooddelivery.Guard) (took time.Duration, ran bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	err = guard(ctx, func(context.Context) error { ran = true; return nil })
	return time.Since(began), ran, err
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

// slotAdvice explains a capacity that is not the limit.
func slotAdvice(got, limit int) string {
	if got > limit {
		return "A slot was given back twice, so the bulkhead grew. Give a slot back exactly once, in one place (a defer)."
	}
	return "A slot was never given back, so the bulkhead shrank. Give it back on every way out of the call."
}

// The dinner-rush scenario of steps 2 and 6, scaled down (the full-size rush's
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

func customer(i int) string { return fmt.Sprintf("customer-%d", i) }

// blastRadius assigns customers to shards with assign and returns the
// number of distinct shards used, how many customers used each, and, for a
// poison customer picked at random among them, the expected fraction of
// the other customers that share its whole shard (they lose every worker
// the poison customer takes down) and that share at least one worker
// (they are degraded).
func blastRadius(customers int, assign func(string) ([]int, error)) (combos int, perShard map[string]int, whole, some float64, err error) {
	perShard = map[string]int{}
	shards := map[string][]int{}
	for i := range customers {
		s, err := assign(customer(i))
		if err != nil {
			return 0, nil, 0, 0, err
		}
		k := fmt.Sprint(s)
		perShard[k]++
		shards[k] = s
	}
	// Over all ordered pairs (poison, other) of distinct customers.
	pairs := float64(customers) * float64(customers-1)
	for a, na := range perShard {
		for b, nb := range perShard {
			n := float64(na * nb)
			if a == b {
				n = float64(na * (na - 1))
				whole += n / pairs
			}
			if overlaps(shards[a], shards[b]) {
				some += n / pairs
			}
		}
	}
	return len(perShard), perShard, whole, some, nil
}

func overlaps(a, b []int) bool {
	for _, w := range a {
		if slices.Contains(b, w) {
			return true
		}
	}
	return false
}

// plainShard is plain sharding, for comparison: workers cut into fixed
// groups of size, a customer's group from a hash of the name.
func plainShard(name string, workers, size int) []int {
	groups := workers / size
	var h uint32 = 2166136261
	for _, c := range []byte(name) {
		h = (h ^ uint32(c)) * 16777619
	}
	g := int(h % uint32(groups))
	s := make([]int, size)
	for i := range s {
		s[i] = g*size + i
	}
	return s
}

const (
	shardWorkers = 8
	shardSize    = 2
)

// binomial returns n choose k.
func binomial(n, k int) int {
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
	}
	return r
}

// chiSquareLimit is the chi-square value that 27 degrees of freedom (28
// combinations) exceed with probability 0.001: shards that are equally
// likely stay below it 999 times in 1000.
const chiSquareLimit = 55.5
