package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type dishJSON struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	PriceCents int    `json:"priceCents"`
}

type restaurantJSON struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Cuisine   string     `json:"cuisine"`
	Menu      []dishJSON `json:"menu"`
	MenuStale bool       `json:"menuStale"`
	ETA       *string    `json:"eta"`
}

type homeJSON struct {
	Home *struct {
		Restaurants     []restaurantJSON `json:"restaurants"`
		Recommendations []dishJSON       `json:"recommendations"`
	} `json:"home"`
}

const homeQuery = `query Home {
  home {
    restaurants { id name menu { id name priceCents } eta }
    recommendations { id name }
  }
}`

func TestRestaurantsList(t *testing.T) {
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		resp := c.query(t, "", `{ restaurants { id name cuisine } }`, nil)
		assert.Empty(t, resp.Errors, "a healthy system answers without errors")
		var got struct{ Restaurants []restaurantJSON }
		require.NoError(t, resp.Decode(&got))
		require.Len(t, got.Restaurants, 3, "every restaurant of the menu service is listed")
		assert.Equal(t, restaurantJSON{ID: "r2", Name: "Sushi Go", Cuisine: "japanese"}, got.Restaurants[1])
		assert.Zero(t, s.menu.menuCalls.Load(), "no menu was asked for, so no menu may be read")
		assert.Zero(t, s.eta.calls.Load(), "no eta was asked for, so the courier service must not be called")
		assert.JSONEq(t, `{"restaurants":[{"id":"r1","name":"Pasta Place","cuisine":"italian"},{"id":"r2","name":"Sushi Go","cuisine":"japanese"},{"id":"r3","name":"Taco Town","cuisine":"mexican"}]}`, string(resp.Data))
	})
}

func TestRestaurantByIDWithMenuAndETA(t *testing.T) {
	s := newSystem()
	s.eta.etas = map[string]fooddelivery.ETA{"r3": {RestaurantID: "r3", Min: 30 * time.Minute, Max: 45 * time.Minute, Estimated: true}}
	serve(t, s.deps(), func(t *testing.T, c *client) {
		const q = `query One($id: ID!) { restaurant(id: $id) { id name menu { id name priceCents } menuStale eta } }`
		resp := c.query(t, "", q, map[string]any{"id": "r1"})
		require.Empty(t, resp.Errors)
		var got struct{ Restaurant *restaurantJSON }
		require.NoError(t, resp.Decode(&got))
		require.NotNil(t, got.Restaurant)
		assert.Equal(t, []dishJSON{{"d1", "Carbonara", 1250}, {"d2", "Tiramisu", 650}}, got.Restaurant.Menu)
		require.NotNil(t, got.Restaurant.ETA)
		assert.Equal(t, "20-35 min", *got.Restaurant.ETA, "a live estimate is shown as min-max minutes")
		assert.False(t, got.Restaurant.MenuStale, "a menu read from the menu service is fresh")
		assert.EqualValues(t, 1, s.menu.menuCalls.Load(), "menu and menuStale share one menu read")

		resp = c.query(t, "", q, map[string]any{"id": "r3"})
		require.NoError(t, resp.Decode(&got))
		assert.Equal(t, "30-45 min (estimate)", *got.Restaurant.ETA, "a default ETA is marked as an estimate")

		resp = c.query(t, "", q, map[string]any{"id": "nope"})
		assert.JSONEq(t, `{"restaurant":null}`, string(resp.Data), "an unknown restaurant is null")
		e := resp.ErrorAt("restaurant")
		require.NotNil(t, e, "an unknown restaurant carries an error at its path; errors: %+v", resp.Errors)
		assert.Equal(t, gateway.CodeNotFound, e.Code())
		assert.Contains(t, e.Message, `"nope"`)
	})
}

func TestRestaurantListIsReadOncePerRequest(t *testing.T) {
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		resp := c.query(t, "", `{ restaurants { id menu { id } } restaurant(id: "r2") { menu { name } } home { restaurants { name } } }`, nil)
		require.Empty(t, resp.Errors)
		assert.EqualValues(t, 1, s.menu.restaurantsCalls.Load(), "three fields need the restaurant list; the menu service is asked once")
		assert.EqualValues(t, 3, s.menu.menuCalls.Load(), "each menu is read once per request, however often it is selected")
	})
}

