package fooddelivery

import "context"

// Guard runs call on behalf of a caller, or refuses to run it. Patterns
// that wrap a whole call to a dependency (a bulkhead, a circuit breaker)
// have this shape: a guard passes ctx (or a context derived from it) to
// call and returns call's error, or returns an error of its own (wrapping
// ErrBulkheadFull, say) without calling call at all.
//
// A guard must not swallow a panic of call: it cleans up and lets it
// propagate.
type Guard func(ctx context.Context, call func(ctx context.Context) error) error

// guarded runs fn through g and returns fn's result; a nil g runs fn
// directly.
func guarded[T any](ctx context.Context, g Guard, fn func(context.Context) (T, error)) (T, error) {
	var out T
	err := g(ctx, func(ctx context.Context) error {
		var err error
		out, err = fn(ctx)
		return err
	})
	return out, err
}

// GuardOrderService returns an OrderService whose every call runs through
// g. A nil g returns s unchanged.
func GuardOrderService(s OrderService, g Guard) OrderService {
	if g == nil || s == nil {
		return s
	}
	return guardedOrders{s, g}
}

type guardedOrders struct {
	next OrderService
	g    Guard
}

func (o guardedOrders) PlaceOrder(ctx context.Context, user string, in PlaceOrderInput) (Order, error) {
	return guarded(ctx, o.g, func(ctx context.Context) (Order, error) { return o.next.PlaceOrder(ctx, user, in) })
}

func (o guardedOrders) Order(ctx context.Context, id string) (Order, error) {
	return guarded(ctx, o.g, func(ctx context.Context) (Order, error) { return o.next.Order(ctx, id) })
}

// GuardMenuReader returns a MenuReader whose every call runs through g. A
// nil g returns m unchanged.
func GuardMenuReader(m MenuReader, g Guard) MenuReader {
	if g == nil || m == nil {
		return m
	}
	return guardedMenu{m, g}
}

type guardedMenu struct {
	next MenuReader
	g    Guard
}

func (m guardedMenu) Restaurants(ctx context.Context) ([]Restaurant, error) {
	return guarded(ctx, m.g, func(ctx context.Context) ([]Restaurant, error) { return m.next.Restaurants(ctx) })
}

func (m guardedMenu) Menu(ctx context.Context, restaurantID string) (Menu, error) {
	return guarded(ctx, m.g, func(ctx context.Context) (Menu, error) { return m.next.Menu(ctx, restaurantID) })
}

// GuardETAReader returns an ETAReader whose every call runs through g. A
// nil g returns e unchanged.
func GuardETAReader(e ETAReader, g Guard) ETAReader {
	if g == nil || e == nil {
		return e
	}
	return guardedETA{e, g}
}

type guardedETA struct {
	next ETAReader
	g    Guard
}

func (e guardedETA) ETA(ctx context.Context, restaurantID string) (ETA, error) {
	return guarded(ctx, e.g, func(ctx context.Context) (ETA, error) { return e.next.ETA(ctx, restaurantID) })
}
