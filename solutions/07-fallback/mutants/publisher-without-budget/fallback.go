// Mutant: the publisher waits on the review store without WriteBudget, so one attempt against a hanging store holds every deferred review for 30 s. Caught by step 4.
// (This file is unchanged from the solution; the mutant is in the other file.)
// Package fallback is the reference solution of lab 07: the gateway's
// dependencies wrapped so that each failure has a planned answer. Reads
// (this file) serve the last known menu, a default ETA and popular dishes;
// writes (writes.go) defer reviews, fail checkouts fast and clearly, and
// deny when auth is down. See NOTES.md for the trade-offs.
package fallback

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/gateway"
)

// How long the gateway waits for one call before it gives up and falls
// back. A home page fans out to about 15 calls in two rounds; with
// ReadBudget per round it renders within a second even when every read
// falls back.
const (
	ReadBudget     = 300 * time.Millisecond // restaurants, a menu, an ETA, recommendations
	AuthBudget     = 300 * time.Millisecond // the auth check
	CheckoutBudget = 2 * time.Second        // placing an order: menu, payment and courier behind it
	WriteBudget    = time.Second            // storing one review
)

// DefaultETA is the delivery estimate shown when the courier service cannot
// give a live one: 30-45 minutes, marked as an estimate.
var DefaultETA = fooddelivery.ETA{Min: 30 * time.Minute, Max: 45 * time.Minute, Estimated: true}

// Wrap returns d with a fallback around each of the gateway's dependencies,
// and a stop function that ends the background publisher of deferred
// reviews (reviews still deferred then are lost). While gameDay forces a
// feature (fooddelivery.FeatureMenu, ...), its wrapper answers from its
// fallback without calling the dependency. A nil gameDay forces nothing.
func Wrap(d gateway.Deps, gameDay *fooddelivery.GameDay) (gateway.Deps, func()) {
	d.Menu = &menuCache{next: d.Menu, gameDay: gameDay, menus: map[string]fooddelivery.Menu{}}
	d.ETA = etaDefault{next: d.ETA, gameDay: gameDay}
	d.Recs = &popularRecs{next: d.Recs, gameDay: gameDay}
	d.Orders = checkout{next: d.Orders, gameDay: gameDay}
	d.Auth = failClosed{next: d.Auth, gameDay: gameDay}
	reviews := newReviewQueue(d.Reviews, gameDay)
	d.Reviews = reviews
	return d, reviews.stop
}

// call runs fn with ctx bounded by budget, unless gameDay forces feature:
// then it returns fooddelivery.ErrForced without calling fn.
func call[T any](ctx context.Context, gameDay *fooddelivery.GameDay, feature string, budget time.Duration,
	fn func(context.Context) (T, error)) (T, error) {
	if gameDay.Forced(feature) {
		var zero T
		return zero, fooddelivery.ErrForced
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel() // the clients read the whole body before they return
	return fn(ctx)
}

// fallBack reports whether err, from a call made for a caller whose context
// is ctx, is a fallback's cue: the game day forced it, or the dependency
// could not answer. A caller that left needs no answer, and a dependency's
// own verdict (not found, rejected, declined) is not an outage.
func fallBack(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	for _, cue := range []error{fooddelivery.ErrForced, fooddelivery.ErrTimeout, fooddelivery.ErrUnavailable,
		fooddelivery.ErrOverloaded, fooddelivery.ErrCircuitOpen, fooddelivery.ErrBulkheadFull} {
		if errors.Is(err, cue) {
			return true
		}
	}
	return false
}

// menuCache remembers the last restaurant list and menus the menu service
// gave, in the gateway's memory, and serves them marked stale when the
// service cannot answer. It never serves what it never saw.
type menuCache struct {
	next        fooddelivery.MenuReader
	gameDay     *fooddelivery.GameDay
	mu          sync.Mutex
	restaurants []fooddelivery.Restaurant
	menus       map[string]fooddelivery.Menu
}

func stale(what string, err error) error {
	return &gateway.FallbackError{Code: gateway.CodeStale, Err: err,
		Message: what + " may be out of date (the menu service did not answer); prices are confirmed at checkout"}
}

func (c *menuCache) Restaurants(ctx context.Context) ([]fooddelivery.Restaurant, error) {
	list, err := call(ctx, c.gameDay, fooddelivery.FeatureMenu, ReadBudget, c.next.Restaurants)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.restaurants = slices.Clone(list)
		return list, nil
	}
	if !fallBack(ctx, err) || c.restaurants == nil {
		return nil, err
	}
	return slices.Clone(c.restaurants), stale("the restaurant list", err)
}

func (c *menuCache) Menu(ctx context.Context, restaurantID string) (fooddelivery.Menu, error) {
	m, err := call(ctx, c.gameDay, fooddelivery.FeatureMenu, ReadBudget,
		func(ctx context.Context) (fooddelivery.Menu, error) { return c.next.Menu(ctx, restaurantID) })
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.menus[restaurantID] = fooddelivery.Menu{RestaurantID: m.RestaurantID, Dishes: slices.Clone(m.Dishes)}
		return m, nil
	}
	last, ok := c.menus[restaurantID]
	if !fallBack(ctx, err) || !ok {
		return fooddelivery.Menu{}, err
	}
	last.Dishes, last.Stale = slices.Clone(last.Dishes), true
	return last, stale("this menu", err)
}

// etaDefault answers DefaultETA when the courier service cannot.
type etaDefault struct {
	next    fooddelivery.ETAReader
	gameDay *fooddelivery.GameDay
}

func (e etaDefault) ETA(ctx context.Context, restaurantID string) (fooddelivery.ETA, error) {
	eta, err := call(ctx, e.gameDay, fooddelivery.FeatureETA, ReadBudget,
		func(ctx context.Context) (fooddelivery.ETA, error) { return e.next.ETA(ctx, restaurantID) })
	if !fallBack(ctx, err) {
		return eta, err
	}
	eta = DefaultETA
	eta.RestaurantID = restaurantID
	return eta, &gateway.FallbackError{Code: gateway.CodeEstimated, Err: err,
		Message: "no live delivery estimate right now; 30-45 min is typical"}
}

// popularRecs keeps the last popular-dishes list it saw and serves it in
// place of personal recommendations (and of the popular list itself) when
// the menu service cannot answer: the fallback never calls it.
type popularRecs struct {
	next    fooddelivery.Recommender
	gameDay *fooddelivery.GameDay
	mu      sync.Mutex
	popular []fooddelivery.Dish
}

func (r *popularRecs) Popular(ctx context.Context) ([]fooddelivery.Dish, error) {
	list, err := call(ctx, r.gameDay, fooddelivery.FeatureRecommendations, ReadBudget, r.next.Popular)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.popular = slices.Clone(list)
		return list, nil
	}
	if !fallBack(ctx, err) || r.popular == nil {
		return nil, err
	}
	return slices.Clone(r.popular), &gateway.FallbackError{Code: gateway.CodeStale, Err: err,
		Message: "popular dishes as of a little while ago"}
}

func (r *popularRecs) Recommendations(ctx context.Context, user string) ([]fooddelivery.Dish, error) {
	picks, err := call(ctx, r.gameDay, fooddelivery.FeatureRecommendations, ReadBudget,
		func(ctx context.Context) ([]fooddelivery.Dish, error) { return r.next.Recommendations(ctx, user) })
	if !fallBack(ctx, err) {
		return picks, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.popular == nil {
		return nil, err
	}
	return slices.Clone(r.popular), &gateway.FallbackError{Code: gateway.CodeDegraded, Err: err,
		Message: "personal recommendations are unavailable; showing popular dishes"}
}
