package system_test

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/system"
)

var instances = []string{"gateway", "auth", "order", "payment", "courier", "menu-1", "menu-2", "menu-3"}

// Config.Only runs one instance per system, each on its own loopback
// network that knows where the others listen: the shape of
// cmd/fooddelivery -processes, in one test process. A checkout crosses
// all of them, and each system serves only its own instance.
func TestOneInstancePerSystemServesACheckout(t *testing.T) {
	// A port picked free may be taken by another test process before the
	// instance binds it: then pick them all again.
	var systems map[string]*system.System
	var addrs map[string]string
	for try := 0; systems == nil; try++ {
		addrs = map[string]string{}
		for _, name := range instances {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			addrs[name] = l.Addr().String()
			l.Close()
		}
		systems = map[string]*system.System{}
		for _, name := range instances {
			n := memnet.NewLoopback()
			for peer, addr := range addrs {
				if peer != name {
					require.NoError(t, n.SetRemote(peer, addr, nil))
				}
			}
			sys, err := system.Start(system.Config{Network: n, Only: name, OnlyAddr: addrs[name]})
			if err != nil && strings.Contains(err.Error(), "address already in use") && try < 5 {
				for _, started := range systems {
					started.Close()
				}
				systems = nil
				break
			}
			require.NoError(t, err, "starting %s alone", name)
			systems[name] = sys
		}
	}
	for _, sys := range systems {
		defer sys.Close()
	}
	gw := systems["gateway"]
	assert.Equal(t, "http://"+addrs["gateway"]+"/graphql", systems["payment"].GatewayURL(), "every system knows the gateway's address")
	resp, _, err := gw.GraphQL(context.Background(), system.SampleToken,
		`mutation($in: PlaceOrderInput!) { placeOrder(input: $in) { id status } }`,
		map[string]any{"in": map[string]any{
			"restaurantId": system.SampleRestaurant,
			"items":        []any{map[string]any{"dishId": system.SampleDish, "quantity": 1}},
			"card":         "tok_visa",
		}})
	require.NoError(t, err)
	require.Empty(t, resp.Errors)
	var placed struct{ PlaceOrder struct{ ID, Status string } }
	require.NoError(t, json.Unmarshal(resp.Data, &placed))
	assert.Equal(t, "PLACED", placed.PlaceOrder.Status)
	assert.Equal(t, 1, systems["payment"].Ledger.ChargesFor(placed.PlaceOrder.ID), "payment's own ledger holds the charge")
	assert.Zero(t, gw.Ledger.ChargesFor(placed.PlaceOrder.ID), "the gateway's system runs no payment service")
	assert.Positive(t, systems["order"].Metrics.Route("order", "POST /orders").Received.Load())
	assert.Zero(t, gw.Metrics.Route("order", "POST /orders").Received.Load(), "the order service ran in its own system")

	assert.NoError(t, systems["payment"].Faults.Set("menu", "GET /restaurants", faults.Fault{Latency: time.Second}),
		"a rule for another instance is checked against the whole system's routes")
	assert.Error(t, systems["payment"].Faults.Set("menu", "GET /nosuch", faults.Fault{Latency: time.Second}))

	_, err = system.Start(system.Config{Network: memnet.NewLoopback(), Only: "menu-9"})
	assert.ErrorContains(t, err, `no instance "menu-9" to run alone; the instances are auth, courier, gateway, menu-1, menu-2, menu-3, order, payment`)
}
