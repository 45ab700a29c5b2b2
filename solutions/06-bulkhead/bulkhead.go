// Package bulkhead is the reference solution of lab 06: the gateway puts
// each of its dependencies behind its own bulkhead, so a hanging payment
// provider can fill the checkout compartment but never the slots that
// menus and delivery estimates need. See NOTES.md for the trade-offs.
package bulkhead

import (
	"context"
	"fmt"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
)

// Bulkhead limits how many calls to one dependency run at once. A call
// that finds every slot taken waits at most the bulkhead's maximum wait for
// one, and is then refused without being sent, with an error wrapping
// fooddelivery.ErrBulkheadFull. Every slot a call takes is given back
// exactly once when the call returns, fails or panics.
//
// A Bulkhead is safe for concurrent use. Create one with New.
type Bulkhead struct {
	name    string
	maxWait time.Duration
	// slots holds one token per call in flight: sending takes a slot,
	// receiving gives one back. Its capacity is the limit.
	slots chan struct{}
}

// New returns a bulkhead named name (it appears in errors) that lets at
// most maxConcurrent calls run at once. maxWait is the longest a call waits
// for a free slot: zero means not at all (refuse at once, as resilience4j's
// default maxWaitDuration of 0 does). A maxConcurrent below 1 or a negative
// maxWait is a configuration error and panics.
//
//	payments := bulkhead.New("payments", 25, 0)
//	err := payments.Do(ctx, func(ctx context.Context) error {
//		_, err := payer.Charge(ctx, req)
//		return err
//	})
//	if errors.Is(err, fooddelivery.ErrBulkheadFull) { /* answer fast: try again later */ }
func New(name string, maxConcurrent int, maxWait time.Duration) *Bulkhead {
	if maxConcurrent < 1 {
		panic(fmt.Sprintf("bulkhead %q: needs at least one slot, got %d", name, maxConcurrent))
	}
	if maxWait < 0 {
		panic(fmt.Sprintf("bulkhead %q: negative maximum wait %v", name, maxWait))
	}
	return &Bulkhead{name: name, maxWait: maxWait, slots: make(chan struct{}, maxConcurrent)}
}

// Do runs call holding one slot, passing it ctx, and returns call's error.
//
// When every slot is taken, Do waits up to the bulkhead's maximum wait; if
// no slot frees up in time it returns an error wrapping
// fooddelivery.ErrBulkheadFull, and if ctx ends first it returns an error
// wrapping ctx's error, also when a slot frees up at the moment ctx ends.
// A ctx that is already done when Do is called starts nothing, even with a
// slot free. In these cases call does not run and no slot is held. If call
// panics, the slot is given back and the panic continues.
func (b *Bulkhead) Do(ctx context.Context, call func(ctx context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bulkhead %s: caller gave up before the call: %w", b.name, err)
	}
	select {
	case b.slots <- struct{}{}:
		// A free slot, taken at once: the common case, with no timer.
	default:
		if err := b.wait(ctx); err != nil {
			return err
		}
	}
	// The deferred release runs exactly once on every way out of call:
	// return, error or panic.
	defer b.release()
	return call(ctx)
}

// release gives back the slot a call took.
func (b *Bulkhead) release() { <-b.slots }

// wait takes a slot of a bulkhead found full, waiting up to the maximum
// wait, or says why it could not. Taking the slot is the send in a select,
// so a caller that gives up has taken nothing: there is no hand-over to a
// waiter that is no longer there.
func (b *Bulkhead) wait(ctx context.Context) error {
	if b.maxWait == 0 {
		return b.full()
	}
	timer := time.NewTimer(b.maxWait)
	defer timer.Stop()
	select {
	case b.slots <- struct{}{}:
		// A slot that frees up as the caller gives up makes both cases
		// ready, and select picks either: check again, as
		// x/sync/semaphore does, so that no call starts on a context
		// that is already done.
		if err := ctx.Err(); err != nil {
			b.release()
			return fmt.Errorf("bulkhead %s: caller gave up as a slot freed up: %w", b.name, err)
		}
		return nil
	case <-timer.C:
		return b.full()
	case <-ctx.Done():
		return fmt.Errorf("bulkhead %s: caller gave up waiting for a slot: %w", b.name, ctx.Err())
	}
}

func (b *Bulkhead) full() error {
	return fmt.Errorf("%w: %s has all %d slots in use (waited %v)", fooddelivery.ErrBulkheadFull, b.name, cap(b.slots), b.maxWait)
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
