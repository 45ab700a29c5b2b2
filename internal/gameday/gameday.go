// Package gameday plays lab 10's game day: incidents on the food-delivery
// system built from a plan (internal/compose with plan.Plan), with
// simulated customers, on the in-memory network in fake time, and judges
// each stage against its SLOs.
//
// A Stage is a timeline of phases (a healthy rush; payment hangs; payment
// fails and recovers; ...), a load, and SLOs, each a limit on one measure
// of one phase. Play runs a stage once, for one seed, inside the caller's
// testing/synctest bubble, and returns what the customers and the system
// counted; Judge holds the result to the stage's SLOs; Card writes the
// score card. Every limit is in the Stages table, which lab 10's README
// repeats and its tests keep in step.
//
// It must not know about the labs' tests, the workshop tool or the
// running binary: they call it.
package gameday

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/plan"
	"github.com/gophereats/resilience/fooddelivery/system"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
	"github.com/gophereats/resilience/internal/compose"
)

// Capacity is the game day's platform: the most requests each instance
// serves at once before it refuses more (system.Config.Limits). The plan
// cannot change it: it is what the machines can do.
var Capacity = map[string]int{"gateway": 30, "order": 40, "payment": 60, "courier": 60, "menu": 40, "auth": 60}

// Normal are the faults always on: the platform's ordinary latencies
// (payment 60-140 ms with a 1% tail of 700 ms, menus 20-50 ms,
// estimates 10-30 ms, auth 2-6 ms).
var Normal = []string{
	"payment=latency,fixed=60ms,jitter=80ms,tail-p=0.01,tail-latency=700ms",
	"menu-1=latency,fixed=20ms,jitter=30ms",
	"menu-2=latency,fixed=20ms,jitter=30ms",
	"menu-3=latency,fixed=20ms,jitter=30ms",
	"courier=latency,fixed=10ms,jitter=20ms",
	"auth=latency,fixed=2ms,jitter=4ms",
}

// Phase is a stretch of a stage's timeline.
type Phase struct {
	// Name identifies the phase in SLOs and on the score card ("down").
	Name string
	// For is how long it lasts.
	For time.Duration
	// Faults are rules in the -fault syntax (faults.Parse) set when the
	// phase begins; they replace the rule on the same service and route.
	Faults []string
	// Clear are the targets ("payment:POST /charges") whose rules the
	// phase removes when it begins; a cleared Normal rule comes back.
	Clear []string
}

// Stage is one incident of the game day.
type Stage struct {
	// Step is the lab's README step that plays it.
	Step int
	// Name is its short name ("outage").
	Name string
	// Incident says in a sentence what happens.
	Incident string
	// Rate is the customers' requests per second; Mix their actions
	// (nil: the normal mix).
	Rate int
	Mix  Mix
	// Phases are played in order; the stage ends with the last.
	Phases []Phase
	// SLOs are the limits the stage is judged by.
	SLOs []SLO
	// Seeds are the seeds the stage is played with; it passes when every
	// seed meets every SLO.
	Seeds []int64
	// Draw, when set, picks the phases from the seed (the combined
	// stage, or lengths and rates a plan could otherwise be tuned to),
	// replacing Phases.
	Draw func(seed int64) []Phase
	// Mobile is the share of customers on a mobile app, from 0 to 1: they
	// wait MobilePatience and leave without a word.
	Mobile float64
}

// phases returns the stage's phases for seed.
func (s Stage) phases(seed int64) []Phase {
	if s.Draw != nil {
		return s.Draw(seed)
	}
	return s.Phases
}

// Length is the stage's virtual duration for seed.
func (s Stage) Length(seed int64) time.Duration {
	var d time.Duration
	for _, p := range s.phases(seed) {
		d += p.For
	}
	return d
}

// CheckPlan returns the error plan.Plan.Check finds in p, or one for a
// setting the game day's platform does not let a plan change: the
// gateway's Limit, which Capacity fixes. Both wrap plan.ErrInvalid and
// name the field.
func CheckPlan(p plan.Plan) error {
	if err := p.Check(); err != nil {
		return err
	}
	if p.Gateway.Limit != 0 {
		return fmt.Errorf("%w: Gateway.Limit %d: the game day's platform has a fixed capacity (the gateway serves %d requests at once); leave Limit 0 and size the compartments within it",
			plan.ErrInvalid, p.Gateway.Limit, Capacity["gateway"])
	}
	return nil
}

