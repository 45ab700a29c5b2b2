// Package compose builds the food-delivery system from a plan: which
// pattern runs at each integration point (the labs' choices: off, naive,
// solution or learner) and with which settings (a plan.Plan). It is the
// one place where the labs' patterns meet: cmd/fooddelivery runs what it
// builds on TCP loopback, and lab 10's game day and the comparisons play
// incidents against it on memnet in fake time.
//
// The reference solutions are the building blocks by default (Solutions,
// filled by solutions.go); a build that has a learner's lab code registers
// it in Learners (cmd/fooddelivery's learnerNN.go files, each behind its
// build tag), and a lab whose choice is Learner runs it with the same
// settings and the same glue.
//
//	labs := compose.FromPlan(p, compose.HaveLearner)
//	w := compose.Wire(labs, compose.Settings{Seed: 1, Plan: p})
//	sys, err := system.Start(w.Cfg)
//
// It must not know about flags, banners or the admin API: those are
// cmd/fooddelivery's.
package compose

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/auth"
	"github.com/gophereats/resilience/fooddelivery/dispatch"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/order"
	"github.com/gophereats/resilience/fooddelivery/payment"
	"github.com/gophereats/resilience/fooddelivery/plan"
	"github.com/gophereats/resilience/fooddelivery/retry"
	"github.com/gophereats/resilience/fooddelivery/system"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

// Settings of the labs that a plan.Plan does not hold: they belong to a
// lab's own demo, not to a decision at an integration point.
const (
	chargeAttempts    = 4   // lab 08: the order service's charge retries, when lab 08 retries the charge
	dispatchCrashRate = 0.1 // lab 08: deliveries whose consumer crashes before the ack

	// DispatchVisibility is how long the courier-dispatch queue waits for
	// an acknowledgement before it redelivers (lab 08; SQS's default
	// visibility timeout); FastDispatchVisibility with Settings.Fast.
	DispatchVisibility     = 30 * time.Second
	FastDispatchVisibility = 3 * time.Second

	// MenuReplicas is the number of menu instances the system runs
	// (system.Config.MenuReplicas).
	MenuReplicas = 3
)

// Choice is what runs at one lab's integration point (-lab NN=choice).
type Choice int

const (
	Off      Choice = iota // the system as it is without the lab
	Naive                  // the broken starting point of the lab's story
	Solution               // solutions/NN-name, with the plan's settings
	Learner                // labs/NN-name: the learner's code, built in with -tags learnerNN
)

// ChoiceNames are the choices as the flags write them, by Choice.
var ChoiceNames = []string{"off", "naive", "solution", "learner"}

func (c Choice) String() string { return ChoiceNames[c] }

// Labs says what runs at every lab's integration point.
type Labs struct {
	Choice [10]Choice // by lab number; index 0 unused
	// Unplugged: the lab is on but another lab holds its place (the
	// charge's one retry layer).
	Unplugged [10]bool
	// Retrier is the lab whose loop retries the charge; 0 for none.
	Retrier int
	// FromPlan: the labs were chosen by FromPlan. The plan's gateway
	// limit and AuthFailOpen then apply whatever lab 06 and lab 07 are,
	// and the courier-dispatch pipeline (lab 08's consumer, which no plan
	// decides) stays off.
	FromPlan bool
}

// On reports whether lab n's pattern is plugged.
func (l Labs) On(n int) bool { return l.Choice[n] != Off && !l.Unplugged[n] }

