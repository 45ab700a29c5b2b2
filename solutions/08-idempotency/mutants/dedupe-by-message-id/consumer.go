// Mutant: duplicates are detected by message id, which a redrive from the dead-letter queue changes. Caught by step 5.

package idempotency

import (
	"context"
	"sync"

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
	handled.Lock()
	done := handled.ids[m.ID]
	handled.Unlock()
	if done {
		return nil
	}
	if err := fleet.Send(ctx, fleet.Freest(), m); err != nil {
		return err
	}
	handled.Lock()
	handled.ids[m.ID] = true
	handled.Unlock()
	return nil
}

// handled is the consumer's table of processed message ids.
var handled = struct {
	sync.Mutex
	ids map[string]bool
}{ids: map[string]bool{}}
