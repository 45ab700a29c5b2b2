package deadlines_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/order"
	"github.com/gophereats/resilience/fooddelivery/system"
	deadlines "github.com/gophereats/resilience/labs/02-deadlines"
)

const (
	own    = 10 * time.Second       // the order service's own budget for one request
	need   = 250 * time.Millisecond // the least a checkout needs to be worth starting
	hop    = 50 * time.Millisecond  // the allowance for one network hop
	budget = 2 * time.Second        // the gateway's budget for a checkout
	slack  = 100 * time.Millisecond // what the tests forgive on top of a deadline
	hang   = time.Minute            // a hanging payment answers 503 after this, so every version ends
)

var pizza = fooddelivery.PlaceOrderInput{
	RestaurantID: system.SampleRestaurant,
	Items:        []fooddelivery.OrderItem{{DishID: system.SampleDish, Quantity: 2}},
	Card:         "tok_visa",
}

// arrival is one request as it reached a service: when, and the budget
// header it carried.
type arrival struct {
	instance string
	at       time.Time
	value    string
	sent     bool // the header was present
}

// wire records the budget header of every request that reaches a service.
type wire struct {
	mu   sync.Mutex
	seen []arrival
}

func (w *wire) observe(instance, route string, r *http.Request) {
	v, sent := r.Header[http.CanonicalHeaderKey(fooddelivery.HeaderTimeoutMs)]
	a := arrival{instance: instance, at: time.Now(), sent: sent}
	if sent {
		a.value = strings.Join(v, ",")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, a)
}

// first returns the first request that reached service ("menu" matches
// the replicas "menu-1", ...), and false if none did.
func (w *wire) first(service string) (arrival, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range w.seen {
		if a.instance == service || strings.HasPrefix(a.instance, service+"-") {
			return a, true
		}
	}
	return arrival{}, false
}

// start runs the whole system with your Middleware around the order
// service and your Transport under its menu, payment and courier clients.
// w, when not nil, records what reaches every service.
func start(t *testing.T, w *wire) *system.System {
	return startSeeded(t, w, 0)
}

// startSeeded is start with a seed for the fault draws.
func startSeeded(t *testing.T, w *wire, seed int64) *system.System {
	return startWith(t, w, seed, own, need, hop)
}

// startWith is start with a seed and other settings for your Middleware
// (own, need) and Transport (hop).
func startWith(t *testing.T, w *wire, seed int64, own, need, hop time.Duration) *system.System {
	cfg := system.Config{
		Seed: seed,
		OrderDeadlines: &system.OrderDeadlines{
			Middleware: deadlines.Middleware(own, need),
			Transport:  func(rt http.RoundTripper) http.RoundTripper { return deadlines.Transport(rt, hop) },
		},
	}
	if w != nil {
		cfg.Observe = w.observe
	}
	return labtest.StartSystem(t, cfg)
}

// gateway returns the order service's caller, as the gateway calls it: a
// client whose transport is yours. The system records when this caller
// gives up (System.Callers), whatever the order service does.
func gateway(t *testing.T, sys *system.System) *order.Client {
	return gatewayWith(t, sys, nil, func(rt http.RoundTripper) http.RoundTripper { return deadlines.Transport(rt, hop) })
}

// gatewayWith is gateway with another transport wrapped around the
// in-memory network's (none when wrap is nil). sent, when not nil,
// records every request the gateway puts on the wire, as "order": unlike
// Config.Observe, which sees requests inside your Middleware, it also sees
// those the Middleware refuses.
func gatewayWith(t *testing.T, sys *system.System, sent *wire, wrap func(http.RoundTripper) http.RoundTripper) *order.Client {
	base := (&memnet.Dialer{Network: sys.Network}).Transport()
	t.Cleanup(base.CloseIdleConnections)
	var rt http.RoundTripper = baseFunc(func(r *http.Request) (*http.Response, error) {
		if sent != nil {
			sent.observe("order", "", r)
		}
		return base.RoundTrip(r)
	})
	if wrap != nil {
		rt = wrap(rt)
	}
	return order.NewClient(&http.Client{Transport: sys.Callers.Track(rt)}, memnet.ServiceURL("order"))
}

