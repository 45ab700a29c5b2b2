package fooddelivery

import "context"

// The interfaces below are the integration points between services: each
// service takes its dependencies as these interfaces, the HTTP clients in
// the service packages implement them, and a lab plugs its pattern in by
// wrapping or replacing one of them. Errors wrap the sentinels of this
// package (ErrTimeout, ErrUnavailable, ErrOverloaded, ErrRejected,
// ErrNotFound, ErrUnauthorized).

// MenuReader reads restaurants and menus (the menu service).
type MenuReader interface {
	Restaurants(ctx context.Context) ([]Restaurant, error)
	Menu(ctx context.Context, restaurantID string) (Menu, error)
}

// Recommender reads personal recommendations and the popular-dishes list
// (the menu service).
type Recommender interface {
	Recommendations(ctx context.Context, user string) ([]Dish, error)
	Popular(ctx context.Context) ([]Dish, error)
}

// ReviewStore stores reviews (the menu service's review store).
type ReviewStore interface {
	SubmitReview(ctx context.Context, r Review) (Review, error)
}

// OrderService places and reads orders (the order service).
type OrderService interface {
	PlaceOrder(ctx context.Context, user string, in PlaceOrderInput) (Order, error)
	Order(ctx context.Context, id string) (Order, error)
}

// Payer charges cards (the payment service).
type Payer interface {
	Charge(ctx context.Context, req ChargeRequest) (Charge, error)
}

// ETAReader estimates delivery times (the courier service).
type ETAReader interface {
	ETA(ctx context.Context, restaurantID string) (ETA, error)
}

// CourierAssigner assigns a courier to an order (the courier service).
type CourierAssigner interface {
	Assign(ctx context.Context, orderID, restaurantID string) (Assignment, error)
}

// Authorizer checks a bearer token and returns the user it belongs to (the
// auth check the gateway calls). It returns an error wrapping
// ErrUnauthorized for a bad token; any other error means the check could
// not be made, and the caller must deny (fail closed).
type Authorizer interface {
	Authorize(ctx context.Context, token string) (user string, err error)
}
