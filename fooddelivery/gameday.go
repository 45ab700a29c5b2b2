package fooddelivery

import (
	"errors"
	"sync"
)

// ErrForced is the failure a fallback reports when a GameDay forced it:
// the dependency was not called at all.
var ErrForced = errors.New("forced onto its fallback by the game-day switch")

// Features of the gateway that have a fallback (lab 07), as named to a
// GameDay switch.
const (
	FeatureMenu            = "menu"            // restaurants and menus: the last known ones
	FeatureETA             = "eta"             // delivery estimates: a default
	FeatureRecommendations = "recommendations" // personal picks: popular dishes
	FeatureReviews         = "reviews"         // submitting a review: deferred
	FeatureCheckout        = "checkout"        // placing an order: a fast, clear "not charged"
	FeatureAuth            = "auth"            // the auth check: deny (fail closed)
)

// AllFeatures lists every feature a GameDay can force, in the order above.
func AllFeatures() []string {
	return []string{FeatureMenu, FeatureETA, FeatureRecommendations, FeatureReviews, FeatureCheckout, FeatureAuth}
}

// GameDay is a game-day switch: while a feature is forced, the code that
// protects it must answer from its fallback without calling the
// dependency, exactly as if the dependency were down. It lets a team run
// every fallback path on purpose, on a healthy system, instead of meeting
// it for the first time during an incident.
//
// The zero value forces nothing and is ready to use. A nil *GameDay forces
// nothing (Forced reports false), but Force and Release need a real one.
// It is safe for concurrent use.
//
//	gd := &fooddelivery.GameDay{}
//	gd.Force(fooddelivery.FeatureMenu, fooddelivery.FeatureETA)
//	...
//	gd.Release() // everything back to normal
type GameDay struct {
	mu     sync.RWMutex
	forced map[string]bool
}

// Force forces the named features onto their fallbacks until Release.
func (g *GameDay) Force(features ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.forced == nil {
		g.forced = map[string]bool{}
	}
	for _, f := range features {
		g.forced[f] = true
	}
}

// Release ends forcing the named features; with no argument, every
// feature.
func (g *GameDay) Release(features ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(features) == 0 {
		clear(g.forced)
	}
	for _, f := range features {
		delete(g.forced, f)
	}
}

// Forced reports whether feature is forced onto its fallback. A nil
// *GameDay forces nothing.
func (g *GameDay) Forced(feature string) bool {
	if g == nil {
		return false
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.forced[feature]
}