// FromPlan returns the labs that p turns on, each as Learner when
// haveLearner(n) says this build has lab n's learner code and useLearner,
// as Solution otherwise. Which lab retries the charge follows from
// p.Payment.Retries: lab 04's loop with a budget or at every layer, lab
// 03's transport otherwise.
func FromPlan(p plan.Plan, useLearner bool) Labs {
	l := Labs{FromPlan: true}
	r := p.Payment.Retries
	retries := r.Attempts > 1
	on := [10]bool{
		1: p.Payment.Timeout > 0,
		2: p.Deadlines != nil,
		3: retries && !r.EveryLayer && r.Budget == nil,
		4: retries && (r.EveryLayer || r.Budget != nil),
		5: p.Payment.Breaker != nil || p.Gateway.OrdersBreaker != nil,
		6: p.Gateway.Compartments != nil,
		7: p.Gateway.Fallbacks,
		8: p.IdempotencyKeys,
		9: p.Gateway.Hedge != nil,
	}
	for n := 1; n <= 9; n++ {
		switch {
		case !on[n]:
		case useLearner && HaveLearner(n):
			l.Choice[n] = Learner
		default:
			l.Choice[n] = Solution
		}
	}
	switch {
	case on[4]:
		l.Retrier = 4
	case on[3]:
		l.Retrier = 3
	}
	return l
}

// Settings are what every lab's glue may read besides the labs' choices.
type Settings struct {
	// Seed keys the retries' jitter and the dispatch queue's crashes, as
	// it keys the faults.
	Seed int64
	// Fast shortens the dispatch queue's visibility timeout for demos
	// (the breakers' open period is the plan's: plan.Labs(true)).
	Fast bool
	// Logger receives the breakers' state changes; nil means
	// slog.Default().
	Logger *slog.Logger
	// Plan holds the settings of every pattern that is on: plan.Labs for
	// the labs' README settings, or a game-day plan.
	Plan plan.Plan
	// Tracer, when set, traces the system (system.Config.Tracer), and the
	// glue records each pattern's decisions on the spans; nil means no
	// tracing.
	Tracer *tracing.Tracer
}

// Plug puts one lab's pattern into the system being wired.
type Plug func(w *Wiring)

// Solutions and Learners are the patterns a build has, by lab number.
// solutions.go fills Solutions; each learnerNN.go of cmd/fooddelivery,
// built only with -tags learnerNN, fills Learners[NN].
var Solutions, Learners [10]Plug

// HaveLearner reports whether this build has lab n's learner code.
func HaveLearner(n int) bool { return Learners[n] != nil }

// naives are the broken starting points, from fooddelivery. A lab whose
// story starts from the system as it is (01, 05, 09) has none.
var naives = [10]Plug{
	2: func(w *Wiring) { w.Cfg.OrderDeadlines = system.NaiveOrderDeadlines(w.S.Plan.Deadlines.OwnBudget) },
	3: func(w *Wiring) { w.retryPaymentTransport(retry.NaiveTransport) },
	4: func(w *Wiring) { w.Cfg.Retries = retry.NaiveLayers(w.S.Seed) },
	6: func(w *Wiring) { w.Cfg.Limits["gateway"] = w.S.Plan.Gateway.Limit },
	7: func(w *Wiring) { w.failOpen() },
	8: func(w *Wiring) {
		w.retryCharges()
		w.dispatch(dispatch.NaiveAssignCourier)
	},
}

// Wiring is a system.Config built from the labs' choices and a plan, with
// what the plugs made along the way.
type Wiring struct {
	Labs Labs
	S    Settings
	Cfg  system.Config
	// Metrics is Cfg.Metrics: the plugs register their pattern readers
	// in it before the system starts.
	Metrics *metrics.Metrics
	// GameDay forces lab 07's fallbacks (fooddelivery.GameDay); nil when
	// lab 07's fallbacks are not plugged.
	GameDay *fooddelivery.GameDay
	// keyedCounts: the order service's payment client counts the first
	// attempt of every charge itself (payment.KeyedClient, set up by lab
	// 08's plug), so a retrying transport below it counts only retries.
	keyedCounts bool
}

