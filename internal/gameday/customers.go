package gameday

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/menu"
	"github.com/gophereats/resilience/fooddelivery/system"
)

// The customers' actions, grouped into the core flows the SLOs judge.
const (
	ActionRestaurants = "restaurants" // browse: every restaurant
	ActionMenu        = "menu"        // browse: one menu with its delivery estimate
	ActionHome        = "home"        // browse: the home page (menus, estimates, recommendations)
	ActionCheckout    = "checkout"    // order and pay
	ActionTrack       = "track"       // track: look up an order placed before the stage
)

// Flows are the core flows the SLOs judge, each a set of actions.
const (
	FlowBrowse   = "browse"
	FlowCheckout = "checkout" // order and pay: placed and charged
	FlowTrack    = "track"
)

func flowOf(action string) string {
	switch action {
	case ActionCheckout:
		return FlowCheckout
	case ActionTrack:
		return FlowTrack
	}
	return FlowBrowse
}

// Mix is the share of customers taking each action, in percent.
type Mix map[string]int

// normalMix is a dinner hour: mostly browsing, a fifth checking out.
var normalMix = Mix{ActionRestaurants: 20, ActionMenu: 45, ActionHome: 5, ActionCheckout: 20, ActionTrack: 10}

// Outcome is how one customer's request ended.
type Outcome int

const (
	OK       Outcome = iota // answered in full
	Degraded                // answered, some of it from a fallback (STALE, ESTIMATED, DEGRADED)
	Failed                  // not answered: an error, a refusal, a failed payment, or the customer's patience ran out
)

// Request is one customer's request and how it went.
type Request struct {
	Action  string
	Start   time.Duration // since the stage began
	Took    time.Duration
	Outcome Outcome
	Code    string // the first error's extensions.code, "" for OK
	Mobile  bool   // sent from a mobile app, with MobilePatience
}

type budgetKey struct{}

// withBudget returns ctx carrying the budget the customer's client sends.
func withBudget(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, budgetKey{}, d)
}

// sendBudget wraps base so that each request carries the budget of its
// context (withBudget) in fooddelivery.HeaderTimeoutMs.
func sendBudget(base http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		d, ok := r.Context().Value(budgetKey{}).(time.Duration)
		if !ok {
			return base.RoundTrip(r)
		}
		r = r.Clone(r.Context())
		r.Header.Set(fooddelivery.HeaderTimeoutMs, strconv.FormatInt(d.Milliseconds(), 10))
		return base.RoundTrip(r)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Patience is how long a customer waits for an answer before giving up:
// their request then fails with code GAVE_UP. Every customer's client
// sends its budget in fooddelivery.HeaderTimeoutMs, as an app that knows
// its own timeout can.
const Patience = 5 * time.Second

// MobilePatience is the budget of a customer on a mobile app
// (Stage.Mobile): the app gives up after 1 s, and, its network gone, it
// leaves without closing the connection, so that only the budget it sent
// tells the system that nobody waits any more.
const MobilePatience = 1 * time.Second

// fallbackCodes are the codes of answers a fallback served.
var fallbackCodes = map[string]bool{gateway.CodeStale: true, gateway.CodeEstimated: true, gateway.CodeDegraded: true}

// customers send requests to sys at rate per second, in mix, from the
// stage's start until stop, each a pure function of (seed, number).
type customers struct {
	sys    *system.System
	client *http.Client // sys's, sending each request's id (numbered)
	seed   int64
	start  time.Time
	orders []string // placed before the stage, for lookups
	mobile float64  // the share of customers on a mobile app (Stage.Mobile)

	mu       sync.Mutex
	requests []Request
}

func (c *customers) run(ctx context.Context, rate int, mix Mix, until time.Duration, wg *sync.WaitGroup) {
	every := time.Second / time.Duration(rate)
	for n := int64(0); ; n++ {
		// Half an interval late: no customer arrives at the instant a
		// phase begins (phases last whole milliseconds), where the new
		// faults and the request would race.
		at := every/2 + time.Duration(n)*every
		if at >= until {
			return
		}
		time.Sleep(time.Until(c.start.Add(at)))
		if ctx.Err() != nil {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.visit(ctx, n, mix)
		}()
	}
}

// visit sends customer n's request and records how it went.
func (c *customers) visit(ctx context.Context, n int64, mix Mix) {
	key := fmt.Sprintf("gameday-customer-%d", n)
	draw := func(k int) float64 { return fooddelivery.Draw(c.seed, key, k) }
	action := choose(mix, draw(0))
	rest := catalog[int(draw(1)*float64(len(catalog)))]
	r := rest.id
	token := []string{"tok-alice", "tok-bob", "tok-carol"}[int(draw(2)*3)]

	var query string
	var vars map[string]any
	switch action {
	case ActionRestaurants:
		query = `query Restaurants { restaurants { id name cuisine } }`
		token = ""
	case ActionMenu:
		query = `query Menu($id: ID!) { restaurant(id: $id) { id menu { id name priceCents } eta } }`
		vars = map[string]any{"id": r}
		token = ""
	case ActionHome:
		query = `query Home { home { restaurants { id menu { id priceCents } eta } recommendations { id } } }`
		token = "" // browsing needs no account: an auth outage must not stop it
	case ActionCheckout:
		query = `mutation Checkout($in: PlaceOrderInput!) { placeOrder(input: $in) { id status } }`
		vars = map[string]any{"in": map[string]any{"restaurantId": r, "card": "tok_visa",
			"items": []any{map[string]any{"dishId": rest.dishes[int(draw(3)*float64(len(rest.dishes)))], "quantity": 1 + int(draw(4)*2)}}}}
	case ActionTrack:
		query = `query Order($id: ID!) { order(id: $id) { id status } }`
		id := c.orders[int(draw(5)*float64(len(c.orders)))]
		vars = map[string]any{"id": id}
		token = "tok-alice"
	}

	// A fixed id per customer: the faults' draws follow from it, so a play
	// is the same whatever ran before it in the process.
	id := "customer-" + strconv.FormatInt(n, 10)
	patience, mobile := Patience, draw(6) < c.mobile
	rctx, cancel := context.WithTimeout(ctx, Patience)
	if mobile {
		// The app gives up after MobilePatience and says nothing: the
		// request goes on until the system answers it, or the stage ends.
		patience = MobilePatience
		rctx, cancel = context.WithCancel(ctx)
		stop := time.AfterFunc(patience, func() { c.sys.Callers.GaveUp(id, time.Now()) })
		defer stop.Stop()
	}
	defer cancel()
	rctx = withBudget(fooddelivery.WithRequestID(rctx, id), patience)
	began := time.Now()
	resp, _, err := gateway.Do(rctx, c.client, c.sys.GatewayURL(), token, query, vars)
	req := Request{Action: action, Start: began.Sub(c.start), Took: time.Since(began), Mobile: mobile}
	switch {
	case ctx.Err() != nil:
		return // the stage is over: counts nowhere
	case mobile && req.Took >= patience:
		req.Took, req.Outcome, req.Code = patience, Failed, "GAVE_UP"
	case err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded):
		req.Outcome, req.Code = Failed, "GAVE_UP"
	case err != nil:
		req.Outcome, req.Code = Failed, "NO_ANSWER"
	default:
		req.Outcome, req.Code = judge(action, resp)
	}
	c.mu.Lock()
	c.requests = append(c.requests, req)
	c.mu.Unlock()
}

