// Package scenario scripts incidents on the running food-delivery system:
// each Scenario is a named timeline of steps (at 5 s, make payment fail;
// at 65 s, let it recover; ...) that a Runner plays, one scenario at a
// time, with its durations scaled for fast demos and tests.
//
// Every change, whether a scenario's step or a request to the admin API,
// goes through Controls, which applies it to the fault injector, the load
// generator (package loadgen) or lab 07's game-day switch and records it
// in a bounded change Log:
//
//	log := scenario.NewLog(0)
//	ctl := &scenario.Controls{Faults: sys.Faults, Load: gen, GameDay: gd, Log: log}
//	run, err := scenario.NewRunner(ctl, 1)
//	err = run.Start("payment-down")
//	...
//	run.Stop() // puts back what the scenario changed
//
// All waiting goes through package time, so a Runner plays its timeline
// under testing/synctest's fake clock as well as on the real clock.
package scenario

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/loadgen"
)

// Scenario is a scripted incident.
type Scenario struct {
	// Name identifies it in the admin API ("payment-down").
	Name string
	// Description tells, in a sentence or two, what happens and what to
	// watch.
	Description string
	// Steps are applied in order, each at its At offset from the start.
	// The scenario ends with its last step.
	Steps []Step
	// Follow, when set, follows every playing of the scenario and
	// reports on it in the Runner's Status (the game day's score card).
	Follow Follower
	// Processes says that the scenario needs each service in its own
	// process (cmd/fooddelivery -processes): it kills one.
	Processes bool
	// Check says that when the scenario ends (finished or stopped) the
	// Runner runs Controls.Check and logs what it found (KindCheck).
	Check bool
}

// Follower follows a scenario as a Runner plays it. The Runner calls
// Began when the scenario starts, Applied after it applied step i (from
// 0; steps at the same offset are applied one after another, each then
// reported), and Ended once it finished, was stopped or failed (state is
// one of the State constants), each from the Runner's goroutine, one
// call at a time. Report may be called at any time from any goroutine,
// for Status, with the Runner's lock held (so it must not call the
// Runner); its value must encode to JSON.
type Follower interface {
	Began()
	Applied(i int)
	Ended(state string)
	Report() any
}

// Step is one point of a scenario's timeline. It does any of its parts
// that are set, in this order: Clear, Fault, Load.
type Step struct {
	// At is when the step happens, from the start of the scenario,
	// before scaling.
	At time.Duration
	// Clear is a target "service" or "service:route" whose fault rule the
	// step removes, if there is one.
	Clear string
	// Fault is a rule in the -fault flag syntax (faults.Parse) that the
	// step sets.
	Fault string
	// Load, when set, changes the load generator. A scenario with such a
	// step needs a load generator (Controls.Load), unless the step only
	// raises the rate (AtLeast, no Mix): that one is skipped without one.
	Load *Load
	// Note says, for people, what the step means for the system
	// ("payment recovers").
	Note string
}

// Load is a step's change to the load generator.
type Load struct {
	// Rate is the rate to set, in requests per second; with AtLeast the
	// rate is only raised to it, never lowered. Zero with AtLeast leaves
	// the rate alone.
	Rate    int
	AtLeast bool
	// Mix, when not nil, replaces the mix.
	Mix loadgen.Mix
}

// optional reports whether l may be skipped because c has no load
// generator: a step that only raises the rate (AtLeast, no Mix) is there
// to make the incident visible, and a system without a generator gets its
// traffic from elsewhere.
func (l *Load) optional(c *Controls) bool {
	return c.Load == nil && l.AtLeast && l.Mix == nil
}

// Duration is the time from the start of s to its last step, before
// scaling.
func (s Scenario) Duration() time.Duration {
	if len(s.Steps) == 0 {
		return 0
	}
	return s.Steps[len(s.Steps)-1].At
}

// String describes the step: its note, then what it does.
func (st Step) String() string {
	var parts []string
	if st.Clear != "" {
		parts = append(parts, "clear the fault on "+st.Clear)
	}
	if st.Fault != "" {
		parts = append(parts, "set fault "+st.Fault)
	}
	if l := st.Load; l != nil {
		switch {
		case l.AtLeast && l.Rate > 0:
			parts = append(parts, fmt.Sprintf("load at least %d requests per second", l.Rate))
		case !l.AtLeast:
			parts = append(parts, fmt.Sprintf("load %d requests per second", l.Rate))
		}
		if l.Mix != nil {
			parts = append(parts, "mix "+mixString(l.Mix))
		}
	}
	does := strings.Join(parts, "; ")
	switch {
	case st.Note == "":
		return does
	case does == "":
		return st.Note
	}
	return st.Note + " (" + does + ")"
}

