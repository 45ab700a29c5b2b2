package idempotency

import (
	"context"

	"github.com/gophereats/resilience/fooddelivery/dispatch"
)

// AssignCourier is the courier-assignment consumer's handler: it sends one
// courier to the restaurant of the order that m announces. Returning nil
// deletes the message; an error leaves it in the queue for another try.
func AssignCourier(ctx context.Context, fleet *dispatch.Fleet, m dispatch.Message) error {
	// TODO(step 5): messages arrive at least once. A repeat of an order
	// must not send a second courier.
	return fleet.Send(ctx, fleet.Freest(), m)
}