// Result is what one play of a stage counted.
type Result struct {
	Stage    string
	Seed     int64
	Requests []Request
	// Phases are the phases played, with when each began and what the
	// system had counted then; the last mark is the stage's end.
	Phases []Phase
	Marks  []Mark
	// ChargedTwice is the number of orders payment charged more than once.
	ChargedTwice int
	// LetIn are the moments, since the stage began, at which the gateway
	// let a request in although its auth check had failed.
	LetIn []time.Duration
	// Samples are what the system was busy with, every SampleEvery.
	Samples []Sample
}

// SampleEvery is how often Play samples the services' requests in flight.
const SampleEvery = 20 * time.Millisecond

// Sample is the requests in flight at one moment: the order service's
// (POST /orders and GET /orders/{id}, each holding one of its slots) and
// the payment service's charges.
type Sample struct {
	At             time.Duration
	Order, Payment int64
}

// Mark is what the system had counted at one moment.
type Mark struct {
	At        time.Duration
	Charges   int64 // POST /charges requests payment received
	MenuReads int64 // menu reads the gateway's hedging transport sent, hedges included
	Hedges    int64 // hedges among them
	// LateWork is the units of work each service started after the
	// customer it worked for had given up (the order service's calls to
	// its dependencies, the payment service's charges:
	// metrics.RouteStats.WorkAfterCallerLeft), by service.
	LateWork map[string]int64
	// Attempts and Retries are the charges the order service's payment
	// client sent, and the retries among them.
	Attempts, Retries int64
}

// Play runs stage s with plan p and seed inside the caller's synctest
// bubble: it builds the system from p (the reference solutions at every
// point p turns on), sets the Normal faults, places a few orders for the
// trackers, then plays the phases with the customers and returns what
// was counted. The system is closed before it returns. An error means the
// plan or the stage cannot run (a plan that Check refuses, a bad fault).
func Play(p plan.Plan, s Stage, seed int64) (Result, error) {
	if err := CheckPlan(p); err != nil {
		return Result{}, err
	}
	// A play is a function of the plan and the seed
	// (TestSamePlanSameSeedSameCard): the customers' request ids and the
	// faults' draws are fixed by the seed; one P runs the goroutines woken
	// at one fake instant; and where their order could still tell (a
	// preempted goroutine, a select with two cases ready), nothing hangs
	// on it: customers arrive off the phases' boundaries, the hedger takes
	// an answer due at its timer's instant first, and the reads a request
	// fans out go to a replica and draw their faults by their path.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	w := compose.Wire(compose.FromPlan(p, false), compose.Settings{Seed: seed, Plan: p, Logger: slog.New(slog.DiscardHandler)})
	for name, limit := range Capacity {
		w.Cfg.Limits[name] = limit
	}
	w.Cfg.TrackCallers = true
	letIn := watchAuth(&w.Cfg)
	sys, err := system.Start(w.Cfg)
	if err != nil {
		return Result{}, fmt.Errorf("starting the system: %w", err)
	}
	defer sys.Close()
	set := func(specs []string) error {
		for _, spec := range specs {
			r, err := faults.Parse(spec)
			if err != nil {
				return err
			}
			if err := sys.Faults.Set(r.Service, r.Route, r.Fault); err != nil {
				return err
			}
		}
		return nil
	}
	if err := set(Normal); err != nil {
		return Result{}, err
	}

	c := &customers{sys: sys, client: numbered(sys), seed: seed, mobile: s.Mobile}
	// Orders to track, placed while all is well.
	for i := range 3 {
		id, err := placeOne(sys, c.client, i)
		if err != nil {
			return Result{}, fmt.Errorf("before the stage, with no fault but the platform's normal latencies, a checkout failed (%w): "+
				"something in the plan refuses or cuts short healthy checkouts (payment takes 60-140 ms, 1%% of charges 700 ms)", err)
		}
		c.orders = append(c.orders, id)
	}
	charged := sys.Ledger.OrdersChargedMoreThanOnce()

	phases := s.phases(seed)
	res := Result{Stage: s.Name, Seed: seed, Phases: phases}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	mix := s.Mix
	if mix == nil {
		mix = normalMix
	}
	c.start = time.Now()
	letIn.start = c.start
	wg.Add(2)
	go func() {
		defer wg.Done()
		c.run(ctx, s.Rate, mix, s.Length(seed), &wg)
	}()
	go func() {
		defer wg.Done()
		res.Samples = sample(ctx, sys, c.start, s.Length(seed))
	}()
	var at time.Duration
	for _, ph := range phases {
		time.Sleep(time.Until(c.start.Add(at)))
		for _, target := range ph.Clear {
			service, route, _ := cutTarget(target)
			sys.Faults.Clear(service, route)
			if slices.ContainsFunc(Normal, func(n string) bool { return hasTarget(n, target) }) {
				if err := set(normalFor(target)); err != nil {
					return Result{}, err
				}
			}
		}
		if err := set(ph.Faults); err != nil {
			return Result{}, err
		}
		res.Marks = append(res.Marks, mark(sys, w, at))
		at += ph.For
	}
	time.Sleep(time.Until(c.start.Add(at)))
	res.Marks = append(res.Marks, mark(sys, w, at))
	// Requests still unanswered at the end are cut short and not counted:
	// give the last ones the customers' patience to finish.
	time.Sleep(Patience)
	cancel()
	wg.Wait()
	res.Requests = c.requests
	res.ChargedTwice = sys.Ledger.OrdersChargedMoreThanOnce() - charged
	res.LetIn = letIn.times()
	return res, nil
}