func TestHomeFanOutDegradesOneMenu(t *testing.T) {
	s := newSystem()
	s.menu.menuErr = map[string]error{"r2": fmt.Errorf("menu-1: %w", fooddelivery.ErrUnavailable)}
	serve(t, s.deps(), func(t *testing.T, c *client) {
		resp := c.query(t, "", homeQuery, nil)

		var got homeJSON
		require.NoError(t, resp.Decode(&got), "one failing menu must not fail the page")
		require.NotNil(t, got.Home)
		require.Len(t, got.Home.Restaurants, 3, "every restaurant is still listed")
		assert.Nil(t, got.Home.Restaurants[1].Menu, "the failing menu is null")
		assert.NotEmpty(t, got.Home.Restaurants[0].Menu, "other menus are served normally")
		assert.NotEmpty(t, got.Home.Restaurants[2].Menu, "other menus are served normally")
		assert.NotNil(t, got.Home.Restaurants[1].ETA, "the ETA of the restaurant with the failing menu is still there")
		assert.Equal(t, []dishJSON{{ID: "d1", Name: "Carbonara"}}, got.Home.Recommendations, "anonymous visitors get popular dishes")

		require.Len(t, resp.Errors, 1, "exactly one field degraded: %+v", resp.Errors)
		e := resp.ErrorAt("home", "restaurants", 1, "menu")
		require.NotNil(t, e, "the error names the failed field by path; got %+v", resp.Errors)
		assert.Equal(t, []any{"home", "restaurants", 1, "menu"}, e.Path)
		assert.Equal(t, gateway.CodeUnavailable, e.Code(), "ErrUnavailable is reported as UNAVAILABLE")
		assert.Contains(t, e.Message, "Restaurant.menu", "the message says which field failed")
		require.NotEmpty(t, e.Locations, "the error points at the field in the query")
		assert.Equal(t, 3, e.Locations[0].Line)

		assert.EqualValues(t, 1, s.recs.popularCalls.Load(), "popular dishes are read once")
		assert.Zero(t, s.recs.recsCalls.Load(), "personal recommendations need a signed-in user")
		assert.Zero(t, s.auth.calls.Load(), "an anonymous page view never calls auth")
	})
}

func TestHomeFanOutRunsConcurrently(t *testing.T) {
	const latency = 100 * time.Millisecond
	s := newSystem()
	s.menu.latency, s.eta.latency, s.recs.latency = latency, latency, latency
	serve(t, s.deps(), func(t *testing.T, c *client) {
		start := time.Now()
		resp := c.query(t, "", homeQuery, nil)
		elapsed := time.Since(start)
		require.Empty(t, resp.Errors)

		// restaurants (100ms, alongside recommendations), then 3 menus and
		// 3 ETAs side by side (100ms). One after the other it would take
		// 100 + 6x100 + 100 = 800ms.
		assert.GreaterOrEqual(t, elapsed, 2*latency, "the page needs the list, then the menus")
		assert.Less(t, elapsed, 3*latency,
			"the home page took %v of virtual time with every call taking %v; menus and ETAs of all restaurants must be read concurrently (sequential would be 800ms)", elapsed, latency)
		assert.EqualValues(t, 6, s.calls.peak.Load(), "all 3 menus and 3 ETAs were in flight at once")
		assert.EqualValues(t, 3, s.menu.menuCalls.Load())
		assert.EqualValues(t, 3, s.eta.calls.Load())
	})
}

func TestHomeRecommendationsForSignedInUser(t *testing.T) {
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		resp := c.query(t, "t-alice", `{ home { recommendations { name } } }`, nil)
		require.Empty(t, resp.Errors)
		assert.JSONEq(t, `{"home":{"recommendations":[{"name":"Salmon nigiri"}]}}`, string(resp.Data))
		assert.Equal(t, []string{"alice"}, s.recs.users, "recommendations are for the user the token belongs to")
		assert.Zero(t, s.recs.popularCalls.Load())

		s.recs.err = fmt.Errorf("recs: %w", fooddelivery.ErrTimeout)
		resp = c.query(t, "t-alice", `{ home { restaurants { id } recommendations { name } } }`, nil)
		assert.Equal(t, gateway.CodeTimeout, resp.ErrorAt("home", "recommendations").Code(), "ErrTimeout is reported as TIMEOUT; errors %+v", resp.Errors)
		assert.JSONEq(t, `{"home":{"restaurants":[{"id":"r1"},{"id":"r2"},{"id":"r3"}],"recommendations":null}}`, string(resp.Data),
			"failing recommendations leave the rest of the page alone")
	})
}

