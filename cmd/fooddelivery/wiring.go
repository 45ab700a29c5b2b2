package main

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
	"github.com/gophereats/resilience/fooddelivery/retry"
	"github.com/gophereats/resilience/fooddelivery/system"
)

// The settings each lab's README teaches, used by its solution and by the
// learner's code alike (labRows says them in words).
const (
	paymentBudget = 2 * time.Second // lab 01: one payment call, connect included

	orderOwnBudget = 10 * time.Second       // lab 02: the order service's own budget
	orderNeed      = 250 * time.Millisecond // lab 02: the least a checkout needs to start
	hopAllowance   = 50 * time.Millisecond  // lab 02: one network hop

	budgetRatio        = 0.1 // lab 04: retries per request (the SRE book's 10%)
	budgetMinPerSecond = 1.0 // lab 04: the experiment's minimum, sized for a quiet client
	budgetMax          = 2.0 // lab 04: retries a quiet spell can save up

	breakerWindow   = 20               // lab 05: the last 20 calls
	breakerMinCalls = 10               // lab 05: judged from 10 calls on
	breakerOpenFor  = 30 * time.Second // lab 05: Envoy's base ejection time
	fastOpenFor     = 3 * time.Second  // lab 05 with -fast

	gatewayLimit     = 30 // lab 06: the dinner rush's gateway
	compartmentSlots = 10 // lab 06: per dependency of the gateway

	chargeAttempts         = 4                // lab 08: the order service's charge retries
	dispatchCrashRate      = 0.1              // lab 08: deliveries whose consumer crashes before the ack
	dispatchVisibility     = 30 * time.Second // lab 08: SQS's default visibility timeout
	fastDispatchVisibility = 3 * time.Second  // lab 08 with -fast

	hedgeWindow     = 2000                   // lab 09: reads the delay is the p95 of
	hedgePercentile = 0.95                   // lab 09
	hedgeFirstDelay = 200 * time.Millisecond // lab 09: before any read was seen
	hedgeRatio      = 0.1                    // lab 09: hedges per read
	hedgeBurst      = 100                    // lab 09: hedges saved up for a stall
)

// settings are what every lab's glue may read besides the plan.
type settings struct {
	seed int64 // keys the retries' jitter and the dispatch queue's crashes, as it keys the faults
	// fast shortens the settings that make a demo wait: the breaker's open
	// period and the dispatch queue's visibility timeout.
	fast bool
	// logger receives the breakers' state changes; nil means
	// slog.Default().
	logger *slog.Logger
}

// plug puts one lab's pattern into the system being wired.
type plug func(w *wiring)

// solutions and learners are the patterns a build has, by lab number.
// solutions.go fills solutions; each learnerNN.go, built only with
// -tags learnerNN, fills learners[NN].
var solutions, learners [10]plug

// haveLearner reports whether this build has lab n's learner code.
func haveLearner(n int) bool { return learners[n] != nil }

// naives are the broken starting points, from fooddelivery. A lab whose
// story starts from the system as it is (01, 05, 09) has none.
var naives = [10]plug{
	2: func(w *wiring) { w.cfg.OrderDeadlines = system.NaiveOrderDeadlines(orderOwnBudget) },
	3: func(w *wiring) { w.retryPaymentTransport(retry.NaiveTransport) },
	4: func(w *wiring) { w.cfg.Retries = retry.NaiveLayers(w.s.seed) },
	6: func(w *wiring) { w.cfg.Limits["gateway"] = gatewayLimit },
	7: func(w *wiring) {
		w.cfg.Fallbacks = func(d gateway.Deps) (gateway.Deps, func()) {
			d.Auth = auth.NaiveFailOpen(d.Auth)
			return d, nil
		}
	},
	8: func(w *wiring) {
		w.retryCharges()
		w.dispatch(dispatch.NaiveAssignCourier)
	},
}

// wiring is a system.Config built from a plan, with what the plugs made
// along the way.
type wiring struct {
	plan plan
	s    settings
	cfg  system.Config
	// metrics is cfg.Metrics: the plugs register their pattern readers
	// in it before the system starts.
	metrics *fooddelivery.Metrics
	// gameDay forces lab 07's fallbacks (fooddelivery.GameDay); nil when
	// lab 07's fallbacks are not plugged.
	gameDay *fooddelivery.GameDay
	// keyedCounts: the order service's payment client counts the first
	// attempt of every charge itself (payment.KeyedClient, set up by lab
	// 08's plug), so a retrying transport below it counts only retries.
	keyedCounts bool
}

// wire builds the system.Config that p describes: each lab's plug, in
// lab order, so that a later lab wraps what an earlier one built (lab 03's
// transport goes inside lab 01's client). Network, GatewayAddr and the
// order service's limit are the caller's to set.
func wire(p plan, s settings) *wiring {
	w := &wiring{plan: p, s: s, metrics: fooddelivery.NewMetrics()}
	w.cfg = system.Config{Seed: s.seed, Metrics: w.metrics, MenuReplicas: menuReplicas, Limits: map[string]int{}}
	for n := 1; n <= 9; n++ {
		if !p.on(n) {
			continue
		}
		var pl plug
		switch p.choice[n] {
		case naive:
			pl = naives[n]
		case solution:
			pl = solutions[n]
		case learner:
			pl = learners[n]
		}
		if pl != nil {
			pl(w)
		}
	}
	w.keyedCounts = w.cfg.ChargeKey != nil || w.cfg.ChargeRetry != nil
	return w
}

