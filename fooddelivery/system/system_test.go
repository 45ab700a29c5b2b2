package system_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/memnet"
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

// placeOrderMutation places $in and asks for the order's lines.
const placeOrderMutation = `mutation($in: PlaceOrderInput!) { placeOrder(input: $in) { id status items { dishId quantity } } }`

// sampleOrder is an order input for the sample restaurant with items as
// given and the card tok_visa.
func sampleOrder(items ...map[string]any) map[string]any {
	lines := make([]any, len(items))
	for i, it := range items {
		lines[i] = it
	}
	return map[string]any{"restaurantId": system.SampleRestaurant, "items": lines, "card": "tok_visa"}
}

// The order service is the authority on an order's size: repeats of a
// dish cannot get round the per-dish cap, and the gateway reports the
// refusal as the client's mistake, with the order service's words.
func TestOrderSizeRulesReachTheClientAsBadRequest(t *testing.T) {
	one := map[string]any{"dishId": system.SampleDish, "quantity": 1}
	thousand := make([]map[string]any, 1000)
	for i := range thousand {
		thousand[i] = one
	}
	for _, tc := range []struct {
		name  string
		input map[string]any
		says  []string
	}{
		{"1,000 lines of one dish", sampleOrder(thousand...), []string{"at most 50 lines", "got 1000"}},
		{"one dish on two lines of 30", sampleOrder(
			map[string]any{"dishId": system.SampleDish, "quantity": 30},
			map[string]any{"dishId": system.SampleDish, "quantity": 30}),
			[]string{"at most 50 of one dish", "ordered 60 times over 2 lines"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sys, err := system.Start(system.Config{})
				require.NoError(t, err)
				defer sys.Close()

				resp, status, err := sys.GraphQL(context.Background(), system.SampleToken, placeOrderMutation, map[string]any{"in": tc.input})

				require.NoError(t, err)
				require.Equal(t, 200, status)
				e := resp.ErrorAt("placeOrder")
				require.NotNil(t, e, "the order is refused at its field; errors: %+v", resp.Errors)
				assert.Equal(t, gateway.CodeBadRequest, e.Code(), "an order too large is the client's mistake")
				for _, want := range tc.says {
					assert.Contains(t, e.Message, want, "the message says which rule the order breaks")
				}
				assert.Zero(t, sys.Ledger.Total(), "nothing is charged")
			})
		})
	}

	t.Run("repeats within the cap are merged", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sys, err := system.Start(system.Config{})
			require.NoError(t, err)
			defer sys.Close()

			resp, _, err := sys.GraphQL(context.Background(), system.SampleToken, placeOrderMutation,
				map[string]any{"in": sampleOrder(one, one, one)})

			require.NoError(t, err)
			require.Empty(t, resp.Errors)
			assert.JSONEq(t, `[{"dishId":"`+system.SampleDish+`","quantity":3}]`, string(jsonField(t, resp.Data, "placeOrder", "items")))
		})
	})
}

// jsonField returns the JSON value at path in data.
func jsonField(t *testing.T, data json.RawMessage, path ...string) json.RawMessage {
	t.Helper()
	for _, key := range path {
		var obj map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(data, &obj), "%s is not an object", data)
		data = obj[key]
	}
	return data
}

func TestUnknownCardReachesTheClientAsBadRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys, err := system.Start(system.Config{})
		require.NoError(t, err)
		defer sys.Close()
		in := sampleOrder(map[string]any{"dishId": system.SampleDish, "quantity": 1})
		in["card"] = "tok_amex"

		resp, _, err := sys.GraphQL(context.Background(), system.SampleToken, placeOrderMutation, map[string]any{"in": in})

		require.NoError(t, err)
		e := resp.ErrorAt("placeOrder")
		require.NotNil(t, e, "errors: %+v", resp.Errors)
		assert.Equal(t, gateway.CodeBadRequest, e.Code(), "an unknown card is the client's mistake, not an outage")
		assert.Contains(t, e.Message, "card_unknown")
		assert.Contains(t, e.Message, "tok_visa", "the message says which cards work")
		assert.Zero(t, sys.Ledger.Total(), "nothing is charged")
		assert.Equal(t, int64(1), sys.Metrics.Route("payment", "POST /charges").Received.Load(), "the charge is not retried")
		orders := sys.Store.Orders()
		require.Len(t, orders, 1)
		assert.Equal(t, "PAYMENT_FAILED", orders[0].Status, "the order is stored as a failed payment")
	})
}