// baseFunc lets a function stand in for the transport under yours.
type baseFunc func(*http.Request) (*http.Response, error)

func (f baseFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// closeRecorder is a request body that remembers whether it was closed.
type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// lostDeadline explains a checkout that outlived even the order service's
// own budget, or says nothing when it did not.
func lostDeadline(took time.Duration) string {
	if took <= own+slack {
		return ""
	}
	return fmt.Sprintf("\nThat is longer than the service's own %v: not even that deadline stopped the payment call, so the deadline "+
		"is lost between your Middleware and the wire. Check that your Transport hands base a request with the original "+
		"request's context (req.Clone(req.Context())): a request built with http.NewRequest, or cloned with "+
		"context.Background(), is never cancelled.", own)
}

// placeWithHeader places an order from a plain client without a deadline
// of its own, sending value in the budget header (no header when value is
// empty), as a caller written in another language, or a buggy one, might.
func placeWithHeader(ctx context.Context, sys *system.System, value string) (fooddelivery.Order, error) {
	h := http.Header{fooddelivery.HeaderUser: {"alice"}}
	if value != "" {
		h.Set(fooddelivery.HeaderTimeoutMs, value)
	}
	var o fooddelivery.Order
	_, err := fooddelivery.CallJSON(ctx, sys.HTTPClient(), "order", http.MethodPost, memnet.ServiceURL("order")+"/orders", h, pizza, &o)
	return o, err
}

// menuCalls counts the menu requests of every replica.
func menuCalls(sys *system.System) int64 {
	var n int64
	for i := 1; i <= 3; i++ {
		n += sys.Metrics.Route(fmt.Sprintf("menu-%d", i), "GET /restaurants/{id}/menu").Received.Load()
	}
	return n
}

// header says what budget header a carried, for a message.
func header(a arrival) string {
	if !a.sent {
		return "no " + fooddelivery.HeaderTimeoutMs + " header"
	}
	return fmt.Sprintf("%s: %q", fooddelivery.HeaderTimeoutMs, a.value)
}

// last returns the last request that reached service, as first does.
func (w *wire) last(service string) arrival {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.seen) - 1; i >= 0; i-- {
		if a := w.seen[i]; a.instance == service || strings.HasPrefix(a.instance, service+"-") {
			return a
		}
	}
	return arrival{}
}

// checkBudget fails the test unless the request a carried a budget header
// whose deadline (arrival + value) is no later than ceiling, and no more
// than 10ms earlier than it either (a budget thrown away is lost to the
// callee). who names the hop for the message.
func checkBudget(t *testing.T, who string, a arrival, began, ceiling time.Time, why string) {
	t.Helper()
	if !a.sent {
		t.Fatalf("step 1: %s received no %s header, so it cannot know that it must be done %v after the checkout began. "+
			"Your Transport must write what is left of the request context's deadline, minus the %v hop allowance, "+
			"and your Middleware must put the budget it grants on the request's context.",
			who, fooddelivery.HeaderTimeoutMs, ceiling.Sub(began), hop)
	}
	ms, err := strconv.ParseInt(a.value, 10, 64)
	if err != nil || ms < 0 {
		t.Fatalf("step 1: %s received %s: %q, which is not a whole number of milliseconds", who, fooddelivery.HeaderTimeoutMs, a.value)
	}
	arrived := a.at.Sub(began)
	implied := arrived + time.Duration(ms)*time.Millisecond
	if implied > ceiling.Sub(began) {
		hint := "The header carries what is LEFT: compute it from the request's context when you send, never copy a value received."
		if ms > 1e9 {
			hint = "That looks like an absolute timestamp: the header carries a RELATIVE number of milliseconds, " +
				"so that hosts whose clocks disagree still agree on the budget."
		}
		t.Fatalf("step 1: %s received %s: %d at %v into the checkout, a deadline at %v; %s, so it must be at most %v. %s",
			who, fooddelivery.HeaderTimeoutMs, ms, arrived, implied, why, ceiling.Sub(began), hint)
	}
	if implied < ceiling.Sub(began)-10*time.Millisecond {
		t.Fatalf("step 1: %s received %s: %d at %v into the checkout, a deadline at %v; it could have had until %v. "+
			"Subtract the hop allowance (%v) from what is left, and nothing more.",
			who, fooddelivery.HeaderTimeoutMs, ms, arrived, implied, ceiling.Sub(began), hop)
	}
}