const placeOrder = `mutation Place($input: PlaceOrderInput!) {
  placeOrder(input: $input) { id status totalCents restaurantId courierId items { dishId quantity } }
}`

var orderInput = map[string]any{
	"restaurantId": "r1",
	"card":         "tok_visa",
	"items":        []any{map[string]any{"dishId": "d1", "quantity": 2}},
}

func TestPlaceOrderTakesASingleItemAsAListOfOne(t *testing.T) {
	// GraphQL input coercion: a single value where a list is expected is a
	// list of one, in a literal and in a variable alike.
	item := map[string]any{"dishId": "d1", "quantity": 2}
	for _, tc := range []struct {
		name  string
		query string
		vars  map[string]any
	}{
		{"in a literal", `mutation { placeOrder(input: {restaurantId: "r1", card: "tok_visa", items: {dishId: "d1", quantity: 2}}) { id } }`, nil},
		{"in an input variable", placeOrder, map[string]any{"input": map[string]any{"restaurantId": "r1", "card": "tok_visa", "items": item}}},
		{"as a list variable", `mutation($items: [OrderLineInput!]!) { placeOrder(input: {restaurantId: "r1", card: "tok_visa", items: $items}) { id } }`, map[string]any{"items": item}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSystem()
			serve(t, s.deps(), func(t *testing.T, c *client) {
				resp := c.query(t, "t-alice", tc.query, tc.vars)
				require.Empty(t, resp.Errors)
				require.Len(t, s.orders.placed, 1)
				assert.Equal(t, []fooddelivery.OrderItem{{DishID: "d1", Quantity: 2}}, s.orders.placed[0].in.Items,
					"the one item reaches the order service; it is never dropped")
			})
		})
	}
}

func TestIntVariablesOutsideInt32AreRejected(t *testing.T) {
	// Variables are JSON: a number there may be any size, and the GraphQL
	// spec's Int is 32 bits. An out-of-range value is a clear field error,
	// never a wrapped-around quantity.
	for _, qty := range []any{1e30, 4294967298, 2.5} {
		t.Run(fmt.Sprint(qty), func(t *testing.T) {
			s := newSystem()
			serve(t, s.deps(), func(t *testing.T, c *client) {
				in := map[string]any{"restaurantId": "r1", "card": "tok_visa",
					"items": []any{map[string]any{"dishId": "d1", "quantity": qty}}}
				resp := c.query(t, "t-alice", placeOrder, map[string]any{"input": in})
				assert.Empty(t, s.orders.placed, "no order may reach the order service with quantity %v", qty)
				if e := resp.ErrorAt("placeOrder"); e != nil {
					assert.Equal(t, gateway.CodeBadRequest, e.Code(), "quantity %v: %s", qty, e.Message)
				} else {
					require.NotEmpty(t, resp.Errors, "quantity %v must be refused", qty)
				}
			})
		})
	}
}