// logger returns the logger for breakers' state changes.
func (w *wiring) logger() *slog.Logger {
	if w.s.logger != nil {
		return w.s.logger
	}
	return slog.Default()
}

// retryPaymentTransport puts a retrying transport, built by wrap around
// the transport the payment client had, inside the payment client (lab
// 01's, or the plain one), and counts its attempts on the edge
// order->payment.
func (w *wiring) retryPaymentTransport(wrap func(base http.RoundTripper) http.RoundTripper) {
	client := w.cfg.PaymentClient
	if client == nil {
		client = system.NaivePaymentClient
	}
	edge := w.metrics.Edge("order", "payment")
	w.cfg.PaymentClient = func(n *memnet.Network) *http.Client {
		c := client(n)
		c.Transport = tallied(wrap(countAttempts(c.Transport, &edge.Attempts, &edge.Retries, func() bool { return !w.keyedCounts })), nil)
		return c
	}
}

// retryCharges makes the order service retry failed charges itself (lab
// 08's policy: payment.KeyedClient) when lab 08 is the lab that retries
// the charge.
func (w *wiring) retryCharges() {
	if w.plan.retrier == 8 {
		w.cfg.ChargeRetry = &retry.Policy{Attempts: chargeAttempts, Seed: w.s.seed}
	}
}

// dispatch runs the courier-dispatch pipeline with consume as its
// consumer. The queue crashes the consumer after dispatchCrashRate of the
// deliveries, before it acknowledges them, so every consumer meets
// redeliveries.
func (w *wiring) dispatch(consume func(context.Context, *dispatch.Fleet, dispatch.Message) error) {
	visibility := dispatchVisibility
	if w.s.fast {
		visibility = fastDispatchVisibility
	}
	seed := w.s.seed
	w.cfg.CourierDispatch = &system.CourierDispatch{
		Consumer: consume,
		Queue: &dispatch.Queue{VisibilityTimeout: visibility, CrashAfterHandling: func(m dispatch.Message) bool {
			return fooddelivery.Draw(seed, "dispatch "+m.ID, m.Receives) < dispatchCrashRate
		}},
	}
}

// The glue of each lab: written once, called by solutions.go with the
// reference solution's functions and by learnerNN.go with the learner's.
// Both packages have the same exported API; where it has a type of its
// own (a Settings, a budget), the glue takes it as a type parameter.

// lab01 plugs lab 01's payment client.
func lab01(newPaymentClient func(network *memnet.Network, timeout time.Duration) *http.Client) plug {
	return func(w *wiring) {
		w.cfg.PaymentClient = func(n *memnet.Network) *http.Client { return newPaymentClient(n, paymentBudget) }
	}
}

// lab02 plugs lab 02's deadline propagation: the server half around the
// order service, the client half under its clients and under the
// gateway's order client.
func lab02(middleware func(own, need time.Duration) func(http.Handler) http.Handler,
	transport func(base http.RoundTripper, hop time.Duration) http.RoundTripper) plug {
	return func(w *wiring) {
		hop := func(rt http.RoundTripper) http.RoundTripper { return transport(rt, hopAllowance) }
		w.cfg.OrderDeadlines = &system.OrderDeadlines{
			Middleware: middleware(orderOwnBudget, orderNeed),
			Transport:  hop,
			Gateway:    hop,
		}
	}
}

// lab03 plugs lab 03's retrying transport into the payment client; seed
// keys its jitter.
func lab03(newTransport func(base http.RoundTripper, seed int64) http.RoundTripper) plug {
	return func(w *wiring) {
		w.retryPaymentTransport(func(base http.RoundTripper) http.RoundTripper { return newTransport(base, w.s.seed) })
	}
}

// lab04 plugs lab 04's retry layers with one budget for the payment
// client. The budget's tokens are reported when it can tell them (a
// Tokens() float64 method, as the reference has; a learner's need not).
func lab04[B any](newBudget func(ratio, minPerSecond, max float64) B, layers func(budget B) retry.Layers) plug {
	return func(w *wiring) {
		budget := newBudget(budgetRatio, budgetMinPerSecond, budgetMax)
		if t, ok := any(budget).(interface{ Tokens() float64 }); ok {
			w.metrics.ReportRetryBudget("order->payment", t.Tokens)
		}
		w.cfg.Retries = layers(budget)
	}
}

// breakerSettings are the settings lab 05's glue gives a breaker; the
// registration turns them into the package's Settings.
type breakerSettings[St any] struct {
	Name          string
	Window        int
	MinCalls      int
	OpenFor       time.Duration
	HalfOpenCalls int
	Logger        *slog.Logger
	OnStateChange func(name string, from, to St)
}

