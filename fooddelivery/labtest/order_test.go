package labtest_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/system"
)

func TestPizzaOrder(t *testing.T) {
	labtest.Run(t, labtest.Options{}, func(t *testing.T) {
		sys := labtest.StartSystem(t, system.Config{})
		o, err := sys.Orders().PlaceOrder(context.Background(), "alice", labtest.PizzaOrder())
		require.NoError(t, err, "the standard order must be placed on a healthy system")
		require.Len(t, o.Items, 1)
		require.Equal(t, 2, o.Items[0].Quantity)
		require.Equal(t, int64(1), labtest.Charges(sys), "one order, one charge")
		require.Equal(t, int64(1), labtest.OrderCalls(sys))
	})
}

func TestPizzaOrderIsACopy(t *testing.T) {
	a := labtest.PizzaOrder()
	a.Items[0].Quantity = 99
	require.Equal(t, 2, labtest.PizzaOrder().Items[0].Quantity, "changing one copy must not change the next")
}

func TestPizzaOrderJSONIsPizzaOrder(t *testing.T) {
	want, err := json.Marshal(labtest.PizzaOrder())
	require.NoError(t, err)
	got, err := json.Marshal(labtest.PizzaOrderJSON(labtest.PizzaCard))
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
}

func TestPizzaOrderJSONThroughGateway(t *testing.T) {
	labtest.Run(t, labtest.Options{}, func(t *testing.T) {
		sys := labtest.StartSystem(t, system.Config{})
		resp, _, err := sys.GraphQL(context.Background(), system.SampleToken,
			`mutation($in: PlaceOrderInput!) { placeOrder(input: $in) { id } }`,
			map[string]any{"in": labtest.PizzaOrderJSON(labtest.PizzaCard)})
		require.NoError(t, err)
		require.Empty(t, resp.Errors, "the gateway must accept the standard order")
		require.Equal(t, int64(1), labtest.OrderCalls(sys))
		require.Equal(t, int64(1), labtest.Charges(sys))
	})
}
