package main

import (
	"slices"
	"strings"

	"github.com/gophereats/resilience/fooddelivery"
	gameplan "github.com/gophereats/resilience/fooddelivery/plan"
	"github.com/gophereats/resilience/internal/compose"
	"github.com/gophereats/resilience/internal/gameday"
	lab10 "github.com/gophereats/resilience/solutions/10-game-day"
)

// plans are the game-day plans -plan may name: lab 10's reference, and
// the learner's labs/10-game-day plan when learner10.go is built in.
var plans = map[string]func() gameplan.Plan{
	"reference": lab10.Plan,
}

// planNames lists the names -plan takes, sorted.
func planNames() []string {
	names := []string{"learner"}
	for name := range plans {
		if name != "learner" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// lookupPlan returns the plan -plan names, checked (plan.Plan.Check).
func lookupPlan(name string) (gameplan.Plan, error) {
	build, ok := plans[name]
	if !ok && name == "learner" {
		return gameplan.Plan{}, usagef("-plan learner runs your labs/10-game-day plan, which this build leaves out; start it with: go run ./cmd/workshop live 10")
	}
	if !ok {
		return gameplan.Plan{}, usagef("-plan %s: no such plan; the plans are %s", fooddelivery.Quote(name), strings.Join(planNames(), ", "))
	}
	p := build()
	if err := gameday.CheckPlan(p); err != nil {
		return gameplan.Plan{}, usagef("-plan %s: %v", name, err)
	}
	return p, nil
}

// planLabs is what a game-day plan runs at each lab's integration point,
// as the banner lists it: the labs the plan turns on, as learner where
// this build has the learner's code.
func planLabs(p gameplan.Plan) plan {
	l := compose.FromPlan(p, true)
	var out plan
	out.choice = l.Choice
	out.retrier = l.Retrier
	out.fromPlan = true
	for n := 1; n <= 9; n++ {
		out.named[n] = l.Choice[n] != off
	}
	return out
}

// wire builds the system's configuration from the options: the -lab
// choices with each lab's README settings, or the -plan plan. logger
// receives the breakers' state changes (nil: slog.Default()).
func (o options) wire(settings func(*compose.Settings)) *compose.Wiring {
	s := compose.Settings{Seed: o.seed, Fast: o.fast, Plan: gameplan.Labs(o.fast)}
	labs := o.plan.labs()
	if o.game != "" {
		s.Plan = o.gamePlan
		labs = compose.FromPlan(o.gamePlan, true)
	}
	if settings != nil {
		settings(&s)
	}
	return compose.Wire(labs, s)
}