func TestStep1BudgetTravelsDownstream(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		w := &wire{}
		sys := start(t, w)
		require.NoError(t, sys.Faults.Set("menu", "GET /restaurants/{id}/menu", faults.Fault{Latency: 300 * time.Millisecond}))
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Latency: 200 * time.Millisecond}))

		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		began := time.Now()
		_, err := gateway(t, sys).PlaceOrder(ctx, "alice", pizza)
		require.NoError(t, err, "step 1: menu took 300ms and payment 200ms, well within the gateway's %v budget, yet the checkout failed", budget)

		gatewayDeadline := began.Add(budget)
		atOrder, _ := w.first("order")
		checkBudget(t, "the order service", atOrder, began, gatewayDeadline.Add(-hop),
			fmt.Sprintf("the gateway gives up at %v and one hop allowance (%v) goes to the network", budget, hop))
		atMenu, ok := w.first("menu")
		require.True(t, ok, "step 1: the checkout succeeded without asking the menu service for prices")
		checkBudget(t, "the menu service", atMenu, began, gatewayDeadline.Add(-2*hop),
			"the order service's own deadline is the gateway's less a hop, and it is one more hop away")
		atPayment, ok := w.first("payment")
		require.True(t, ok, "step 1: the checkout succeeded without a payment call")
		checkBudget(t, "the payment service", atPayment, began, gatewayDeadline.Add(-2*hop),
			"the 300ms spent on the menu are gone: the budget only shrinks along a request")
	})
}

func TestStep1OrderServiceHonoursTheCallersBudget(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "PlaceOrder was still waiting for the hanging payment service"}, func(t *testing.T) {
		const callers = 1500 * time.Millisecond
		sys := start(t, nil)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Hang: hang}))

		began := time.Now()
		_, err := placeWithHeader(context.Background(), sys, strconv.Itoa(int(callers.Milliseconds())))
		took := time.Since(began)
		if took > callers+slack || took < callers-slack || !errors.Is(err, fooddelivery.ErrTimeout) {
			hint := lostDeadline(took)
			if hint == "" {
				hint = " Read the header in your Middleware and put that deadline on the request's context."
			}
			t.Fatalf("step 1: the caller sent %s: %d and payment hung; the order service answered after %v with %v.\n"+
				"It must work for the caller's %v and no longer (its own %v is only for callers that send no budget), "+
				"then answer 504 (a timeout).%s",
				fooddelivery.HeaderTimeoutMs, callers.Milliseconds(), took, err, callers, own, hint)
		}
	})
}

func TestStep1NoHeaderMeansTheServicesOwnBudget(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "PlaceOrder was still waiting for the hanging payment service"}, func(t *testing.T) {
		w := &wire{}
		sys := start(t, w)
		// A gateway whose context has no deadline has no budget to send.
		sent := &wire{}
		wrap := func(rt http.RoundTripper) http.RoundTripper { return deadlines.Transport(rt, hop) }
		placed, err := gatewayWith(t, sys, sent, wrap).PlaceOrder(context.Background(), "alice", pizza)
		atOrder, _ := sent.first("order")
		if err != nil || atOrder.sent {
			got := header(atOrder)
			t.Fatalf("step 1: the gateway's context has no deadline; your Transport sent %s and the healthy checkout "+
				"ended with %s.\nWith no deadline there is nothing to send: your Transport passes the request on unchanged "+
				"(check the ok of req.Context().Deadline()), and the order service then works within its own %v.",
				got, outcome(err), own)
		}
		assert.Equal(t, 1, sys.Ledger.ChargesFor(placed.ID), "step 1: the order is charged exactly once")
		atPayment, _ := w.first("payment")
		checkBudget(t, "the payment service", atPayment, atPayment.at, atPayment.at.Add(own-hop),
			fmt.Sprintf("without a header from its caller the order service works within its own %v", own))

		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Hang: hang}))
		began := time.Now()
		_, err = placeWithHeader(context.Background(), sys, "")
		took := time.Since(began)
		if took > own+slack || took < own-slack || !errors.Is(err, fooddelivery.ErrTimeout) {
			t.Fatalf("step 1: the caller sent no budget and payment hung; the order service answered after %v with %v. "+
				"Without a header it must work for its own %v, then answer 504 (a timeout).%s", took, err, own, lostDeadline(took))
		}
	})
}