// Once the system runs, the fault injector knows every instance's routes
// and refuses a rule on a route nothing serves, naming the real ones.
func TestFaultsOnRoutesNothingServesAreRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys, err := system.Start(system.Config{})
		require.NoError(t, err)
		defer sys.Close()

		assert.Equal(t, []string{"GET /charges", "POST /charges"}, sys.Faults.Routes()["payment"])
		assert.Contains(t, sys.Faults.Routes()["gateway"], "POST /graphql")
		assert.Contains(t, sys.Faults.Routes(), "menu-3")

		r, err := faults.Parse("payment:POST /charge=hang")
		require.NoError(t, err, "the spec itself is well formed")
		err = sys.Faults.Set(r.Service, r.Route, r.Fault)
		require.ErrorIs(t, err, faults.ErrUnknownTarget)
		assert.Contains(t, err.Error(), `"POST /charges"`)
		require.NoError(t, sys.Faults.Set("menu", "GET /restaurants/{id}/menu", faults.Fault{Latency: time.Second}))
		require.NoError(t, sys.Faults.Set("menu-2", "", faults.Fault{Latency: time.Second}))
	})
}

// A mounted handler answers beside the gateway, outside its concurrency
// limit and its faults; other paths still reach the gateway.
func TestMountServesBesideTheGateway(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys, err := system.Start(system.Config{Limits: map[string]int{"gateway": 1}})
		require.NoError(t, err)
		defer sys.Close()
		require.NoError(t, sys.Mount("/admin", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "admin "+r.URL.Path)
		})))
		require.Error(t, sys.Mount("/admin/", http.NotFoundHandler()), "a trailing slash is refused")
		require.Error(t, sys.Mount("/graphql", http.NotFoundHandler()), "the gateway's own path is refused")
		require.NoError(t, sys.Faults.Set("gateway", "", faults.Fault{Status: 500}))

		get := func(path string) (int, string) {
			resp, err := sys.HTTPClient().Get(memnet.ServiceURL("gateway") + path)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		status, body := get("/admin/faults")
		assert.Equal(t, 200, status)
		assert.Equal(t, "admin /admin/faults", body, "the gateway's fault does not reach the mounted handler")
		status, _ = get("/administrator")
		assert.Equal(t, 404, status, "a path that only begins with the prefix's letters is the gateway's")
		status, _ = get("/graphql?query=%7Brestaurants%7Bid%7D%7D")
		assert.Equal(t, 500, status, "the gateway itself still sees its fault")
		assert.Zero(t, sys.Metrics.Route("gateway", "GET /graphql").Rejected.Load())
	})
}

// The prefix "/" takes the root path alone: other paths the gateway does
// not serve still get the gateway's 404.
func TestMountRootTakesOnlyTheRootPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys, err := system.Start(system.Config{})
		require.NoError(t, err)
		defer sys.Close()
		require.NoError(t, sys.Mount("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "root "+r.URL.Path)
		})))
		get := func(path string) (int, string) {
			resp, err := sys.HTTPClient().Get(memnet.ServiceURL("gateway") + path)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		status, body := get("/")
		assert.Equal(t, 200, status)
		assert.Equal(t, "root /", body)
		status, body = get("/nowhere")
		assert.Equal(t, 404, status, "a path below the root is still the gateway's")
		assert.NotContains(t, body, "root")
		status, _ = get("/healthz")
		assert.Equal(t, 200, status, "the gateway's own paths are untouched")
		require.NoError(t, sys.Mount("/", nil))
		status, _ = get("/")
		assert.Equal(t, 404, status, "unmounted, the root is the gateway's again")
	})
}

// A browser opening the running system's /graphql gets GraphiQL; its
// queries are ordinary POSTs.
func TestGatewayServesTheIDE(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys, err := system.Start(system.Config{})
		require.NoError(t, err)
		defer sys.Close()
		req, err := http.NewRequest(http.MethodGet, memnet.ServiceURL("gateway")+"/graphql", nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "text/html,*/*;q=0.8")
		resp, err := sys.HTTPClient().Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
		assert.Contains(t, string(b), "graphiql.min.js")

		resp, err = sys.HTTPClient().Get(memnet.ServiceURL("gateway") + "/graphql/ide/graphiql.min.js")
		require.NoError(t, err)
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode)
		assert.Greater(t, n, int64(1<<20), "the whole GraphiQL bundle")
	})
}
