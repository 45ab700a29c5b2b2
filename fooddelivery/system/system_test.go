package system_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/system"
)

// The whole system starts on memnet, answers GraphQL end to end (gateway ->
// auth, menu replicas, courier, order -> payment), and Close leaves no
// goroutine behind (synctest would panic if it did).
func TestSystemServesAnOrderEndToEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys, err := system.Start(system.Config{})
		require.NoError(t, err)
		defer sys.Close()
		ctx := context.Background()

		resp, status, err := sys.GraphQL(ctx, "", `{ restaurants { id name } }`, nil)
		require.NoError(t, err)
		require.Equal(t, 200, status)
		require.Empty(t, resp.Errors)
		var list struct{ Restaurants []struct{ ID, Name string } }
		require.NoError(t, resp.Decode(&list))
		assert.NotEmpty(t, list.Restaurants)

		resp, _, err = sys.GraphQL(ctx, system.SampleToken,
			`mutation($in: PlaceOrderInput!) { placeOrder(input: $in) { id status totalCents } }`,
			map[string]any{"in": map[string]any{
				"restaurantId": system.SampleRestaurant,
				"items":        []any{map[string]any{"dishId": system.SampleDish, "quantity": 2}},
				"card":         "tok_visa",
			}})
		require.NoError(t, err)
		require.Empty(t, resp.Errors)
		var placed struct {
			PlaceOrder struct {
				ID, Status string
				TotalCents int
			}
		}
		require.NoError(t, json.Unmarshal(resp.Data, &placed))
		assert.Equal(t, "PLACED", placed.PlaceOrder.Status)
		assert.Equal(t, 1, sys.Ledger.ChargesFor(placed.PlaceOrder.ID), "the order is charged exactly once")
		assert.Positive(t, sys.Metrics.Route("order", "POST /orders").Received.Load())
		assert.Positive(t, sys.Metrics.ServiceReceived("auth"), "the gateway checked the token")
	})
}

func TestStartRejectsBadConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, err := system.Start(system.Config{Limits: map[string]int{"order": -1}})
		assert.Error(t, err, "a negative concurrency limit is a configuration error")
		_, err = system.Start(system.Config{MenuReplicas: -2})
		assert.Error(t, err)
	})
}

func TestMenuReplicasAreConfigurable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys, err := system.Start(system.Config{MenuReplicas: 2})
		require.NoError(t, err)
		defer sys.Close()
		for range 4 {
			_, _, err = sys.GraphQL(context.Background(), "", `{ restaurant(id: "luigis") { name } }`, nil)
			require.NoError(t, err)
		}
		assert.Positive(t, sys.Metrics.ServiceReceived("menu-1"))
		assert.Positive(t, sys.Metrics.ServiceReceived("menu-2"), "reads are spread over the replicas")
		assert.Zero(t, sys.Metrics.ServiceReceived("menu-3"), "only two replicas run")
	})
}