// catalog is what the customers pick from: the restaurants of
// menu.DefaultCatalog that have dishes.
var catalog = func() []struct {
	id     string
	dishes []string
} {
	c := menu.DefaultCatalog()
	var out []struct {
		id     string
		dishes []string
	}
	for _, r := range c.Restaurants() {
		m, ok := c.Menu(r.ID)
		if !ok || len(m.Dishes) == 0 {
			continue
		}
		e := struct {
			id     string
			dishes []string
		}{id: r.ID}
		for _, d := range m.Dishes {
			e.dishes = append(e.dishes, d.ID)
		}
		out = append(out, e)
	}
	return out
}()

// judge classifies an answer: OK without errors, Degraded when every
// error is a fallback's, Failed otherwise (and a checkout whose payment
// failed).
func judge(action string, resp *gateway.Response) (Outcome, string) {
	if action == ActionCheckout && len(resp.Errors) == 0 {
		var data struct{ PlaceOrder struct{ Status string } }
		if err := resp.Decode(&data); err != nil || data.PlaceOrder.Status != "PLACED" {
			return Failed, "PAYMENT_FAILED"
		}
	}
	if len(resp.Errors) == 0 {
		return OK, ""
	}
	first := ""
	degraded := true
	for i, e := range resp.Errors {
		code := e.Code()
		if i == 0 {
			first = code
		}
		if !fallbackCodes[code] {
			degraded = false
		}
	}
	if degraded && action != ActionCheckout {
		return Degraded, first
	}
	return Failed, first
}

// choose picks an action of mix for a uniform draw x in [0, 1).
func choose(mix Mix, x float64) string {
	total := 0
	for _, a := range actions {
		total += mix[a]
	}
	v := int(x * float64(total))
	for _, a := range actions {
		if v < mix[a] {
			return a
		}
		v -= mix[a]
	}
	return actions[len(actions)-1]
}

var actions = []string{ActionRestaurants, ActionMenu, ActionHome, ActionCheckout, ActionTrack}