func TestStep1OtherSettingsAreHonoured(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		// Another service's settings: a 3s budget of its own, 80ms per hop.
		const own, need, hop = 3 * time.Second, 400 * time.Millisecond, 80 * time.Millisecond
		w, sent := &wire{}, &wire{}
		sys := startWith(t, w, 0, own, need, hop)
		wrap := func(rt http.RoundTripper) http.RoundTripper { return deadlines.Transport(rt, hop) }

		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		_, err := gatewayWith(t, sys, sent, wrap).PlaceOrder(ctx, "alice", pizza)
		atOrder, _ := sent.first("order")
		want := strconv.FormatInt((budget - hop).Milliseconds(), 10)
		if err != nil || atOrder.value != want {
			t.Fatalf("step 1: with Transport(base, %v) and a %v budget, the gateway sent %s and the healthy "+
				"checkout ended with %s. It must send %s: %s: %v less the hop allowance you were given, not the lab's 50ms.",
				hop, budget, header(atOrder), outcome(err), fooddelivery.HeaderTimeoutMs, want, budget)
		}

		_, err = placeWithHeader(context.Background(), sys, "")
		atPayment := w.last("payment")
		want = strconv.FormatInt((own - hop).Milliseconds(), 10)
		if err != nil || atPayment.value != want {
			t.Fatalf("step 1: with Middleware(%v, %v) and Transport(base, %v), a caller that sent no budget got %s, and "+
				"payment received %s. It must receive %s: %s: the service's own %v less one hop. Use the own and hop "+
				"arguments, not the lab's 10s and 50ms.",
				own, need, hop, outcome(err), header(atPayment), fooddelivery.HeaderTimeoutMs, want, own)
		}
	})
}

func TestStep1TransportWritesOnACopy(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		const left = time.Second + 500*time.Microsecond
		var sent *http.Request
		rt := deadlines.Transport(baseFunc(func(r *http.Request) (*http.Response, error) {
			sent = r
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
		}), hop)
		ctx, cancel := context.WithTimeout(context.Background(), left)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, memnet.ServiceURL("menu")+"/restaurants/r1/menu", nil)
		require.NoError(t, err, "step 1: building the test's request")

		resp, err := rt.RoundTrip(req)
		if err != nil || sent == nil {
			t.Fatalf("step 1: called directly with %v left, your Transport returned %v without handing the request "+
				"to base (sent: %t). With more than the %v hop allowance left, the request goes out.", left, err, sent != nil, hop)
		}
		resp.Body.Close()
		const want = "950"
		if got, ok := sent.Header[http.CanonicalHeaderKey(fooddelivery.HeaderTimeoutMs)]; !ok {
			t.Fatalf("step 1: called directly with %v left and a %v hop allowance, your Transport wrote no %s header; "+
				"it must write %q (see the first test of this step).", left, hop, fooddelivery.HeaderTimeoutMs, want)
		} else if strings.Join(got, ",") != want {
			t.Fatalf("step 1: called directly with %v left and a %v hop allowance, your Transport wrote %s: %q; it must "+
				"write %q: whole milliseconds, rounded down (rounding up promises the callee time the caller does not have).",
				left, hop, fooddelivery.HeaderTimeoutMs, strings.Join(got, ","), want)
		}
		if v, ok := req.Header[http.CanonicalHeaderKey(fooddelivery.HeaderTimeoutMs)]; ok || sent == req {
			t.Fatalf("step 1: after RoundTrip, the caller's own request carries %s: %q. A RoundTripper must not modify "+
				"the request it is given (its caller may reuse it, or still read it): set the header on "+
				"req.Clone(req.Context()) and send that.", fooddelivery.HeaderTimeoutMs, strings.Join(v, ","))
		}
		cancel() // the caller gives up
		if sent.Context().Err() == nil {
			t.Fatalf("step 1: the caller cancelled its context, but the request your Transport handed to base was not " +
				"cancelled: it does not carry the caller's context, so a caller who gives up cannot stop the call. " +
				"Copy the request with req.Clone(req.Context()), not http.NewRequest or a clone with context.Background().")
		}
	})
}

