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
// It is complete: use it as the model for OrderClient.
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

// OrderClient calls the order service through breakers.
type OrderClient struct {
	next *order.Client
	// TODO(step 5): one breaker per endpoint, so that a failing endpoint
	// (the daily report) cannot cut callers off from the others.
	shared *CircuitBreaker
}

var _ fooddelivery.OrderService = (*OrderClient)(nil)

// NewOrderClient returns an OrderClient that calls next with breakers
// configured by s.
func NewOrderClient(next *order.Client, s Settings) *OrderClient {
	// TODO(step 5): give each endpoint its own breaker, named s.Name, a
	// space and the route: "order POST /orders", "order GET /orders/{id}",
	// "order GET /reports/daily" for s.Name "order".
	return &OrderClient{next: next, shared: New(s)}
}

// PlaceOrder places in for user (POST /orders).
func (c *OrderClient) PlaceOrder(ctx context.Context, user string, in fooddelivery.PlaceOrderInput) (fooddelivery.Order, error) {
	var o fooddelivery.Order
	err := c.shared.Do(ctx, func(ctx context.Context) error {
		var err error
		o, err = c.next.PlaceOrder(ctx, user, in)
		return err
	})
	return o, err
}

// Order reads the order id (GET /orders/{id}).
func (c *OrderClient) Order(ctx context.Context, id string) (fooddelivery.Order, error) {
	var o fooddelivery.Order
	err := c.shared.Do(ctx, func(ctx context.Context) error {
		var err error
		o, err = c.next.Order(ctx, id)
		return err
	})
	return o, err
}

// DailyReport reads the daily report (GET /reports/daily).
func (c *OrderClient) DailyReport(ctx context.Context, day time.Time) (order.DailyReport, error) {
	var rep order.DailyReport
	err := c.shared.Do(ctx, func(ctx context.Context) error {
		var err error
		rep, err = c.next.DailyReport(ctx, day)
		return err
	})
	return rep, err
}