// baseline is the traffic every built-in scenario makes sure of, so that
// there is something to see: at least 20 requests per second.
var baseline = &Load{Rate: 20, AtLeast: true}

// Builtin returns the scenarios the workshop ships, by name:
//
//   - payment-down: payment answers 503 to every charge for 30 s, then
//     resets every connection for 30 s, then recovers.
//   - slow-menu-replica: menu-2 is slow (300-500 ms) with a long tail (5%
//     of its requests take 5 s) for two minutes.
//   - flaky-courier: the courier service answers 503 to half its requests
//     for two minutes.
//   - checkout-rush: checkouts surge to 250 per second for 30 s while
//     payment takes 800 ms, more than the order service's default
//     concurrency limit of 100 can hold.
//   - payment-crash (with cmd/fooddelivery -processes only): for one
//     minute payment's process is killed in the middle of one charge in
//     ten, after the charge is stored, and restarted; at its end the
//     checker (Controls.Check) counts double charges, lost paid orders
//     and reused ids.
//   - lost-payment-responses: for one minute payment charges the card
//     and then loses 30% of its answers.
//
// Each first raises the load to at least 20 requests per second, and
// ends 20 to 30 s after the incident, to show the recovery.
func Builtin() []Scenario {
	return []Scenario{
		{
			Name: "payment-down",
			Description: "Payment answers 503 to every charge for 30 s, then crashes on every request (connection reset) for 30 s, then recovers. " +
				"Watch checkouts fail while browsing keeps working, and how fast checkouts come back.",
			Steps: []Step{
				{At: 0, Load: baseline, Note: "customers browse and order"},
				{At: 5 * time.Second, Fault: "payment:POST /charges=error,status=503", Note: "payment fails every charge"},
				{At: 35 * time.Second, Clear: "payment:POST /charges", Fault: "payment=reset", Note: "payment goes down: every request's connection is reset"},
				{At: 65 * time.Second, Clear: "payment", Note: "payment recovers"},
				{At: 90 * time.Second, Note: "the scenario ends"},
			},
		},
		{
			Name: "slow-menu-replica",
			Description: "One of the three menu replicas, menu-2, turns slow for two minutes: 300-500 ms per request, and 5% of requests take 5 s. " +
				"Watch the home page and menus slow down for a third of the requests, and what timeouts or hedging do about it.",
			Steps: []Step{
				{At: 0, Load: baseline, Note: "customers browse and order"},
				{At: 5 * time.Second, Fault: "menu-2=tail,p=0.05,latency=5s,fixed=300ms,jitter=200ms", Note: "menu-2 turns slow, with a long tail"},
				{At: 125 * time.Second, Clear: "menu-2", Note: "menu-2 recovers"},
				{At: 150 * time.Second, Note: "the scenario ends"},
			},
		},
		{
			Name: "flaky-courier",
			Description: "The courier service answers 503 to half its requests for two minutes. " +
				"Watch delivery estimates go missing or fall back to a default, and what retries do to the courier's load.",
			Steps: []Step{
				{At: 0, Load: baseline, Note: "customers browse and order"},
				{At: 5 * time.Second, Fault: "courier=error,status=503,p=0.5", Note: "the courier service fails half its requests"},
				{At: 125 * time.Second, Clear: "courier", Note: "the courier service recovers"},
				{At: 150 * time.Second, Note: "the scenario ends"},
			},
		},
		{
			Name: "checkout-rush",
			Description: "A promotion: checkouts surge to 250 per second for 30 s while payment slows to 800 ms, so about 200 checkouts " +
				"are in flight at the order service, twice its default concurrency limit of 100. Watch the order service reject the excess " +
				"(OVERLOADED) and whether the rest of the system stays up.",
			Steps: []Step{
				{At: 0, Load: &Load{Rate: 40, Mix: loadgen.DefaultMix()}, Note: "normal traffic"},
				{At: 10 * time.Second, Fault: "payment:POST /charges=latency,fixed=800ms", Load: &Load{Rate: 250, Mix: loadgen.Mix{loadgen.ActionCheckout: 90, loadgen.ActionMenu: 10}},
					Note: "the rush: nearly every customer checks out, and payment slows down"},
				{At: 40 * time.Second, Clear: "payment:POST /charges", Load: &Load{Rate: 40, Mix: loadgen.DefaultMix()}, Note: "the rush ends"},
				{At: 60 * time.Second, Note: "the scenario ends"},
			},
		},
		{
			Name: "lost-payment-responses",
			Description: "For one minute payment charges the card, then loses 30% of its answers on the way back. " +
				"Watch customers told their checkout failed although they were charged, and what retries without an idempotency key do.",
			Steps: []Step{
				{At: 0, Load: baseline, Note: "customers browse and order"},
				{At: 5 * time.Second, Fault: "payment:POST /charges=lose,p=0.3", Note: "payment loses 30% of its answers after charging"},
				{At: 65 * time.Second, Clear: "payment:POST /charges", Note: "payment answers again"},
				{At: 85 * time.Second, Note: "the scenario ends"},
			},
		},
		{
			Name:      "payment-crash",
			Processes: true,
			Check:     true,
			Description: "Needs -processes. For one minute payment's process is killed (as by SIGKILL) in the middle of one charge in ten, " +
				"after the charge is stored and before its answer leaves, and restarted by the supervisor. Watch checkouts fail while it is down, " +
				"and whether a retry after the restart charges the card again: with idempotency keys and -data, the journal replays the first charge. " +
				"At the end the checker compares what customers were told with payment's ledger and the orders: double charges, lost paid orders, reused ids.",
			Steps: []Step{
				{At: 0, Load: baseline, Note: "customers browse and order"},
				{At: 5 * time.Second, Fault: "payment:POST /charges=crash,p=0.1", Note: "payment crashes in the middle of one charge in ten"},
				{At: 65 * time.Second, Clear: "payment:POST /charges", Note: "payment stops crashing"},
				{At: 85 * time.Second, Note: "the scenario ends"},
			},
		},
	}
}

