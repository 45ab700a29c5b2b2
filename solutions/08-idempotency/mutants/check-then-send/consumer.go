// Mutant: the consumer checks whether the order already has a courier and then sends one, which is check-then-act while the send is slow. Caught by step 5.

package idempotency

import (
	"context"

	"github.com/gophereats/resilience/fooddelivery/dispatch"
)

// AssignCourier is the courier-assignment consumer's handler: it sends one
// courier to the restaurant of the order that m announces. Messages arrive
// at least once (a redelivery after a crash, a dead letter redriven with a
// new message id, a second worker while the first is still sending), so
// it picks the courier with the courier board's Assign, which records one
// assignment per order atomically and returns the same courier for every
// repeat. Deduplication is keyed by the order id, the business key, not by
// m.ID, which changes on a redrive. A failed send returns its error, so
// the message is delivered again.
func AssignCourier(ctx context.Context, fleet *dispatch.Fleet, m dispatch.Message) error {
	if len(fleet.Couriers(m.OrderID)) > 0 {
		return nil // already dispatched
	}
	return fleet.Send(ctx, fleet.Freest(), m)
}