// Wire builds the system.Config that l and s describe: each lab's plug,
// in lab order, so that a later lab wraps what an earlier one built (lab
// 03's transport goes inside lab 01's client). Network, GatewayAddr and
// the order service's limit are the caller's to set.
func Wire(l Labs, s Settings) *Wiring {
	w := &Wiring{Labs: l, S: s, Metrics: metrics.NewMetrics()}
	w.Cfg = system.Config{Seed: s.Seed, Metrics: w.Metrics, MenuReplicas: MenuReplicas, Limits: map[string]int{}, Tracer: s.Tracer}
	if l.FromPlan && s.Plan.Gateway.Limit > 0 {
		w.Cfg.Limits["gateway"] = s.Plan.Gateway.Limit
	}
	for n := 1; n <= 9; n++ {
		if !l.On(n) {
			continue
		}
		var pl Plug
		switch l.Choice[n] {
		case Naive:
			pl = naives[n]
		case Solution:
			pl = Solutions[n]
		case Learner:
			pl = Learners[n]
		}
		if pl != nil {
			pl(w)
		}
	}
	if l.FromPlan && s.Plan.Gateway.AuthFailOpen {
		w.failOpen()
	}
	w.keyedCounts = w.Cfg.ChargeKey != nil || w.Cfg.ChargeRetry != nil
	w.countOutcomes()
	return w
}

// countOutcomes counts why calls got no answer, whichever labs are on,
// on the edge they were sent along: the order service's charges (each
// call of its payment client, so that every attempt of a retry loop above
// it that timed out counts; a breaker's refusals and payment's overload
// once per charge, outside the breaker), and the gateway's calls to its
// dependencies (outside the plugs' wrappers: the breakers, the retry
// loops, the compartments) and to auth.
func (w *Wiring) countOutcomes() {
	pay := w.Metrics.Edge("order", "payment")
	client := w.Cfg.PaymentClient
	if client == nil {
		client = system.NaivePaymentClient
	}
	w.Cfg.PaymentClient = func(n *memnet.Network) *http.Client {
		c := client(n)
		c.Transport = countTimeouts(c.Transport, pay)
		return c
	}
	breaker := w.Cfg.PaymentBreaker
	w.Cfg.PaymentBreaker = func(p fooddelivery.Payer) fooddelivery.Payer {
		if breaker != nil {
			p = breaker(p)
		}
		return outcomePayer{p, pay}
	}
	inner := w.Cfg.Fallbacks
	auth := w.Metrics.Edge("gateway", "auth")
	w.Cfg.Fallbacks = func(d gateway.Deps) (gateway.Deps, func()) {
		var stop func()
		if inner != nil {
			d, stop = inner(d)
		}
		if d.Auth != nil {
			d.Auth = outcomeAuth{d.Auth, auth}
		}
		return d, stop
	}
	guards := w.Cfg.GatewayGuards
	w.Cfg.GatewayGuards = func(dependency string) fooddelivery.Guard {
		var g fooddelivery.Guard
		if guards != nil {
			g = guards(dependency)
		}
		edge := w.Metrics.Edge("gateway", gatewayEdge(dependency))
		return func(ctx context.Context, call func(context.Context) error) error {
			var err error
			if g == nil {
				err = call(ctx)
			} else {
				err = g(ctx, call)
			}
			outcomes(ctx, edge, err)
			return err
		}
	}
}

// failOpen lets requests in when the auth check cannot be made
// (auth.NaiveFailOpen), outside any fallbacks lab 07 plugged.
func (w *Wiring) failOpen() {
	inner := w.Cfg.Fallbacks
	w.Cfg.Fallbacks = func(d gateway.Deps) (gateway.Deps, func()) {
		var stop func()
		if inner != nil {
			d, stop = inner(d)
		}
		d.Auth = auth.NaiveFailOpen(d.Auth)
		return d, stop
	}
}

// logger returns the logger for breakers' state changes.
func (w *Wiring) logger() *slog.Logger {
	if w.S.Logger != nil {
		return w.S.Logger
	}
	return slog.Default()
}

// retryPaymentTransport puts a retrying transport, built by wrap around
// the transport the payment client had, inside the payment client (lab
// 01's, or the plain one), and counts its attempts on the edge
// order->payment.
func (w *Wiring) retryPaymentTransport(wrap func(base http.RoundTripper) http.RoundTripper) {
	client := w.Cfg.PaymentClient
	if client == nil {
		client = system.NaivePaymentClient
	}
	edge := w.Metrics.Edge("order", "payment")
	w.Cfg.PaymentClient = func(n *memnet.Network) *http.Client {
		c := client(n)
		c.Transport = tallied(wrap(countAttempts(c.Transport, &edge.Attempts, &edge.Retries, func() bool { return !w.keyedCounts },
			attemptSpans{tracer: w.Cfg.Tracer, from: "order", to: "payment"})), nil)
		return c
	}
}