func TestIntOutside32BitsIsRefusedByTheGatewayAndShownAsSent(t *testing.T) {
	// 2^40: a whole number well outside Int. JSON variables arrive as
	// float64, which %v would print as 1.099511627776e+12.
	const big = 1099511627776
	item := func(qty any) map[string]any {
		return map[string]any{"restaurantId": "r1", "card": "tok_visa", "items": []any{map[string]any{"dishId": "d1", "quantity": qty}}}
	}
	for _, tc := range []struct {
		name  string
		query string
		vars  map[string]any
		code  string // BAD_VARIABLES for a variable, VALIDATION_FAILED for a literal
		shows string
	}{
		{"placeOrder quantity in a JSON variable", placeOrder, map[string]any{"input": item(big)}, gateway.CodeBadVariables, "$input.items[0].quantity: 1099511627776 is not an Int"},
		{"placeOrder negative quantity in a JSON variable", placeOrder, map[string]any{"input": item(-big)}, gateway.CodeBadVariables, "$input.items[0].quantity: -1099511627776 is not an Int"},
		{"placeOrder quantity 1e30 in a JSON variable", placeOrder, map[string]any{"input": item(1e30)}, gateway.CodeBadVariables, "$input.items[0].quantity: 1000000000000000000000000000000 is not an Int"},
		{"placeOrder quantity in a literal",
			`mutation { placeOrder(input: {restaurantId: "r1", card: "tok_visa", items: [{dishId: "d1", quantity: 1099511627776}]}) { id } }`, nil,
			gateway.CodeValidationFailed, "1099511627776 is not an Int"},
		{"submitReview stars in a JSON variable",
			`mutation R($stars: Int!) { submitReview(input: {restaurantId: "r1", stars: $stars, text: "ok"}) { id } }`, map[string]any{"stars": big},
			gateway.CodeBadVariables, "$stars: 1099511627776 is not an Int"},
		{"submitReview stars in an input variable",
			`mutation R($in: ReviewInput!) { submitReview(input: $in) { id } }`, map[string]any{"in": map[string]any{"restaurantId": "r1", "stars": big, "text": "ok"}},
			gateway.CodeBadVariables, "$in.stars: 1099511627776 is not an Int"},
		{"submitReview stars in a literal",
			`mutation { submitReview(input: {restaurantId: "r1", stars: 1099511627776, text: "ok"}) { id } }`, nil,
			gateway.CodeValidationFailed, "1099511627776 is not an Int"},
		{"a fraction in a JSON variable",
			`mutation R($stars: Int!) { submitReview(input: {restaurantId: "r1", stars: $stars, text: "ok"}) { id } }`, map[string]any{"stars": 2.5},
			gateway.CodeBadVariables, "$stars: 2.5 is not an Int"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSystem()
			serve(t, s.deps(), func(t *testing.T, c *client) {
				resp := c.query(t, "t-alice", tc.query, tc.vars)

				require.Len(t, resp.Errors, 1, "a request error: %+v", resp.Errors)
				e := resp.Errors[0]
				assert.Nil(t, resp.Data, "nothing ran")
				assert.Equal(t, tc.code, e.Code())
				assert.Contains(t, e.Message, tc.shows, "the value is printed as the integer the client sent, at its place")
				assert.Contains(t, e.Message, "from -2147483648 to 2147483647", "the message states the rule")
				assert.NotContains(t, e.Message, "e+", "never in exponent form")
				assert.NotContains(t, e.Message, "dependency", "the gateway refused it itself")
				assert.Zero(t, s.orders.calls.Load(), "the order service is never called")
				assert.Zero(t, s.reviews.calls.Load(), "the review store is never called")
			})
		})
	}
}

func TestPlaceOrderWithVariablesAndAuth(t *testing.T) {
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		resp := c.query(t, "t-alice", placeOrder, map[string]any{"input": orderInput})
		require.Empty(t, resp.Errors)
		assert.JSONEq(t, `{"placeOrder":{"id":"o1","status":"PLACED","totalCents":2500,"restaurantId":"r1","courierId":"c7","items":[{"dishId":"d1","quantity":2}]}}`, string(resp.Data))
		require.Len(t, s.orders.placed, 1)
		assert.Equal(t, placed{user: "alice", in: fooddelivery.PlaceOrderInput{
			RestaurantID: "r1", Card: "tok_visa", Items: []fooddelivery.OrderItem{{DishID: "d1", Quantity: 2}},
		}}, s.orders.placed[0], "the order service gets the signed-in user and the input as sent")
		assert.EqualValues(t, 1, s.auth.calls.Load(), "one auth check per request")

		s.orders.orders["o1"] = fooddelivery.Order{ID: "o1", User: "alice", Status: fooddelivery.OrderPlaced}
		resp = c.query(t, "t-alice", `{ order(id: "o1") { id status courierId } }`, nil)
		assert.JSONEq(t, `{"order":{"id":"o1","status":"PLACED","courierId":null}}`, string(resp.Data))

		resp = c.query(t, "t-bob", `{ order(id: "o1") { id } }`, nil)
		assert.JSONEq(t, `{"order":null}`, string(resp.Data), "bob must not see alice's order")
		assert.Equal(t, gateway.CodeNotFound, resp.ErrorAt("order").Code())
	})
}

func TestOrderFieldsNeedAToken(t *testing.T) {
	for _, tc := range []struct {
		name, auth string
	}{
		{"no Authorization header", ""},
		{"a token auth does not accept", "Bearer t-mallory"},
		{"a header that is not Bearer", "Basic YWxpY2U6c2VjcmV0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSystem()
			serve(t, s.deps(), func(t *testing.T, c *client) {
				body, _ := json.Marshal(gateway.Request{Query: placeOrder, Variables: map[string]any{"input": orderInput}})
				req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(string(body)))
				req.Header.Set("Content-Type", "application/json")
				if tc.auth != "" {
					req.Header.Set("Authorization", tc.auth)
				}
				hresp, err := c.hc.Do(req)
				require.NoError(t, err)
				defer hresp.Body.Close()
				require.Equal(t, http.StatusOK, hresp.StatusCode)
				var resp gateway.Response
				require.NoError(t, json.NewDecoder(hresp.Body).Decode(&resp))

				assert.JSONEq(t, `null`, string(resp.Data), "placeOrder is non-null, so its null propagates to data")
				e := resp.ErrorAt("placeOrder")
				require.NotNil(t, e, "errors: %+v", resp.Errors)
				assert.Equal(t, gateway.CodeUnauthenticated, e.Code())
				assert.NotEmpty(t, e.Message)
				assert.Zero(t, s.orders.calls.Load(), "an unauthenticated request must never reach the order service")
			})
		})
	}
}

