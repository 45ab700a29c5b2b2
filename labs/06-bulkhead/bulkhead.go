// Package bulkhead is lab 06 of the workshop: the gateway shares one pool
// of slots between all its dependencies, so when payment hangs, checkouts
// take every slot and nobody can even browse a menu. Read README.md, then
// make `go test ./labs/06-bulkhead/` pass by editing this file and
// sizing.go only.
package bulkhead

import (
	"context"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
)

// Bulkhead limits how many calls to one dependency run at once.
type Bulkhead struct {
	name    string
	maxWait time.Duration
	// slots holds one token per call in flight: sending takes a slot,
	// receiving gives one back. Its capacity is the limit.
	slots chan struct{}
}

// New returns a bulkhead named name (for errors) that lets at most
// maxConcurrent calls run at once. maxWait is the longest a call may wait
// for a free slot; zero means not at all.
func New(name string, maxConcurrent int, maxWait time.Duration) *Bulkhead {
	return &Bulkhead{name: name, maxWait: maxWait, slots: make(chan struct{}, maxConcurrent)}
}

// Do runs call holding one slot, passing it ctx, and returns call's error.
// When every slot is taken it must refuse the call (without running it)
// with an error wrapping fooddelivery.ErrBulkheadFull, at once or after at
// most maxWait.
func (b *Bulkhead) Do(ctx context.Context, call func(ctx context.Context) error) error {
	// TODO(step 1): this waits for a slot for as long as the caller does.
	// When all slots are taken, refuse at once, or after at most
	// b.maxWait, with an error wrapping fooddelivery.ErrBulkheadFull.
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	// TODO(step 3): give the slot back exactly once on every way out of
	// call, a panic included.
	err := call(ctx)
	<-b.slots
	return err
}

// Compartments returns the gateway's guard for each of its dependencies
// (system.Config.GatewayGuards is called with system.GatewayOrders,
// system.GatewayMenu and system.GatewayCourier). limits gives each
// dependency's number of slots; maxWait is how long a call may wait for
// one.
func Compartments(limits map[string]int, maxWait time.Duration) func(dependency string) fooddelivery.Guard {
	// TODO(step 1): one pool for everything lets a hanging dependency take
	// every slot. Give each dependency its own bulkhead.
	total := 0
	for _, n := range limits {
		total += n
	}
	shared := New("gateway", total, maxWait)
	return func(string) fooddelivery.Guard { return shared.Do }
}
