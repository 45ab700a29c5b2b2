package fooddelivery

import "time"

// Domain types shared by the services and their clients. JSON field names
// are the wire format of the internal HTTP APIs.

// Restaurant is a place that cooks; its menu lives in the menu service.
type Restaurant struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Cuisine string `json:"cuisine"`
}

// Dish is one item on a restaurant's menu. Prices are in cents.
type Dish struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	PriceCents int    `json:"priceCents"`
}

// Menu is a restaurant's list of dishes. Stale is true when the menu was
// served from a cache instead of the menu service (lab 07).
type Menu struct {
	RestaurantID string `json:"restaurantId"`
	Dishes       []Dish `json:"dishes"`
	Stale        bool   `json:"stale,omitempty"`
}

// OrderItem is one line of an order.
type OrderItem struct {
	DishID   string `json:"dishId"`
	Quantity int    `json:"quantity"`
}

// PlaceOrderInput is what a customer asks for.
type PlaceOrderInput struct {
	RestaurantID string      `json:"restaurantId"`
	Items        []OrderItem `json:"items"`
	// Card is a token for the customer's card. The payment service charges
	// the test tokens that payment.TestCards lists ("tok_visa",
	// "tok_mastercard"), always declines "tok_declined" and refuses any
	// other token as unknown.
	Card string `json:"card"`
}

// Order statuses.
const (
	OrderPlaced    = "PLACED" // charged and handed to a courier
	OrderPaymentKO = "PAYMENT_FAILED"
)

// Order is a placed order.
type Order struct {
	ID           string      `json:"id"`
	User         string      `json:"user"`
	RestaurantID string      `json:"restaurantId"`
	Items        []OrderItem `json:"items"`
	TotalCents   int         `json:"totalCents"`
	Status       string      `json:"status"`
	ChargeID     string      `json:"chargeId,omitempty"`
	CourierID    string      `json:"courierId,omitempty"`
}

// ChargeRequest asks the payment service to charge a card.
type ChargeRequest struct {
	OrderID     string `json:"orderId"`
	AmountCents int    `json:"amountCents"`
	Card        string `json:"card"`
}

// Charge is the payment service's record of one executed charge.
type Charge struct {
	ID          string `json:"id"`
	OrderID     string `json:"orderId"`
	AmountCents int    `json:"amountCents"`
	Status      string `json:"status"` // "succeeded" or "declined"
}

// ETA is a delivery estimate. Estimated is true when it is a default
// instead of a live estimate from the courier service (lab 07).
type ETA struct {
	RestaurantID string        `json:"restaurantId"`
	Min          time.Duration `json:"minNs"`
	Max          time.Duration `json:"maxNs"`
	Estimated    bool          `json:"estimated,omitempty"`
}

// Review is a customer's review of a restaurant.
type Review struct {
	ID           string `json:"id"`
	RestaurantID string `json:"restaurantId"`
	User         string `json:"user"`
	Stars        int    `json:"stars"`
	Text         string `json:"text"`
}

// Assignment is a courier assigned to an order on the dispatch board.
type Assignment struct {
	OrderID   string `json:"orderId"`
	CourierID string `json:"courierId"`
}