func TestAuthDownFailsClosed(t *testing.T) {
	s := newSystem()
	s.auth.err = fmt.Errorf("auth: %w", fooddelivery.ErrUnavailable)
	serve(t, s.deps(), func(t *testing.T, c *client) {
		resp := c.query(t, "t-alice", placeOrder, map[string]any{"input": orderInput})
		e := resp.ErrorAt("placeOrder")
		require.NotNil(t, e, "errors: %+v", resp.Errors)
		assert.Equal(t, gateway.CodeAuthUnavailable, e.Code(), "auth could not be asked: deny, and say why")
		assert.Zero(t, s.orders.calls.Load(), "with auth down the order must never be placed (fail closed)")

		resp = c.query(t, "t-alice", `{ order(id: "o1") { id } submitted: restaurants { id } }`, nil)
		assert.Equal(t, gateway.CodeAuthUnavailable, resp.ErrorAt("order").Code())
		assert.JSONEq(t, `{"order":null,"submitted":[{"id":"r1"},{"id":"r2"},{"id":"r3"}]}`, string(resp.Data),
			"anonymous fields keep working while auth is down")
		assert.Zero(t, s.orders.calls.Load())

		resp = c.query(t, "t-alice", `mutation { submitReview(input: {restaurantId: "r1", stars: 5, text: "great"}) { id } }`, nil)
		assert.Equal(t, gateway.CodeAuthUnavailable, resp.ErrorAt("submitReview").Code())
		assert.Zero(t, s.reviews.calls.Load(), "no review is stored for a user nobody could check")
	})
}

func TestSubmitReview(t *testing.T) {
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		resp := c.query(t, "t-bob", `mutation R($stars: Int!) { submitReview(input: {restaurantId: "r2", stars: $stars, text: "fresh"}) { id user stars text } }`, map[string]any{"stars": 4})
		require.Empty(t, resp.Errors)
		assert.JSONEq(t, `{"submitReview":{"id":"rev1","user":"bob","stars":4,"text":"fresh"}}`, string(resp.Data))

		resp = c.query(t, "t-bob", `mutation { submitReview(input: {restaurantId: "r2", stars: 9, text: "!!"}) { id } }`, nil)
		e := resp.ErrorAt("submitReview")
		assert.Equal(t, gateway.CodeBadRequest, e.Code(), "stars out of range is the client's mistake")
		assert.Equal(t, "stars must be 1 to 5, got 9", e.Message, "the gateway's own rule, in its own words")
		assert.EqualValues(t, 1, s.reviews.calls.Load(), "a bad review never reaches the store")
	})
}

func TestNullPropagatesToNearestNullableParent(t *testing.T) {
	s := newSystem()
	s.menu.restaurantsErr = fmt.Errorf("menu: %w", fooddelivery.ErrOverloaded)
	serve(t, s.deps(), func(t *testing.T, c *client) {
		// home.restaurants is [Restaurant!]! and home is Home!: the failure
		// nulls the whole of data, with one error at the field that failed.
		resp := c.query(t, "", homeQuery, nil)
		assert.JSONEq(t, `null`, string(resp.Data))
		require.Len(t, resp.Errors, 1, "one failure, one error: %+v", resp.Errors)
		assert.Equal(t, gateway.CodeOverloaded, resp.ErrorAt("home", "restaurants").Code())

		// restaurant(id) is nullable: it stops the propagation there.
		resp = c.query(t, "", `{ a: restaurant(id: "r1") { name } b: __typename }`, nil)
		assert.JSONEq(t, `{"a":null,"b":"Query"}`, string(resp.Data))
	})
}

