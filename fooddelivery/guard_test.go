package fooddelivery_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
)

type fakeDeps struct{ calls int }

func (f *fakeDeps) PlaceOrder(context.Context, string, fooddelivery.PlaceOrderInput) (fooddelivery.Order, error) {
	f.calls++
	return fooddelivery.Order{ID: "o1"}, nil
}
func (f *fakeDeps) Order(_ context.Context, id string) (fooddelivery.Order, error) {
	f.calls++
	return fooddelivery.Order{ID: id}, nil
}
func (f *fakeDeps) Restaurants(context.Context) ([]fooddelivery.Restaurant, error) {
	f.calls++
	return []fooddelivery.Restaurant{{ID: "r1"}}, nil
}
func (f *fakeDeps) Menu(_ context.Context, id string) (fooddelivery.Menu, error) {
	f.calls++
	return fooddelivery.Menu{RestaurantID: id}, nil
}
func (f *fakeDeps) ETA(context.Context, string) (fooddelivery.ETA, error) {
	f.calls++
	return fooddelivery.ETA{Estimated: true}, nil
}

func TestGuardsRunEveryCallThroughTheGuard(t *testing.T) {
	f := &fakeDeps{}
	guarded := 0
	pass := func(ctx context.Context, call func(context.Context) error) error { guarded++; return call(ctx) }
	ctx := context.Background()

	o := fooddelivery.GuardOrderService(f, pass)
	got, err := o.PlaceOrder(ctx, "alice", fooddelivery.PlaceOrderInput{})
	require.NoError(t, err)
	assert.Equal(t, "o1", got.ID, "the guarded call's result comes back")
	got, _ = o.Order(ctx, "o7")
	assert.Equal(t, "o7", got.ID)
	m := fooddelivery.GuardMenuReader(f, pass)
	list, _ := m.Restaurants(ctx)
	assert.Len(t, list, 1)
	menu, _ := m.Menu(ctx, "r2")
	assert.Equal(t, "r2", menu.RestaurantID)
	eta, _ := fooddelivery.GuardETAReader(f, pass).ETA(ctx, "r1")
	assert.True(t, eta.Estimated)
	assert.Equal(t, 5, guarded, "every call goes through the guard")
	assert.Equal(t, 5, f.calls)
}

func TestGuardThatRefusesSkipsTheCall(t *testing.T) {
	f := &fakeDeps{}
	refuse := func(context.Context, func(context.Context) error) error {
		return fmt.Errorf("%w: test", fooddelivery.ErrBulkheadFull)
	}
	_, err := fooddelivery.GuardMenuReader(f, refuse).Menu(context.Background(), "r1")
	assert.True(t, errors.Is(err, fooddelivery.ErrBulkheadFull))
	_, err = fooddelivery.GuardOrderService(f, refuse).PlaceOrder(context.Background(), "alice", fooddelivery.PlaceOrderInput{})
	assert.True(t, errors.Is(err, fooddelivery.ErrBulkheadFull))
	assert.Zero(t, f.calls, "a refused call never reaches the dependency")
}

func TestNilGuardLeavesTheDependencyAlone(t *testing.T) {
	f := &fakeDeps{}
	assert.Same(t, f, fooddelivery.GuardOrderService(f, nil).(*fakeDeps))
	assert.Same(t, f, fooddelivery.GuardMenuReader(f, nil).(*fakeDeps))
	assert.Same(t, f, fooddelivery.GuardETAReader(f, nil).(*fakeDeps))
}