// retryCharges makes the order service retry failed charges itself (lab
// 08's policy: payment.KeyedClient) when lab 08 is the lab that retries
// the charge.
func (w *Wiring) retryCharges() {
	if w.Labs.Retrier == 8 {
		w.Cfg.ChargeRetry = &retry.Policy{Attempts: chargeAttempts, Seed: w.S.Seed}
	}
}

// dispatch runs the courier-dispatch pipeline with consume as its
// consumer. The queue crashes the consumer after dispatchCrashRate of the
// deliveries, before it acknowledges them, so every consumer meets
// redeliveries. A plan's system runs no pipeline (Labs.FromPlan).
func (w *Wiring) dispatch(consume func(context.Context, *dispatch.Fleet, dispatch.Message) error) {
	if w.Labs.FromPlan {
		return
	}
	visibility := DispatchVisibility
	if w.S.Fast {
		visibility = FastDispatchVisibility
	}
	seed := w.S.Seed
	w.Cfg.CourierDispatch = &system.CourierDispatch{
		Consumer: consume,
		Queue: &dispatch.Queue{VisibilityTimeout: visibility, CrashAfterHandling: func(m dispatch.Message) bool {
			return fooddelivery.Draw(seed, "dispatch "+m.ID, m.Receives) < dispatchCrashRate
		}},
	}
}

// The glue of each lab: written once, called by solutions.go with the
// reference solution's functions and by learnerNN.go with the learner's.
// Both packages have the same exported API; where it has a type of its
// own (a Settings, a budget), the glue takes it as a type parameter. Every
// setting comes from Settings.Plan.

// Lab01 plugs lab 01's payment client with the plan's Payment.Timeout.
func Lab01(newPaymentClient func(network *memnet.Network, timeout time.Duration) *http.Client) Plug {
	return func(w *Wiring) {
		timeout := w.S.Plan.Payment.Timeout
		w.Cfg.PaymentClient = func(n *memnet.Network) *http.Client { return newPaymentClient(n, timeout) }
	}
}

// Lab02 plugs lab 02's deadline propagation: the server half around the
// order service and around the gateway (the customer's own budget, with
// the plan's OwnBudget when a customer sends none and no Need: browsing
// asks for nothing), the client half under the order service's clients
// and under the gateway's order client.
func Lab02(middleware func(own, need time.Duration) func(http.Handler) http.Handler,
	transport func(base http.RoundTripper, hop time.Duration) http.RoundTripper) Plug {
	return func(w *Wiring) {
		d := w.S.Plan.Deadlines
		hop := func(rt http.RoundTripper) http.RoundTripper { return transport(rt, d.Hop) }
		w.Cfg.OrderDeadlines = &system.OrderDeadlines{
			Middleware: middleware(d.OwnBudget, d.Need),
			Transport:  hop,
			Gateway:    hop,
			Edge:       middleware(d.OwnBudget, 0),
		}
	}
}

// Lab03 plugs lab 03's retrying transport into the payment client, with
// the plan's attempts and backoff; the seed keys its jitter.
func Lab03(newTransport func(base http.RoundTripper, seed int64, attempts int, baseDelay, maxDelay time.Duration) http.RoundTripper) Plug {
	return func(w *Wiring) {
		r := w.S.Plan.Payment.Retries
		w.retryPaymentTransport(func(base http.RoundTripper) http.RoundTripper {
			return newTransport(base, w.S.Seed, r.Attempts, r.BaseDelay, r.MaxDelay)
		})
	}
}

