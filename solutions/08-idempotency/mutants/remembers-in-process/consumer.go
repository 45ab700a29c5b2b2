// Mutant: the consumer remembers each order's courier in a package-level map, never on the courier board, so a real crash or a second process forgets it. Caught by step 5.

package idempotency

import (
	"context"
	"fmt"
	"sync"

	"github.com/gophereats/resilience/fooddelivery/dispatch"
)

// chosen maps a fleet and an order id to the courier picked for it, in
// this process's memory only.
var chosen sync.Map

// AssignCourier sends one courier per order: the first delivery picks the
// least busy courier and remembers it; every repeat sends the same one.
func AssignCourier(ctx context.Context, fleet *dispatch.Fleet, m dispatch.Message) error {
	c, _ := chosen.LoadOrStore(fmt.Sprintf("%p/%s", fleet, m.OrderID), fleet.Freest())
	return fleet.Send(ctx, c.(string), m)
}