func TestStep2TooShortBudgetFailsFast(t *testing.T) {
	cases := []struct {
		name    string
		callers time.Duration
		need    time.Duration // the need the order service is built with
		note    string
	}{
		{"100ms of 250ms", 100 * time.Millisecond, need, ""},
		{"nothing left", 0, need, ` "0" is a budget of nothing, not a missing header: it is below need like any other.`},
		{"300ms of 400ms", 300 * time.Millisecond, 400 * time.Millisecond,
			" This order service was built with Middleware(own, 400ms): compare with the need argument, not the lab's 250ms."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
				sys := startWith(t, nil, 0, own, c.need, hop)
				require.NoError(t, sys.Faults.Set("menu", "GET /restaurants/{id}/menu", faults.Fault{Latency: 300 * time.Millisecond}))

				began := time.Now()
				_, err := placeWithHeader(context.Background(), sys, strconv.Itoa(int(c.callers.Milliseconds())))
				took := time.Since(began)
				menus, charges := menuCalls(sys), sys.Ledger.Total()
				if err == nil || menus > 0 || charges > 0 || took > 0 {
					t.Fatalf("step 2: the caller sent %s: %d, leaving %v for a checkout that needs at least %v; the order service "+
						"answered after %v with %s, having sent %d request(s) to the menu service and executed %d charge(s).\n"+
						"Work that cannot finish in time is load nobody benefits from: check the budget before calling next, "+
						"and answer 504 at once, without a single downstream call.%s",
						fooddelivery.HeaderTimeoutMs, c.callers.Milliseconds(), c.callers, c.need, took, outcome(err), menus, charges, c.note)
				}
				var ce *fooddelivery.CallError
				if !errors.As(err, &ce) || ce.Status != http.StatusGatewayTimeout || ce.Code != budgetTooShort || !ce.DontRetry {
					t.Fatalf("step 2: the caller left %v for a checkout that needs at least %v; the order service answered at once, "+
						"but with %s.\nA budget too short for the work is answered 504 Gateway Timeout with error code %q and %s: 1 "+
						"(a retry would arrive with even less time left).", c.callers, c.need, describe(err), budgetTooShort, fooddelivery.HeaderDontRetry)
				}
			})
		})
	}
}

// budgetTooShort is the error code of the answer to a budget below need.
const budgetTooShort = "budget_too_short"

// outcome says in a few words what a checkout's caller got.
func outcome(err error) string {
	if err == nil {
		return "a placed order"
	}
	return describe(err)
}

// describe says what an error answer carried: status, error code and
// X-Dont-Retry, or the error itself when no answer arrived.
func describe(err error) string {
	var ce *fooddelivery.CallError
	if !errors.As(err, &ce) || ce.Status == 0 {
		return fmt.Sprintf("no answer (%v)", err)
	}
	dontRetry := "no " + fooddelivery.HeaderDontRetry
	if ce.DontRetry {
		dontRetry = fooddelivery.HeaderDontRetry + ": 1"
	}
	return fmt.Sprintf("%d, error code %q, %s", ce.Status, ce.Code, dontRetry)
}

