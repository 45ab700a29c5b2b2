package labtest

import (
	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/system"
)

// PizzaCard is the card the standard test order pays with: a test token
// the payment service always charges (see fooddelivery.PlaceOrderInput).
const PizzaCard = "tok_visa"

// PizzaOrder returns the standard order of the lab tests: two margheritas
// (system.SampleDish, quantity 2) from Luigi's (system.SampleRestaurant),
// paid with PizzaCard. Its total is twice the margherita's price in cents.
// Each call returns a new value, so a test may change its copy.
//
// Use it where a lab calls the order service (sys.Orders().PlaceOrder) or
// posts POST /orders itself; PizzaOrderJSON is the same order for the
// gateway's GraphQL API.
func PizzaOrder() fooddelivery.PlaceOrderInput {
	return fooddelivery.PlaceOrderInput{
		RestaurantID: system.SampleRestaurant,
		Items:        []fooddelivery.OrderItem{{DishID: system.SampleDish, Quantity: 2}},
		Card:         PizzaCard,
	}
}

// PizzaOrderJSON returns the standard order (PizzaOrder) paid with card,
// as the JSON object the gateway's placeOrder mutation takes for its
// PlaceOrderInput variable: {"restaurantId", "items": [{"dishId",
// "quantity"}], "card"}. Put it under the variable's name, for example
// map[string]any{"input": labtest.PizzaOrderJSON(labtest.PizzaCard)}.
func PizzaOrderJSON(card string) map[string]any {
	return map[string]any{
		"restaurantId": system.SampleRestaurant,
		"items":        []any{map[string]any{"dishId": system.SampleDish, "quantity": 2}},
		"card":         card,
	}
}
