// Mutant: a failed call gives its slot back early and again in the deferred release, so every error grows the bulkhead by one. Caught by step 3.

package bulkhead

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
)

// Bulkhead limits how many calls to one dependency run at once. A call
// that finds every slot taken waits at most the bulkhead's maximum wait for
// one, and is then refused without being sent, with an error wrapping
// fooddelivery.ErrBulkheadFull.
type Bulkhead struct {
	name    string
	limit   int
	maxWait time.Duration

	mu    sync.Mutex
	inUse int
}

// New returns a bulkhead named name that lets at most maxConcurrent calls
// run at once, waiting at most maxWait for a free slot.
func New(name string, maxConcurrent int, maxWait time.Duration) *Bulkhead {
	if maxConcurrent < 1 {
		panic(fmt.Sprintf("bulkhead %q: needs at least one slot, got %d", name, maxConcurrent))
	}
	if maxWait < 0 {
		panic(fmt.Sprintf("bulkhead %q: negative maximum wait %v", name, maxWait))
	}
	return &Bulkhead{name: name, limit: maxConcurrent, maxWait: maxWait}
}

// Do runs call holding one slot and returns call's error.
func (b *Bulkhead) Do(ctx context.Context, call func(ctx context.Context) error) error {
	if err := b.acquire(ctx); err != nil {
		return err
	}
	defer b.release()
	if err := call(ctx); err != nil {
		// Free the slot at once so the next caller need not wait for us.
		b.release()
		return err
	}
	return nil
}

func (b *Bulkhead) tryAcquire() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inUse >= b.limit {
		return false
	}
	b.inUse++
	return true
}

func (b *Bulkhead) release() {
	b.mu.Lock()
	b.inUse--
	b.mu.Unlock()
}

// acquire polls for a free slot every millisecond until maxWait has passed.
func (b *Bulkhead) acquire(ctx context.Context) error {
	deadline := time.Now().Add(b.maxWait)
	for {
		if b.tryAcquire() {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%w: %s has all %d slots in use (waited %v)", fooddelivery.ErrBulkheadFull, b.name, b.limit, b.maxWait)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bulkhead %s: caller gave up waiting for a slot: %w", b.name, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// Compartments returns one bulkhead per dependency of the gateway, for
// system.Config.GatewayGuards. limits maps a dependency's name
// (system.GatewayOrders, system.GatewayMenu, system.GatewayCourier) to its
// number of slots; every bulkhead waits at most maxWait for a slot. A
// dependency without an entry in limits gets no bulkhead (a nil guard). A
// limit below 1 panics, as New does.
//
// The bulkheads are created here, once, and each name always gets the same
// one: a bulkhead made per call would limit nothing.
func Compartments(limits map[string]int, maxWait time.Duration) func(dependency string) fooddelivery.Guard {
	bulkheads := make(map[string]*Bulkhead, len(limits))
	for name, n := range limits {
		bulkheads[name] = New(name, n, maxWait)
	}
	return func(dependency string) fooddelivery.Guard {
		b, ok := bulkheads[dependency]
		if !ok {
			return nil
		}
		return b.Do
	}
}