func TestStep2EnoughBudgetStillWorks(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		const callers = 600 * time.Millisecond
		sys := start(t, nil)
		require.NoError(t, sys.Faults.Set("menu", "GET /restaurants/{id}/menu", faults.Fault{Latency: 100 * time.Millisecond}))
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Latency: 100 * time.Millisecond}))

		placed, err := placeWithHeader(context.Background(), sys, strconv.Itoa(int(callers.Milliseconds())))
		if err != nil {
			t.Fatalf("step 2: the caller left %v, more than the %v a checkout needs, and menu and payment took 100ms each; "+
				"the checkout failed: %v. Only a budget below need fails fast.", callers, need, err)
		}
		assert.Equal(t, 1, sys.Ledger.ChargesFor(placed.ID), "step 2: the order is charged exactly once")
	})
}

func TestStep2NothingLeftIsNotSent(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		const left = 30 * time.Millisecond
		sys := start(t, nil)

		ctx, cancel := context.WithTimeout(context.Background(), left)
		defer cancel()
		sent := &wire{}
		wrap := func(rt http.RoundTripper) http.RoundTripper { return deadlines.Transport(rt, hop) }
		began := time.Now()
		_, err := gatewayWith(t, sys, sent, wrap).PlaceOrder(ctx, "alice", pizza)
		took := time.Since(began)
		atOrder, reached := sent.first("order")
		if err == nil || reached || took > 0 {
			got := "was not sent"
			if reached {
				got = "still went out with " + header(atOrder)
			}
			t.Fatalf("step 2: the gateway had %v left, less than the %v a hop takes; its request %s, and the gateway "+
				"waited %v for %s.\nA request that cannot arrive in time is not sent at all (not even to be refused): "+
				"your Transport fails at once with an error wrapping context.DeadlineExceeded.", left, hop, got, took, outcome(err))
		}
		if !errors.Is(err, fooddelivery.ErrTimeout) {
			t.Fatalf("step 2: the gateway had %v left and its request was rightly not sent, but PlaceOrder returned %v, "+
				"which is not a timeout. Wrap context.DeadlineExceeded in the error your Transport returns (%%w).", left, err)
		}

		// The same, with your Transport called directly and a request body.
		var called bool
		rt := deadlines.Transport(baseFunc(func(r *http.Request) (*http.Response, error) {
			called = true
			return nil, errors.New("the test's base transport was called")
		}), hop)
		ctx, cancel = context.WithTimeout(context.Background(), left)
		defer cancel()
		body := &closeRecorder{Reader: strings.NewReader(`{"card":"tok_visa"}`)}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, memnet.ServiceURL("payment")+"/charges", body)
		require.NoError(t, err, "step 2: building the test's request")
		_, err = rt.RoundTrip(req)
		if called || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("step 2: called directly with %v left, your Transport handed the request to base: %t, and returned %v. "+
				"It must return an error wrapping context.DeadlineExceeded without calling base.", left, called, err)
		}
		if !body.closed {
			t.Fatalf("step 2: called directly with %v left, your Transport rightly did not send a POST, but left its body "+
				"open. A RoundTripper always closes the request body, even when it fails without sending: close req.Body "+
				"when it is not nil.", left)
		}
	})
}

// afterLeaving is what the order service did after its caller left.
type afterLeaving struct {
	wasted       time.Duration // order's time spent on calls after the caller left
	startedAfter int64         // calls the order service started after the caller left
	charges      int           // charges executed
	payments     int64         // requests that reached payment
}

// checkoutAbandoned runs one checkout through caller with ctx, which the
// caller abandons, waits until the order service has finished whatever it
// still does, and reports what happened after the caller left.
func checkoutAbandoned(t *testing.T, sys *system.System, caller *order.Client, ctx context.Context) afterLeaving {
	caller.PlaceOrder(ctx, "alice", pizza)
	time.Sleep(own + time.Second) // whatever the order service still does ends by then
	stats := sys.Metrics.Route("order", "POST /orders")
	return afterLeaving{
		wasted:       stats.WastedWorkDuration(),
		startedAfter: stats.WorkAfterCallerLeft.Load(),
		charges:      sys.Ledger.Total(),
		payments:     sys.Metrics.Route("payment", "POST /charges").Received.Load(),
	}
}