// Lab04 plugs lab 04's retry layers: the layer next to payment retries
// within a budget (newRetry builds its loop: attempts, the budget, the
// backoff), and with the plan's EveryLayer the gateway and the order
// service retry every failure too. The budget's tokens are reported when
// it can tell them (a Tokens() float64 method, as the reference has; a
// learner's need not).
func Lab04[B any](newBudget func(ratio, minPerSecond, max float64) B,
	newRetry func(attempts int, budget B, backoff retry.Policy) retry.Retrier) Plug {
	return func(w *Wiring) {
		r := w.S.Plan.Payment.Retries
		backoff := retry.Policy{Base: r.BaseDelay, Cap: r.MaxDelay, Seed: w.S.Seed}
		var layers retry.Layers
		if b := r.Budget; b != nil {
			budget := newBudget(b.Ratio, b.MinPerSecond, b.Max)
			if t, ok := any(budget).(interface{ Tokens() float64 }); ok {
				w.Metrics.ReportRetryBudget("order->payment", t.Tokens)
			}
			attempts := r.Attempts
			if attempts == 0 {
				attempts = retry.DefaultAttempts
			}
			layers.PaymentClient = budgetWatch{newRetry(r.Attempts, budget, backoff), attempts, w.Metrics.Edge("order", "payment")}
		}
		if r.EveryLayer {
			every := retry.Policy{Attempts: r.Attempts, Base: r.BaseDelay, Cap: r.MaxDelay, Retryable: retry.RetryEveryFailure, Seed: w.S.Seed}
			layers.Gateway, layers.Order = every, every
			if layers.PaymentClient == nil {
				layers.PaymentClient = every
			}
		}
		w.Cfg.Retries = layers
	}
}

// BreakerSettings are the settings lab 05's glue gives a breaker; the
// registration turns them into the package's Settings.
type BreakerSettings[St any] struct {
	Name          string
	Window        int
	FailureRate   float64
	MinCalls      int
	OpenFor       time.Duration
	HalfOpenCalls int
	Logger        *slog.Logger
	OnStateChange func(name string, from, to St)
}

// Lab05 plugs lab 05's breakers: one around the order service's payment
// calls (the plan's Payment.Breaker), and the per-endpoint order client
// under the gateway (Gateway.OrdersBreaker); a nil setting leaves its
// breaker out. Every state change counts in BreakerTransitions of the edge
// the breaker guards (its refusals count in BreakerOpen: countOutcomes);
// each breaker's state is reported by name (the payment breaker's read from it, the
// order client's from its reported changes, registered at its first
// change).
func Lab05[S any, St fmt.Stringer, CB interface{ State() St }, OC fooddelivery.OrderService](
	settings func(BreakerSettings[St]) S,
	newBreaker func(S) CB,
	payer func(cb CB, next fooddelivery.Payer) fooddelivery.Payer,
	newOrderClient func(next *order.Client, s S) OC,
) Plug {
	return func(w *Wiring) {
		base := func(b *plan.Breaker) BreakerSettings[St] {
			return BreakerSettings[St]{Window: b.Window, FailureRate: b.FailureRate, MinCalls: b.MinCalls, OpenFor: b.OpenFor,
				HalfOpenCalls: b.HalfOpenCalls, Logger: w.logger()}
		}
		if b := w.S.Plan.Payment.Breaker; b != nil {
			pay := w.Metrics.Edge("order", "payment")
			s := base(b)
			s.Name = "order->payment"
			s.OnStateChange = func(string, St, St) { pay.BreakerTransitions.Add(1) }
			cb := newBreaker(settings(s))
			w.Metrics.ReportBreaker(s.Name, func() metrics.BreakerState { return breakerState(cb.State().String()) })
			w.Cfg.PaymentBreaker = func(next fooddelivery.Payer) fooddelivery.Payer { return payer(cb, next) }
		}
		if b := w.S.Plan.Gateway.OrdersBreaker; b != nil {
			orders := w.Metrics.Edge("gateway", "order")
			book := newBreakerBook(w.Metrics, openFor(b))
			s := base(b)
			s.Name = "order"
			s.OnStateChange = func(name string, from, to St) {
				orders.BreakerTransitions.Add(1)
				book.changed(name, breakerState(to.String()))
			}
			w.Cfg.GatewayOrderClient = func(c *order.Client) fooddelivery.OrderService {
				return newOrderClient(c, settings(s))
			}
		}
	}
}

