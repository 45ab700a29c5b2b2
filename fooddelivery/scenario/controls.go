package scenario

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/loadgen"
)

// Errors of Controls, besides those of package faults (ErrInvalid,
// ErrUnknownTarget, ErrNoNetwork) and package loadgen (ErrInvalid), which
// its methods pass on wrapped.
var (
	// ErrNoRule: there is no fault rule for the service and route given.
	ErrNoRule = errors.New("scenario: no such fault rule")
	// ErrNotWired: the running system has no load generator or no
	// game-day switch (the Controls field is nil).
	ErrNotWired = errors.New("scenario: not wired into this system")
	// ErrUnknownFeature: a game-day feature that
	// fooddelivery.AllFeatures does not list.
	ErrUnknownFeature = errors.New("scenario: no such game-day feature")
)

// Controls are the levers of a running system: its fault rules, its load
// generator and lab 07's game-day switch. Every change goes through one of
// its methods, which applies it and records it in Log, so the admin API
// and the scenarios change the system the same way and leave the same
// trace. The by argument says who made the change (see Change.By).
//
// Faults is required; Load and GameDay may be nil (their methods then
// return ErrNotWired); a nil Log records nothing. Methods are safe for
// concurrent use.
type Controls struct {
	Faults  *faults.Injector
	Load    *loadgen.Generator
	GameDay *fooddelivery.GameDay
	Log     *Log
	// Check, when set, compares what customers were told with what the
	// system stored and returns its findings in one line
	// (checker.Report.String); the Runner calls it when a scenario with
	// Scenario.Check ends. It must bound its own time by ctx.
	Check func(ctx context.Context) (string, error)
}

// AddFault parses spec in the -fault flag syntax (faults.Parse) and sets
// the rule, replacing any rule for the same service and route. The errors
// are those of faults.Parse and faults.Injector.Set.
func (c *Controls) AddFault(by, spec string) (faults.Rule, error) {
	r, err := faults.Parse(spec)
	if err != nil {
		return faults.Rule{}, err
	}
	return r, c.SetFault(by, r)
}

// SetFault sets rule r (faults.Injector.Set), replacing any rule for the
// same service and route, and logs it.
func (c *Controls) SetFault(by string, r faults.Rule) error {
	old, had := c.rule(r.Service, r.Route)
	if err := c.Faults.Set(r.Service, r.Route, r.Fault); err != nil {
		return err
	}
	desc := "fault set: " + r.String()
	if had {
		desc = "fault replaced: " + old.String() + " -> " + r.String()
	}
	c.Log.Add(KindFaultSet, by, desc)
	return nil
}

// RemoveFault removes the rule for service and route (route "" is the
// rule for every route) and returns it, or returns an error wrapping
// ErrNoRule that lists the rules there are.
func (c *Controls) RemoveFault(by, service, route string) (faults.Rule, error) {
	r, ok := c.Faults.Remove(service, route)
	if !ok {
		var specs []string
		for _, r := range c.Faults.List() {
			specs = append(specs, r.String())
		}
		there := "there are no rules"
		if len(specs) > 0 {
			there = "the rules are " + strings.Join(specs, "; ")
		}
		return faults.Rule{}, fmt.Errorf("%w for %s; %s", ErrNoRule, target(service, route), there)
	}
	c.Log.Add(KindFaultRemoved, by, "fault removed: "+r.String())
	return r, nil
}

// ClearFaults removes every rule, logging each, and returns how many there
// were.
func (c *Controls) ClearFaults(by string) int {
	n := 0
	for _, r := range c.Faults.List() {
		if _, err := c.RemoveFault(by, r.Service, r.Route); err == nil {
			n++
		}
	}
	return n
}

// rule returns the rule set for exactly service and route.
func (c *Controls) rule(service, route string) (faults.Rule, bool) {
	for _, r := range c.Faults.List() {
		if r.Service == service && r.Route == route {
			return r, true
		}
	}
	return faults.Rule{}, false
}

// SetRate sets the load generator's rate in requests per second (0
// pauses it) and logs the change. Errors wrap loadgen.ErrInvalid or
// ErrNotWired.
func (c *Controls) SetRate(by string, rate int) error {
	if c.Load == nil {
		return fmt.Errorf("%w: this system runs no load generator", ErrNotWired)
	}
	old := c.Load.Rate()
	if err := c.Load.SetRate(rate); err != nil {
		return err
	}
	c.Log.Add(KindLoad, by, fmt.Sprintf("load rate %d -> %d requests per second", old, rate))
	return nil
}

// SetMix sets the load generator's mix and logs the change. Errors wrap
// loadgen.ErrInvalid or ErrNotWired.
func (c *Controls) SetMix(by string, mix loadgen.Mix) error {
	if c.Load == nil {
		return fmt.Errorf("%w: this system runs no load generator", ErrNotWired)
	}
	old := c.Load.Mix()
	if err := c.Load.SetMix(mix); err != nil {
		return err
	}
	c.Log.Add(KindLoad, by, "load mix "+mixString(old)+" -> "+mixString(mix))
	return nil
}

// mixString writes a mix in the order of loadgen.Actions, without zero
// weights: "menu 30, checkout 15".
func mixString(m loadgen.Mix) string {
	var parts []string
	for _, a := range loadgen.Actions() {
		if m[a] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", a, m[a]))
		}
	}
	return strings.Join(parts, ", ")
}

// GameDayState returns, for every feature of fooddelivery.AllFeatures,
// whether the game-day switch forces it onto its fallback. Without a
// switch it returns an error wrapping ErrNotWired.
func (c *Controls) GameDayState() (map[string]bool, error) {
	if c.GameDay == nil {
		return nil, fmt.Errorf("%w: this system has no game-day switch (lab 07's fallbacks are not running)", ErrNotWired)
	}
	out := map[string]bool{}
	for _, f := range fooddelivery.AllFeatures() {
		out[f] = c.GameDay.Forced(f)
	}
	return out, nil
}

// SetGameDay sets the whole game-day switch: the features mapped to true
// are forced onto their fallbacks, every other feature is released. A
// feature fooddelivery.AllFeatures does not list returns an error
// wrapping ErrUnknownFeature and changes nothing; without a switch the
// error wraps ErrNotWired.
func (c *Controls) SetGameDay(by string, forced map[string]bool) error {
	if c.GameDay == nil {
		return fmt.Errorf("%w: this system has no game-day switch (lab 07's fallbacks are not running)", ErrNotWired)
	}
	all := fooddelivery.AllFeatures()
	var on []string
	for _, f := range slices.Sorted(maps.Keys(forced)) {
		if !slices.Contains(all, f) {
			return fmt.Errorf("%w %s; the features are %s", ErrUnknownFeature, fooddelivery.Quote(f), strings.Join(all, ", "))
		}
	}
	for _, f := range all {
		if forced[f] {
			on = append(on, f)
		}
	}
	c.GameDay.Release()
	c.GameDay.Force(on...)
	desc := "game day: nothing forced"
	if len(on) > 0 {
		desc = "game day: " + strings.Join(on, ", ") + " forced onto the fallback"
	}
	c.Log.Add(KindGameDay, by, desc)
	return nil
}

func target(service, route string) string {
	if route == "" {
		return service + " (all routes)"
	}
	return service + ":" + route
}