func TestStep3CallerWhoHangsUpStopsTheCheckout(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		const menuTakes, userLeaves = 3 * time.Second, 500 * time.Millisecond
		sys := start(t, nil)
		require.NoError(t, sys.Faults.Set("menu", "GET /restaurants/{id}/menu", faults.Fault{Latency: menuTakes}))

		ctx, cancel := context.WithTimeout(context.Background(), own)
		defer cancel()
		time.AfterFunc(userLeaves, cancel) // the user closes the app
		got := checkoutAbandoned(t, sys, gateway(t, sys), ctx)
		if got.wasted > 10*time.Millisecond || got.startedAfter > 0 || got.charges > 0 {
			t.Fatalf("step 3: the caller hung up %v into the checkout while the menu service took %v; the order service then "+
				"spent %v more on calls nobody waited for, started %d call(s) after the caller left, and executed %d charge(s).\n"+
				"When the caller goes, its work must stop: derive the request's deadline from r.Context() (net/http cancels it "+
				"when the caller hangs up), and send every outgoing request with the context it was given.",
				userLeaves, menuTakes, got.wasted, got.startedAfter, got.charges)
		}
	})
}

func TestStep3CallerWithoutBudgetWhoHangsUp(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		const menuTakes, userLeaves = 3 * time.Second, 500 * time.Millisecond
		sys := start(t, nil)
		require.NoError(t, sys.Faults.Set("menu", "GET /restaurants/{id}/menu", faults.Fault{Latency: menuTakes}))

		// A caller without your Transport and without a deadline: it sends
		// no budget, and hangs up.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(userLeaves, cancel)
		got := checkoutAbandoned(t, sys, gatewayWith(t, sys, nil, nil), ctx)
		if got.wasted > 10*time.Millisecond || got.startedAfter > 0 || got.charges > 0 {
			t.Fatalf("step 3: a caller that sends no budget hung up %v into the checkout while the menu service took %v; "+
				"the order service then spent %v more on calls nobody waited for, started %d call(s) after the caller left, "+
				"and executed %d charge(s).\nWithout a header the order service uses its own %v, but the request is still "+
				"its caller's: derive that deadline from r.Context() too, never from context.WithoutCancel.",
				userLeaves, menuTakes, got.wasted, got.startedAfter, got.charges, own)
		}
	})
}

func TestStep3ExpiredBudgetStopsTheCheckout(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		const menuTakes = 5 * time.Second
		sys := start(t, nil)
		require.NoError(t, sys.Faults.Set("menu", "GET /restaurants/{id}/menu", faults.Fault{Latency: menuTakes}))

		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		got := checkoutAbandoned(t, sys, gateway(t, sys), ctx)
		if got.wasted > 10*time.Millisecond || got.startedAfter > 0 || got.charges > 0 || got.payments > 0 {
			t.Fatalf("step 3: the gateway gave up after its %v budget while the menu service took %v; the order service then "+
				"spent %v more on calls nobody waited for, started %d call(s) after the gateway left, and executed %d charge(s) "+
				"for an order the user was told had failed.\nThe budget the gateway sent must end the order service's work "+
				"before the gateway gives up.", budget, menuTakes, got.wasted, got.startedAfter, got.charges)
		}
	})
}

