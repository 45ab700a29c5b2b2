// Package fallback is lab 07 of the workshop: when the menu service, the
// courier service or recommendations fail, the gateway fails the whole home
// page with them, and when auth is down it lets everyone in. Read
// README.md, then make `go test ./labs/07-fallback/` pass by editing this
// file (the reads) and writes.go (the writes).
package fallback

import (
	"context"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/gateway"
)

// How long the gateway should wait for one call before it gives up and
// falls back. A dependency that hangs is not an error until you bound the
// wait (lab 01): use these with context.WithTimeout.
const (
	ReadBudget     = 300 * time.Millisecond // restaurants, a menu, an ETA, recommendations
	AuthBudget     = 300 * time.Millisecond // the auth check
	CheckoutBudget = 2 * time.Second        // placing an order: menu, payment and courier behind it
	WriteBudget    = time.Second            // storing one review
)

// DefaultETA is the delivery estimate to show when the courier service
// cannot give a live one: 30-45 minutes, marked as an estimate.
var DefaultETA = fooddelivery.ETA{Min: 30 * time.Minute, Max: 45 * time.Minute, Estimated: true}

// Wrap returns the gateway's dependencies d with a fallback around each,
// and a stop function the system calls when it shuts down. While gameDay
// forces a feature (fooddelivery.FeatureMenu, ...), that feature's wrapper
// must answer from its fallback without calling the dependency. A nil
// gameDay forces nothing.
//
// A wrapper that answers from a fallback returns the value together with a
// *gateway.FallbackError (Code gateway.CodeStale, CodeEstimated, ...): the
// gateway serves the value and reports the error on that field.
func Wrap(d gateway.Deps, gameDay *fooddelivery.GameDay) (gateway.Deps, func()) {
	d.Menu = &menuCache{next: d.Menu, gameDay: gameDay}
	d.ETA = etaDefault{next: d.ETA, gameDay: gameDay}
	d.Recs = &popularRecs{next: d.Recs, gameDay: gameDay}
	d.Orders = checkout{next: d.Orders, gameDay: gameDay}
	d.Auth = authorizer{next: d.Auth, gameDay: gameDay}
	reviews := newReviewQueue(d.Reviews, gameDay)
	d.Reviews = reviews
	return d, reviews.stop
}

// menuCache reads restaurants and menus from the menu service.
//
// TODO(step 1): remember the last restaurant list and menus the service
// gave, and when it cannot answer, serve them marked stale (Menu.Stale)
// instead of failing. Never serve what you never saw.
// TODO(step 7): return a *gateway.FallbackError with the stale value.
// TODO(step 8): while gameDay forces fooddelivery.FeatureMenu, do not call.
type menuCache struct {
	next    fooddelivery.MenuReader
	gameDay *fooddelivery.GameDay
}

func (c *menuCache) Restaurants(ctx context.Context) ([]fooddelivery.Restaurant, error) {
	return c.next.Restaurants(ctx)
}

func (c *menuCache) Menu(ctx context.Context, restaurantID string) (fooddelivery.Menu, error) {
	return c.next.Menu(ctx, restaurantID)
}

// etaDefault reads delivery estimates from the courier service.
//
// TODO(step 2): when the courier service is down or slow, answer
// DefaultETA for the restaurant instead.
type etaDefault struct {
	next    fooddelivery.ETAReader
	gameDay *fooddelivery.GameDay
}

func (e etaDefault) ETA(ctx context.Context, restaurantID string) (fooddelivery.ETA, error) {
	return e.next.ETA(ctx, restaurantID)
}

// popularRecs reads recommendations and popular dishes from the menu
// service.
//
// TODO(step 3): when personal recommendations fail, serve popular dishes,
// without asking the menu service for them (it may be what failed).
// Popular reads the menu service too: bound it, and when it fails serve
// the last popular list it read.
type popularRecs struct {
	next    fooddelivery.Recommender
	gameDay *fooddelivery.GameDay
}

func (r *popularRecs) Popular(ctx context.Context) ([]fooddelivery.Dish, error) {
	return r.next.Popular(ctx)
}

func (r *popularRecs) Recommendations(ctx context.Context, user string) ([]fooddelivery.Dish, error) {
	return r.next.Recommendations(ctx, user)
}
