package system

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
)

// OrderDeadlines is lab 02's integration point: how the order service
// learns its budget from its caller and passes what is left of it on.
// Setting Config.OrderDeadlines (even to an empty value) also makes the
// system keep the ground truth of when the order service's callers gave up
// (System.Callers), which POST /orders uses to count work after its caller
// left.
type OrderDeadlines struct {
	// Middleware wraps the order service's whole handler, before routing
	// (as chi's Router.Use would): the server half of deadline
	// propagation. nil means no wrapping.
	Middleware func(http.Handler) http.Handler
	// Transport wraps the transport of each of the order service's clients
	// (menu, payment and courier): the client half. nil means no wrapping.
	Transport func(http.RoundTripper) http.RoundTripper
	// Gateway wraps the transport of the gateway's client of the order
	// service: the client half on the order service's caller, so that
	// the gateway's remaining budget (a deadline on its context, such as
	// a fallback's checkout budget) reaches the order service. nil means
	// no wrapping: the gateway sends no budget.
	Gateway func(http.RoundTripper) http.RoundTripper
	// Edge wraps the gateway's whole handler: the server half at the
	// system's edge, so that the budget a customer's client sends in
	// fooddelivery.HeaderTimeoutMs (a mobile app that waits 1 s) becomes
	// the deadline of everything the gateway does for it. nil means no
	// wrapping: the gateway learns that a customer left only when the
	// customer's connection closes.
	Edge func(http.Handler) http.Handler
}

// NaiveOrderDeadlines is the order service of lab 02's story: whatever its
// caller's budget, each request gets the service's own fixed budget own
// (10s in the story), on a context detached from the caller
// (context.WithoutCancel), so a checkout runs to its end even after the
// caller gave up, and nothing about the budget is passed downstream. own
// must be positive.
func NaiveOrderDeadlines(own time.Duration) *OrderDeadlines {
	if own <= 0 {
		panic(fmt.Sprintf("system: NaiveOrderDeadlines needs a positive budget, got %v", own))
	}
	return &OrderDeadlines{Middleware: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), own)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}}
}

// handler wraps h with d.Middleware, if any.
func (d *OrderDeadlines) handler(h http.Handler) http.Handler {
	if d == nil || d.Middleware == nil {
		return h
	}
	return d.Middleware(h)
}

// edge wraps the gateway's handler h with d.Edge, if any.
func (d *OrderDeadlines) edge(h http.Handler) http.Handler {
	if d == nil || d.Edge == nil {
		return h
	}
	return d.Edge(h)
}

// client wraps c's transport with d.Transport, if any, and returns c.
func (d *OrderDeadlines) client(c *http.Client) *http.Client {
	if d != nil && d.Transport != nil {
		c.Transport = d.Transport(c.Transport)
	}
	return c
}

// observed returns faults preceded by a call to observe for each request,
// or faults itself when observe is nil.
func observed(observe func(instance, route string, r *http.Request), faults fooddelivery.Middleware) fooddelivery.Middleware {
	if observe == nil {
		return faults
	}
	return func(instance, route string, next http.Handler) http.Handler {
		next = faults(instance, route, next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			observe(instance, route, r)
			next.ServeHTTP(w, r)
		})
	}
}

// callersFor returns a new record of callers when cfg asks for lab 02's
// ground truth (OrderDeadlines) or for the record itself (TrackCallers),
// nil otherwise.
func callersFor(cfg Config) *fooddelivery.Callers {
	if cfg.OrderDeadlines == nil && !cfg.TrackCallers {
		return nil
	}
	return fooddelivery.NewCallers()
}