func TestResolverPanicBecomesFieldError(t *testing.T) {
	s := newSystem()
	s.eta.panicOn = "r2"
	s.menu.menuPanic = "r3"
	serve(t, s.deps(), func(t *testing.T, c *client) {
		resp := c.query(t, "", `{ restaurants { id eta menu { id } } }`, nil)
		var got struct{ Restaurants []restaurantJSON }
		require.NoError(t, resp.Decode(&got))
		require.Len(t, got.Restaurants, 3)
		assert.Nil(t, got.Restaurants[1].ETA, "the panicking field is null")
		assert.NotNil(t, got.Restaurants[0].ETA, "the other fields are intact")
		assert.NotNil(t, got.Restaurants[1].Menu)
		e := resp.ErrorAt("restaurants", 1, "eta")
		require.NotNil(t, e, "errors: %+v", resp.Errors)
		assert.Equal(t, gateway.CodeInternal, e.Code())
		assert.NotContains(t, e.Message, "eta client bug", "a panic's value is internal and stays off the wire")
		assert.Equal(t, gateway.CodeInternal, resp.ErrorAt("restaurants", 2, "menu").Code())

		resp = c.query(t, "", `{ restaurants { id } }`, nil)
		assert.Empty(t, resp.Errors, "the gateway keeps serving after a panic")
	})
}

func TestRequestIDAssignedAndEchoed(t *testing.T) {
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		status, _, hdr := c.raw(t, http.MethodPost, "application/json", `{"query":"{ restaurants { id } }"}`)
		require.Equal(t, http.StatusOK, status)
		assigned := hdr.Get(fooddelivery.HeaderRequestID)
		assert.True(t, strings.HasPrefix(assigned, "req-"), "the gateway assigns a request id when the client sent none, got %q", assigned)

		req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(`{"query":"{ restaurants { id } }"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(fooddelivery.HeaderRequestID, "client-42")
		resp, err := c.hc.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, "client-42", resp.Header.Get(fooddelivery.HeaderRequestID), "the client's request id is echoed")
		assert.Equal(t, []string{assigned, "client-42"}, s.menu.requestIDs, "dependencies see the request id on their context")
	})
}

func TestQueryLanguageFeatures(t *testing.T) {
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		const q = `
query Ignored { restaurants { id } }
query Picked($withMenu: Boolean!, $noEta: Boolean = true) {
  first: restaurant(id: "r1") {
    __typename
    ...Basics
    ... on Restaurant { cuisine }
    menu @include(if: $withMenu) { name }
    eta @skip(if: $noEta)
  }
  second: restaurant(id: "r2") { ... { name } name }
}
fragment Basics on Restaurant { name id }`
		resp, status, err := gateway.DoRequest(context.Background(), c.hc, c.url, "",
			gateway.Request{Query: q, OperationName: "Picked", Variables: map[string]any{"withMenu": false}})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
		require.Empty(t, resp.Errors)
		assert.Equal(t,
			`{"first":{"__typename":"Restaurant","name":"Pasta Place","id":"r1","cuisine":"italian"},"second":{"name":"Sushi Go"}}`,
			string(resp.Data), "keys follow the query: aliases, fragments in place, skipped fields absent, duplicates merged")
		assert.Zero(t, s.menu.menuCalls.Load(), "@include(if: false) must not read the menu")
		assert.Zero(t, s.eta.calls.Load(), "@skip(if: true) must not read the ETA")
	})
}

func TestHealthz(t *testing.T) {
	serve(t, newSystem().deps(), func(t *testing.T, c *client) {
		resp, err := c.hc.Get(strings.TrimSuffix(c.url, "/graphql") + "/healthz")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	})
}

func TestErrorCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{fmt.Errorf("x: %w", fooddelivery.ErrTimeout), gateway.CodeTimeout},
		{context.DeadlineExceeded, gateway.CodeTimeout},
		{fmt.Errorf("x: %w", fooddelivery.ErrUnavailable), gateway.CodeUnavailable},
		{fmt.Errorf("x: %w: %w", fooddelivery.ErrUnavailable, fooddelivery.ErrOverloaded), gateway.CodeOverloaded},
		{fmt.Errorf("x: %w", fooddelivery.ErrNotFound), gateway.CodeNotFound},
		{fmt.Errorf("x: %w", fooddelivery.ErrUnauthorized), gateway.CodeUnauthenticated},
		{fmt.Errorf("x: %w", fooddelivery.ErrRejected), gateway.CodeBadRequest},
		{context.Canceled, gateway.CodeCancelled},
		{errors.New("boom"), gateway.CodeInternal},
	} {
		assert.Equal(t, tc.want, gateway.ErrorCode(tc.err), "ErrorCode(%v)", tc.err)
	}
}