// openFor is b's open period with its default filled in.
func openFor(b *plan.Breaker) time.Duration {
	if b.OpenFor > 0 {
		return b.OpenFor
	}
	return 30 * time.Second
}

// Lab06 plugs lab 06's compartments around the gateway's dependencies,
// with the plan's gateway limit. Each compartment reports its slots in
// use; refusals count in BulkheadFull of the gateway's edge to it.
func Lab06(compartments func(limits map[string]int, maxWait time.Duration) func(dependency string) fooddelivery.Guard) Plug {
	return func(w *Wiring) {
		if l := w.S.Plan.Gateway.Limit; l > 0 {
			w.Cfg.Limits["gateway"] = l
		}
		c := w.S.Plan.Gateway.Compartments
		limits := map[string]int{}
		for dep, slots := range map[string]int{system.GatewayOrders: c.Orders, system.GatewayMenu: c.Menu, system.GatewayCourier: c.Courier} {
			if slots > 0 {
				limits[dep] = slots
			}
		}
		guards := compartments(limits, c.Wait)
		w.Cfg.GatewayGuards = func(dependency string) fooddelivery.Guard {
			if limits[dependency] == 0 {
				return nil
			}
			g := guards(dependency)
			if g == nil {
				return nil
			}
			return countSlots(g, w.Metrics, gatewayEdge(dependency), limits[dependency])
		}
	}
}

// Lab07 plugs lab 07's fallbacks around the gateway's dependencies, with
// a game-day switch (Wiring.GameDay) nothing forces yet. Answers served
// by a fallback count in Fallbacks of the gateway's edge to the
// dependency.
func Lab07(wrap func(d gateway.Deps, gameDay *fooddelivery.GameDay) (gateway.Deps, func())) Plug {
	return func(w *Wiring) {
		w.GameDay = &fooddelivery.GameDay{}
		w.Cfg.Fallbacks = func(d gateway.Deps) (gateway.Deps, func()) {
			d, stop := wrap(d, w.GameDay)
			return countFallbacks(d, w.Metrics), stop
		}
	}
}

// Lab08 plugs lab 08: the charge's key on the order side, the key store
// in the payment service (its replays count in Replays of the edge
// order->payment), the order service's own charge retries when no other
// lab retries the charge, and the courier-dispatch consumer.
func Lab08[K payment.KeyStore](chargeKey func(payment.ChargeAttempt) string, newKeyStore func() K,
	assignCourier func(ctx context.Context, fleet *dispatch.Fleet, m dispatch.Message) error) Plug {
	return func(w *Wiring) {
		w.Cfg.ChargeKey = chargeKey
		w.Cfg.PaymentKeys = replays{newKeyStore(), w.Metrics.Edge("order", "payment")}
		w.retryCharges()
		w.dispatch(assignCourier)
	}
}

// Lab09 plugs lab 09's hedger into the gateway's menu transport, with a
// latency tracker and a budget from the plan's Gateway.Hedge. Reads,
// hedges and hedges that won count on the edge gateway->menu.
func Lab09[L, B any](newTracker func(window int, percentile float64, initial time.Duration) L,
	newBudget func(ratio float64, burst int) B,
	hedger func(base http.RoundTripper, replicas []string, latencies L, budget B) http.RoundTripper) Plug {
	return func(w *Wiring) {
		h := w.S.Plan.Gateway.Hedge
		edge := w.Metrics.Edge("gateway", "menu")
		w.Cfg.MenuHedging = func(base http.RoundTripper, replicas []string) http.RoundTripper {
			hd := hedger(countAttempts(base, &edge.Attempts, &edge.Hedges, func() bool { return true },
				attemptSpans{tracer: w.Cfg.Tracer, from: "gateway", to: "menu", hedge: true}), replicas,
				newTracker(h.Window, h.Percentile, h.FirstDelay), newBudget(h.Ratio, h.Burst))
			return tallied(hd, &edge.HedgesWon)
		}
	}
}
