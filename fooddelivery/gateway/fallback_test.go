package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/gateway"
)

// Wrappers that answer every call from a "fallback": the value of the
// healthy fake beside a *gateway.FallbackError, as lab 07's code does.

type staleMenu struct{ next fooddelivery.MenuReader }

func (m staleMenu) Restaurants(ctx context.Context) ([]fooddelivery.Restaurant, error) {
	list, _ := m.next.Restaurants(ctx)
	return list, &gateway.FallbackError{Code: gateway.CodeStale, Message: "cached list", Err: fooddelivery.ErrUnavailable}
}

func (m staleMenu) Menu(ctx context.Context, id string) (fooddelivery.Menu, error) {
	menu, _ := m.next.Menu(ctx, id)
	menu.Stale = true
	return menu, &gateway.FallbackError{Code: gateway.CodeStale, Message: "cached menu"}
}

type estimatedETA struct{}

func (estimatedETA) ETA(_ context.Context, id string) (fooddelivery.ETA, error) {
	return fooddelivery.ETA{RestaurantID: id, Min: 30 * time.Minute, Max: 45 * time.Minute, Estimated: true},
		&gateway.FallbackError{Code: gateway.CodeEstimated, Message: "typical time"}
}

type popularOnly struct{ next fooddelivery.Recommender }

func (r popularOnly) Popular(ctx context.Context) ([]fooddelivery.Dish, error) {
	return r.next.Popular(ctx)
}

func (r popularOnly) Recommendations(ctx context.Context, _ string) ([]fooddelivery.Dish, error) {
	d, _ := r.next.Popular(ctx)
	return d, &gateway.FallbackError{Code: gateway.CodeDegraded, Message: "popular dishes"}
}

type deferredReviews struct{}

func (deferredReviews) SubmitReview(_ context.Context, r fooddelivery.Review) (fooddelivery.Review, error) {
	r.ID = "pending-1"
	return r, &gateway.FallbackError{Code: gateway.CodeDeferred, Message: "will appear later"}
}

type notCharged struct{ fooddelivery.OrderService }

func (notCharged) PlaceOrder(context.Context, string, fooddelivery.PlaceOrderInput) (fooddelivery.Order, error) {
	// A value beside the error must not be served: an order that was not
	// placed has no id to show.
	return fooddelivery.Order{ID: "ghost"}, &gateway.FallbackError{Code: gateway.CodeNotCharged, Message: "not charged; try again", Err: fooddelivery.ErrTimeout}
}

func TestFallbackValuesAreServedWithFieldErrors(t *testing.T) {
	s := newSystem()
	d := s.deps()
	d.Menu, d.ETA, d.Recs = staleMenu{s.menu}, estimatedETA{}, popularOnly{s.recs}
	serve(t, d, func(t *testing.T, c *client) {
		resp := c.query(t, "t-alice", `{ home { restaurants { id menu { id } menuStale eta } recommendations { id } } }`, nil)
		var got homeJSON
		require.NoError(t, resp.Decode(&got), "fallback values are data")
		require.Len(t, got.Home.Restaurants, 3, "the cached list is served")
		for i, r := range got.Home.Restaurants {
			assert.NotEmpty(t, r.Menu, "restaurant %d: the cached menu is served", i)
			assert.True(t, r.MenuStale, "restaurant %d: a cached menu is marked stale", i)
			require.NotNil(t, r.ETA)
			assert.Equal(t, "30-45 min (estimate)", *r.ETA, "restaurant %d: the default ETA is served", i)
			assert.Equal(t, gateway.CodeStale, resp.ErrorAt("home", "restaurants", i, "menu").Code())
			assert.Equal(t, gateway.CodeEstimated, resp.ErrorAt("home", "restaurants", i, "eta").Code())
			assert.Nil(t, resp.ErrorAt("home", "restaurants", i, "menuStale"), "menuStale does not repeat the menu's error")
		}
		assert.Equal(t, []dishJSON{{ID: "d1"}}, got.Home.Recommendations, "popular dishes stand in for recommendations")
		assert.Equal(t, gateway.CodeStale, resp.ErrorAt("home", "restaurants").Code())
		assert.Equal(t, gateway.CodeDegraded, resp.ErrorAt("home", "recommendations").Code())
		assert.Len(t, resp.Errors, 1+3+3+1, "one error per degraded field, nothing else")
		assert.Equal(t, "cached list", resp.ErrorAt("home", "restaurants").Message,
			"the message is the fallback's, for the end user; the failure it covered stays in the logs")
	})
}

func TestFallbackWriteIsServedOrRefusedByField(t *testing.T) {
	s := newSystem()
	d := s.deps()
	d.Reviews, d.Orders = deferredReviews{}, notCharged{s.orders}
	serve(t, d, func(t *testing.T, c *client) {
		resp := c.query(t, "t-alice", `mutation { submitReview(input: {restaurantId: "r1", stars: 5, text: "yum"}) { id text } }`, nil)
		var rv struct{ SubmitReview *struct{ ID, Text string } }
		require.NoError(t, resp.Decode(&rv))
		require.NotNil(t, rv.SubmitReview, "a deferred review is served")
		assert.Equal(t, "pending-1", rv.SubmitReview.ID)
		assert.Equal(t, gateway.CodeDeferred, resp.ErrorAt("submitReview").Code())

		resp = c.query(t, "t-alice", `mutation { placeOrder(input: {restaurantId: "r1", items: [{dishId: "d1", quantity: 1}], card: "tok_visa"}) { id } }`, nil)
		assert.JSONEq(t, `null`, string(resp.Data), "placeOrder never serves a value beside an error")
		e := resp.ErrorAt("placeOrder")
		require.NotNil(t, e)
		assert.Equal(t, gateway.CodeNotCharged, e.Code())
		assert.Contains(t, e.Message, "not charged; try again")
		assert.Equal(t, gateway.CodeNotCharged, gateway.ErrorCode(&gateway.FallbackError{Code: gateway.CodeNotCharged}))
		assert.Equal(t, gateway.CodeDegraded, gateway.ErrorCode(&gateway.FallbackError{}), "an empty code is DEGRADED")
	})
}

// Two fields reading one slow menu: the second waits for the first. Under
// synctest that wait must be durable (a channel, not a mutex), or fake time
// stops and the test hangs in real time.
func TestSlowMenuSharedByTwoFieldsLetsFakeTimeRun(t *testing.T) {
	s := newSystem()
	s.menu.latency = 2 * time.Second
	serve(t, s.deps(), func(t *testing.T, c *client) {
		began := time.Now()
		resp := c.query(t, "", `{ restaurants { menu { id } menuStale } }`, nil)
		assert.Empty(t, resp.Errors)
		assert.Equal(t, 4*time.Second, time.Since(began), "the list, then the menus side by side, each read once")
		assert.Equal(t, int64(3), s.menu.menuCalls.Load(), "each menu is read once for both fields")
	})
}