func TestStep4BadBudgetsAreNeverTrusted(t *testing.T) {
	cases := []struct{ name, value, note string }{
		{"not a number", "soon", ""},
		{"negative", "-1500", ""},
		{"an hour", "3600000", ""},
		{"beyond int64", "99999999999999999999", ""},
		{"int64 max, overflows as a duration", "9223372036854775807", ""},
		{"wraps to a tiny positive duration", "18446744073710",
			" Times time.Millisecond, these 14 digits wrap around to +448µs: checking the sign after the multiplication " +
				"is not enough. Reject more than 8 digits before converting."},
		{"with a plus sign", "+1500",
			" strconv.ParseInt accepts the sign; the wire format does not (digits only). Check every byte is a digit " +
				"before parsing."},
		{"twelve digits with leading zeros", "000000001500",
			" That is 12 digits, more than the 8 the wire allows, even though the number is small: count the " +
				"characters, not the value."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 4, Stuck: "PlaceOrder was still waiting for the hanging payment service"}, func(t *testing.T) {
				w := &wire{}
				sys := start(t, w)
				placed, err := placeWithHeader(context.Background(), sys, c.value)
				if err != nil {
					t.Fatalf("step 4: the caller sent %s: %q and the healthy checkout failed: %v.\n"+
						"A value you cannot trust is ignored (or clamped): the service falls back to its own %v budget "+
						"and works as usual. It must never crash or turn into an expired deadline.%s",
						fooddelivery.HeaderTimeoutMs, c.value, err, own, c.note)
				}
				assert.Equal(t, 1, sys.Ledger.ChargesFor(placed.ID), "step 4: the order is charged exactly once")
				atPayment, ok := w.first("payment")
				require.True(t, ok, "step 4: the checkout succeeded without a payment call")
				if !atPayment.sent {
					t.Fatalf("step 4: the caller sent %s: %q; payment received no budget at all. The order service falls back "+
						"to its own %v and passes what is left of it on (finish step 1 first).", fooddelivery.HeaderTimeoutMs, c.value, own)
				}
				ms, err := strconv.ParseInt(atPayment.value, 10, 64)
				passed := time.Duration(ms) * time.Millisecond
				if err != nil || passed > own-hop || passed < own-hop-slack {
					t.Fatalf("step 4: the caller sent %s: %q; the order service passed %q on to payment. "+
						"It must fall back to its own %v budget (clamp or ignore the value, never let it extend anything), "+
						"and pass on %v less the hop allowance.%s", fooddelivery.HeaderTimeoutMs, c.value, atPayment.value, own, own, c.note)
				}

				require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Hang: hang}))
				began := time.Now()
				_, err = placeWithHeader(context.Background(), sys, c.value)
				took := time.Since(began)
				if took > own+slack || !errors.Is(err, fooddelivery.ErrTimeout) {
					t.Fatalf("step 4: the caller sent %s: %q and payment hung; the order service answered after %v with %v. "+
						"No header value may stretch the order service past its own %v: answer 504 by then.",
						fooddelivery.HeaderTimeoutMs, c.value, took, err, own)
				}
			})
		})
	}
}

func TestStep4LongBudgetIsCappedOnTheWire(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		const long, most = 30 * time.Hour, "99999999" // 8 digits of milliseconds: almost 28 hours
		w := &wire{}
		sys := start(t, w)
		ctx, cancel := context.WithTimeout(context.Background(), long)
		defer cancel()
		_, err := gateway(t, sys).PlaceOrder(ctx, "alice", pizza)
		if err != nil {
			t.Fatalf("step 4: the gateway gave a healthy checkout %v and it failed: %v", long, err)
		}
		atOrder, _ := w.first("order")
		if !atOrder.sent {
			t.Fatalf("step 4: the gateway's context had %v left; the order service received no %s header (finish step 1 first).",
				long, fooddelivery.HeaderTimeoutMs)
		}
		if atOrder.value != most {
			t.Fatalf("step 4: the gateway's context had %v (%d ms) left, less the %v hop; the order service received %s: %q.\n"+
				"The wire carries at most 8 digits, as gRPC's grpc-timeout does: a strict server (yours included) ignores a "+
				"longer value as malformed and works as if the caller had sent no budget at all. Your Transport must cap what it writes at %s.",
				long, long.Milliseconds(), hop, fooddelivery.HeaderTimeoutMs, atOrder.value, most)
		}
	})
}
