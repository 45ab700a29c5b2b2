// Mutant: placing and looking up orders share one breaker, so failing lookups cut off ordering. Caught by step 5.

package breaker

import (
	"context"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/order"
)

// Payer guards the order service's payment client with a breaker: one
// breaker for one dependency. It implements fooddelivery.Payer, so the
// system can put it where the plain client was (system.Config.PaymentBreaker).
type Payer struct {
	Breaker *CircuitBreaker
	Next    fooddelivery.Payer
}

var _ fooddelivery.Payer = Payer{}

// Charge charges req through p.Next unless the breaker refuses the call.
func (p Payer) Charge(ctx context.Context, req fooddelivery.ChargeRequest) (fooddelivery.Charge, error) {
	var ch fooddelivery.Charge
	err := p.Breaker.Do(ctx, func(ctx context.Context) error {
		var err error
		ch, err = p.Next.Charge(ctx, req)
		return err
	})
	return ch, err
}

// OrderClient calls the order service with one breaker per endpoint, so
// that a failing endpoint (the daily report, say) cannot cut callers off
// from the others (placing and reading orders).
type OrderClient struct {
	next                  *order.Client
	place, lookup, report *CircuitBreaker
}

var _ fooddelivery.OrderService = (*OrderClient)(nil)

// NewOrderClient returns an OrderClient that calls next. Each endpoint
// gets its own breaker configured by s, named s.Name plus the route
// ("order POST /orders", "order GET /orders/{id}", "order GET /reports/daily").
func NewOrderClient(next *order.Client, s Settings) *OrderClient {
	named := func(route string) *CircuitBreaker {
		endpoint := s
		endpoint.Name = s.Name + " " + route
		return New(endpoint)
	}
	orders := named("POST /orders")
	return &OrderClient{
		next:   next,
		place:  orders,
		lookup: orders,
		report: named("GET /reports/daily"),
	}
}

// PlaceOrder places in for user (POST /orders) through its own breaker.
func (c *OrderClient) PlaceOrder(ctx context.Context, user string, in fooddelivery.PlaceOrderInput) (fooddelivery.Order, error) {
	var o fooddelivery.Order
	err := c.place.Do(ctx, func(ctx context.Context) error {
		var err error
		o, err = c.next.PlaceOrder(ctx, user, in)
		return err
	})
	return o, err
}

// Order reads the order id (GET /orders/{id}) through its own breaker.
func (c *OrderClient) Order(ctx context.Context, id string) (fooddelivery.Order, error) {
	var o fooddelivery.Order
	err := c.lookup.Do(ctx, func(ctx context.Context) error {
		var err error
		o, err = c.next.Order(ctx, id)
		return err
	})
	return o, err
}

// DailyReport reads the daily report (GET /reports/daily) through its own
// breaker.
func (c *OrderClient) DailyReport(ctx context.Context, day time.Time) (order.DailyReport, error) {
	var rep order.DailyReport
	err := c.report.Do(ctx, func(ctx context.Context) error {
		var err error
		rep, err = c.next.DailyReport(ctx, day)
		return err
	})
	return rep, err
}