func mark(sys *system.System, w *compose.Wiring, at time.Duration) Mark {
	edge := w.Metrics.Edge("gateway", "menu")
	pay := w.Metrics.Edge("order", "payment")
	late := map[string]int64{}
	for _, r := range sys.Metrics.Snapshot().Routes {
		late[r.Instance] += r.WorkAfterCallerLeft
	}
	return Mark{At: at, Charges: sys.Metrics.Route("payment", "POST /charges").Received.Load(), MenuReads: edge.Attempts.Load(), Hedges: edge.Hedges.Load(),
		LateWork: late, Attempts: pay.Attempts.Load(), Retries: pay.Retries.Load()}
}

// sample reads the requests in flight at the order and payment services
// every SampleEvery from start until the stage's end (until) or ctx's.
func sample(ctx context.Context, sys *system.System, start time.Time, until time.Duration) []Sample {
	routes := []*metrics.RouteStats{sys.Metrics.Route("order", "POST /orders"), sys.Metrics.Route("order", "GET /orders/{id}")}
	charges := sys.Metrics.Route("payment", "POST /charges")
	var out []Sample
	for at := SampleEvery / 2; at < until && ctx.Err() == nil; at += SampleEvery {
		time.Sleep(time.Until(start.Add(at)))
		out = append(out, Sample{At: at, Order: routes[0].InFlight.Load() + routes[1].InFlight.Load(), Payment: charges.InFlight.Load()})
	}
	return out
}

// numbered returns sys's client for the customers, which sends the
// request id each request's context carries (fooddelivery.CarryRequestID).
func numbered(sys *system.System) *http.Client {
	hc := *sys.HTTPClient()
	hc.Transport = sendBudget(fooddelivery.CarryRequestID(hc.Transport))
	return &hc
}

// placeOne places order i as alice before the stage.
func placeOne(sys *system.System, hc *http.Client, i int) (string, error) {
	rest := catalog[i%len(catalog)]
	ctx := fooddelivery.WithRequestID(context.Background(), "setup-"+strconv.Itoa(i))
	resp, _, err := gateway.Do(ctx, hc, sys.GatewayURL(), system.SampleToken,
		`mutation Checkout($in: PlaceOrderInput!) { placeOrder(input: $in) { id status } }`,
		map[string]any{"in": map[string]any{"restaurantId": rest.id, "card": "tok_visa",
			"items": []any{map[string]any{"dishId": rest.dishes[0], "quantity": 1}}}})
	if err != nil {
		return "", err
	}
	if len(resp.Errors) > 0 {
		return "", fmt.Errorf("%s", resp.Errors[0].Message)
	}
	var data struct{ PlaceOrder struct{ ID string } }
	if err := resp.Decode(&data); err != nil {
		return "", err
	}
	return data.PlaceOrder.ID, nil
}

// cutTarget splits "service:route" ("payment:POST /charges").
func cutTarget(target string) (service, route string, ok bool) {
	return strings.Cut(target, ":")
}

// hasTarget reports whether spec's rule is on target.
func hasTarget(spec, target string) bool {
	r, err := faults.Parse(spec)
	if err != nil {
		return false
	}
	service, route, _ := cutTarget(target)
	return r.Service == service && r.Route == route
}

// normalFor returns the Normal rules on target.
func normalFor(target string) []string {
	var out []string
	for _, n := range Normal {
		if hasTarget(n, target) {
			out = append(out, n)
		}
	}
	return out
}