// lab05 plugs lab 05's breakers: one around the order service's payment
// calls, and the per-endpoint order client under the gateway. Every state
// change counts in BreakerTransitions and every refusal in Rejections of
// the edge the breaker guards; each breaker's state is reported by name
// (the payment breaker's read from it, the order client's from its
// reported changes, registered at its first change).
func lab05[S any, St fmt.Stringer, CB interface{ State() St }, OC fooddelivery.OrderService](
	settings func(breakerSettings[St]) S,
	newBreaker func(S) CB,
	payer func(cb CB, next fooddelivery.Payer) fooddelivery.Payer,
	newOrderClient func(next *order.Client, s S) OC,
) plug {
	return func(w *wiring) {
		openFor := breakerOpenFor
		if w.s.fast {
			openFor = fastOpenFor
		}
		base := breakerSettings[St]{Window: breakerWindow, MinCalls: breakerMinCalls, OpenFor: openFor, HalfOpenCalls: 1, Logger: w.logger()}

		pay := w.metrics.Edge("order", "payment")
		s := base
		s.Name = "order->payment"
		s.OnStateChange = func(string, St, St) { pay.BreakerTransitions.Add(1) }
		cb := newBreaker(settings(s))
		w.metrics.ReportBreaker(s.Name, func() fooddelivery.BreakerState { return breakerState(cb.State().String()) })
		w.cfg.PaymentBreaker = func(next fooddelivery.Payer) fooddelivery.Payer {
			return refusedPayer{payer(cb, next), pay}
		}

		orders := w.metrics.Edge("gateway", "order")
		book := newBreakerBook(w.metrics, openFor)
		s = base
		s.Name = "order"
		s.OnStateChange = func(name string, from, to St) {
			orders.BreakerTransitions.Add(1)
			book.changed(name, breakerState(to.String()))
		}
		w.cfg.GatewayOrderClient = func(c *order.Client) fooddelivery.OrderService {
			return fooddelivery.GuardOrderService(newOrderClient(c, settings(s)), counting(orders, refused))
		}
	}
}

// lab06 plugs lab 06's compartments around the gateway's dependencies,
// with the dinner rush's gateway limit. Each compartment reports its slots
// in use; refusals count in Rejections of the gateway's edge to it.
func lab06(compartments func(limits map[string]int, maxWait time.Duration) func(dependency string) fooddelivery.Guard) plug {
	return func(w *wiring) {
		w.cfg.Limits["gateway"] = gatewayLimit
		limits := map[string]int{system.GatewayOrders: compartmentSlots, system.GatewayMenu: compartmentSlots, system.GatewayCourier: compartmentSlots}
		guards := compartments(limits, 0)
		w.cfg.GatewayGuards = func(dependency string) fooddelivery.Guard {
			g := guards(dependency)
			if g == nil {
				return nil
			}
			return countSlots(g, w.metrics, gatewayEdge(dependency), limits[dependency])
		}
	}
}

// lab07 plugs lab 07's fallbacks around the gateway's dependencies, with
// a game-day switch (wiring.gameDay) nothing forces yet. Answers served
// by a fallback count in Fallbacks of the gateway's edge to the
// dependency.
func lab07(wrap func(d gateway.Deps, gameDay *fooddelivery.GameDay) (gateway.Deps, func())) plug {
	return func(w *wiring) {
		w.gameDay = &fooddelivery.GameDay{}
		w.cfg.Fallbacks = func(d gateway.Deps) (gateway.Deps, func()) {
			d, stop := wrap(d, w.gameDay)
			return countFallbacks(d, w.metrics), stop
		}
	}
}

// lab08 plugs lab 08: the charge's key on the order side, the key store
// in the payment service (its replays count in Replays of the edge
// order->payment), the order service's own charge retries when no other
// lab retries the charge, and the courier-dispatch consumer.
func lab08[K payment.KeyStore](chargeKey func(payment.ChargeAttempt) string, newKeyStore func() K,
	assignCourier func(ctx context.Context, fleet *dispatch.Fleet, m dispatch.Message) error) plug {
	return func(w *wiring) {
		w.cfg.ChargeKey = chargeKey
		w.cfg.PaymentKeys = replays{newKeyStore(), w.metrics.Edge("order", "payment")}
		w.retryCharges()
		w.dispatch(assignCourier)
	}
}

// lab09 plugs lab 09's hedger into the gateway's menu transport, with a
// latency tracker and a budget. Reads, hedges and hedges that won count
// on the edge gateway->menu.
func lab09[L, B any](newTracker func(window int, percentile float64, initial time.Duration) L,
	newBudget func(ratio float64, burst int) B,
	hedger func(base http.RoundTripper, replicas []string, latencies L, budget B) http.RoundTripper) plug {
	return func(w *wiring) {
		edge := w.metrics.Edge("gateway", "menu")
		w.cfg.MenuHedging = func(base http.RoundTripper, replicas []string) http.RoundTripper {
			h := hedger(countAttempts(base, &edge.Attempts, &edge.Hedges, func() bool { return true }), replicas,
				newTracker(hedgeWindow, hedgePercentile, hedgeFirstDelay), newBudget(hedgeRatio, hedgeBurst))
			return tallied(h, &edge.HedgesWon)
		}
	}
}
