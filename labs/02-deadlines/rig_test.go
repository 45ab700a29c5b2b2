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

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/order"
	"github.com/gophereats/resilience/fooddelivery/system"
	deadlines "github.com/gophereats/resilience/labs/02-deadlines"
)

// The rig (the system with a wire recording each request's budget header,
// start, gateway) and the helpers of every step.
// The step tests are in stepN_test.go, one file per README step; the
// experiment, the last step, is in step5_experiment_test.go (go test runs
// the files in name order, so it runs after the other steps).

const (
	own    = 10 * time.Second       // the order service's own budget for one request
	need   = 250 * time.Millisecond // the least a checkout needs to be worth starting
	hop    = 50 * time.Millisecond  // the allowance for one network hop
	budget = 2 * time.Second        // the gateway's budget for a checkout
	slack  = 100 * time.Millisecond // what the tests forgive on top of a deadline
	hang   = time.Minute            // a hanging payment answers 503 after this, so every version ends
)

var pizza = labtest.PizzaOrder()

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
		payments:     labtest.Charges(sys),
	}
}