// Errors of Runner.Start.
var (
	// ErrUnknownScenario: no scenario has the name given.
	ErrUnknownScenario = errors.New("scenario: no such scenario")
	// ErrBusy: another scenario is running; stop it first.
	ErrBusy = errors.New("scenario: another scenario is running")
	// ErrInvalid: a scenario that cannot run on this system (a step's
	// fault does not parse or targets nothing the system serves, a load
	// step without a load generator, steps out of order).
	ErrInvalid = errors.New("scenario: cannot run")
)

// parseTarget reads "service" or "service:route".
func parseTarget(s string) (service, route string) {
	service, route, _ = strings.Cut(s, ":")
	return strings.TrimSpace(service), route
}

// check reports why s cannot run with c, or nil.
func (s Scenario) check(c *Controls) error {
	if s.Name == "" {
		return fmt.Errorf("%w: a scenario needs a name", ErrInvalid)
	}
	var last time.Duration
	for i, st := range s.Steps {
		if st.At < last {
			return fmt.Errorf("%w: %s: step %d at %v comes before step %d at %v", ErrInvalid, s.Name, i+1, st.At, i, last)
		}
		last = st.At
		if st.Clear != "" {
			service, route := parseTarget(st.Clear)
			if err := c.Faults.Check(service, route); err != nil {
				return fmt.Errorf("%w: %s: step %d clears %s: %w", ErrInvalid, s.Name, i+1, st.Clear, err)
			}
		}
		if st.Fault != "" {
			r, err := faults.Parse(st.Fault)
			if err == nil {
				err = c.Faults.Check(r.Service, r.Route)
			}
			if err != nil {
				return fmt.Errorf("%w: %s: step %d: %w", ErrInvalid, s.Name, i+1, err)
			}
		}
		if st.Load != nil && !st.Load.optional(c) {
			if c.Load == nil {
				return fmt.Errorf("%w: %s: step %d changes the load, and this system runs no load generator", ErrInvalid, s.Name, i+1)
			}
			if st.Load.Rate < 0 || st.Load.Rate > loadgen.MaxRate {
				return fmt.Errorf("%w: %s: step %d: rate %d is outside 0..%d", ErrInvalid, s.Name, i+1, st.Load.Rate, loadgen.MaxRate)
			}
			if st.Load.Mix != nil {
				if err := st.Load.Mix.Validate(); err != nil {
					return fmt.Errorf("%w: %s: step %d: %w", ErrInvalid, s.Name, i+1, err)
				}
			}
		}
	}
	return nil
}
