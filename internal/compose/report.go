package compose

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/payment"
	"github.com/gophereats/resilience/fooddelivery/retry"
	"github.com/gophereats/resilience/fooddelivery/system"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

// This file fills metrics.Metrics from outside the patterns: the
// glue wraps what a lab plugs in and counts what passes, so the solution
// and the learner's code are measured alike, and neither needs an
// accessor of its own.

// tally numbers the attempts of one call below a retrying or hedging
// transport, and remembers which attempt each response came from.
type tally struct {
	mu      sync.Mutex
	n       int
	from    map[*http.Response]int
	lastEnd time.Time // when the latest attempt's round trip returned
}

type tallyKey struct{}

// tallied wraps rt, a retrying or hedging transport whose base is
// countAttempts: each call gets a tally on its context, so the attempts
// below can be numbered. When won is not nil, a call answered by an
// attempt after its first counts in it (a hedge that won). A transport
// that sends an attempt on a context not derived from the caller's is not
// counted below.
func tallied(rt http.RoundTripper, won *atomic.Int64) http.RoundTripper {
	return roundTripper{func(r *http.Request) (*http.Response, error) {
		t := &tally{from: map[*http.Response]int{}}
		resp, err := rt.RoundTrip(r.WithContext(context.WithValue(r.Context(), tallyKey{}, t)))
		if won != nil && resp != nil {
			t.mu.Lock()
			n, sent := t.from[resp], t.n
			t.mu.Unlock()
			if n > 1 {
				won.Add(1)
			}
			if sent > 1 {
				tracing.Event(r.Context(), tracing.EventHedgeWon, attribute.Int(tracing.AttrAttempt, n))
			}
		}
		return resp, err
	}, rt}
}

// attemptSpans says how countAttempts traces each attempt: as spans of
// the edge from -> to, hedged copies (hedge) or retries. The zero value
// traces nothing.
type attemptSpans struct {
	tracer   *tracing.Tracer
	from, to string
	hedge    bool
}

// countAttempts wraps base (nil means http.DefaultTransport), the
// transport below a retrying or hedging one: every request it sends counts
// in attempts, except a call's first when countFirst says another counter
// has it, and every request after a call's first counts in extra (retries
// or hedges). With spans set, each attempt is a span of its own, with its
// number and, for a retry, the backoff since the previous one ended.
func countAttempts(base http.RoundTripper, attempts, extra *atomic.Int64, countFirst func() bool, spans attemptSpans) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	below := spans.tracer.Attempts(base, spans.from, spans.to)
	return roundTripper{func(r *http.Request) (*http.Response, error) {
		n := 1
		var backoff time.Duration
		t, _ := r.Context().Value(tallyKey{}).(*tally)
		if t != nil {
			t.mu.Lock()
			t.n++
			n = t.n
			if n > 1 && !t.lastEnd.IsZero() {
				backoff = time.Since(t.lastEnd)
			}
			t.mu.Unlock()
		}
		if n > 1 {
			extra.Add(1)
		}
		if n > 1 || countFirst() {
			attempts.Add(1)
		}
		if spans.tracer != nil {
			a := tracing.Attempt{N: n, Hedge: spans.hedge && n > 1}
			if !spans.hedge {
				a.BackoffMs = float64(backoff) / float64(time.Millisecond)
			}
			r = r.WithContext(tracing.WithAttempt(r.Context(), a))
		}
		resp, err := below.RoundTrip(r)
		if t != nil {
			t.mu.Lock()
			if resp != nil {
				t.from[resp] = n
			}
			t.lastEnd = time.Now()
			t.mu.Unlock()
		}
		return resp, err
	}, base}
}

// roundTripper is an http.RoundTripper made of a function, which passes
// CloseIdleConnections on to the transport it wraps, so that the system's
// shutdown still reaches the connections below.
type roundTripper struct {
	fn    func(*http.Request) (*http.Response, error)
	below http.RoundTripper
}

func (rt roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return rt.fn(r) }

func (rt roundTripper) CloseIdleConnections() {
	if c, ok := rt.below.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// breakerState reads a breaker's State.String() as reports name it:
// "closed", "open", "half-open" (or "half_open"); other text is passed on
// as it is.
func breakerState(s string) metrics.BreakerState {
	switch s {
	case "closed":
		return metrics.BreakerClosed
	case "open":
		return metrics.BreakerOpen
	case "half-open", "half_open":
		return metrics.BreakerHalfOpen
	}
	return metrics.BreakerState(strings.ReplaceAll(s, "-", "_"))
}

// breakerBook reports breakers it cannot read directly (those a
// constructor made inside a client) from their reported state changes.
// A breaker is registered at its first change (before it, it has always
// been closed); an open one reads as half-open once openFor has passed,
// as the breaker itself would say when next asked.
type breakerBook struct {
	m       *metrics.Metrics
	openFor time.Duration

	mu    sync.Mutex
	state map[string]metrics.BreakerState
	since map[string]time.Time
}

func newBreakerBook(m *metrics.Metrics, openFor time.Duration) *breakerBook {
	return &breakerBook{m: m, openFor: openFor, state: map[string]metrics.BreakerState{}, since: map[string]time.Time{}}
}

// changed records that breaker name moved to state to. It runs inside
// the breaker's OnStateChange, with the breaker's lock held: it takes the
// book's lock only to record, and registers a new name after releasing it.
func (b *breakerBook) changed(name string, to metrics.BreakerState) {
	b.mu.Lock()
	_, known := b.state[name]
	b.state[name], b.since[name] = to, time.Now()
	b.mu.Unlock()
	if !known {
		b.m.ReportBreaker(name, func() metrics.BreakerState { return b.read(name) })
	}
}

func (b *breakerBook) read(name string) metrics.BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.state[name]
	if s == metrics.BreakerOpen && time.Since(b.since[name]) >= b.openFor {
		return metrics.BreakerHalfOpen
	}
	return s
}

// outcomes counts, on edge, why a call along it got no answer from the
// dependency: a timeout (the caller gave up: fooddelivery.ErrTimeout or
// context.DeadlineExceeded) or a refusal by the edge's circuit breaker
// (ErrCircuitOpen), or the dependency's refusal at its concurrency limit
// (its 503 "overloaded"). A full bulkhead is counted by countSlots, which
// alone knows whether the call ran.
//
// An error that carries the dependency's answer (a *fooddelivery.CallError
// with a status: the order service's 504 when payment timed out) happened
// further down, where it was counted, and does not count here.
//
// The breaker's refusals and the timeouts are recorded on the span in ctx
// too (tracing.EventBreakerRefused, tracing.EventTimeout).
func outcomes(ctx context.Context, edge *metrics.EdgeStats, err error) {
	var answered *fooddelivery.CallError
	switch {
	case err == nil:
	case errors.As(err, &answered) && answered.Status == http.StatusServiceUnavailable && answered.Code == "overloaded":
		edge.Overloaded.Add(1) // the dependency's own concurrency limit (fooddelivery.Instance)
	case answered != nil && answered.Status != 0:
	case errors.Is(err, fooddelivery.ErrCircuitOpen):
		edge.BreakerOpen.Add(1)
		tracing.Event(ctx, tracing.EventBreakerRefused)
	case errors.Is(err, fooddelivery.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		edge.Timeouts.Add(1)
		tracing.Event(ctx, tracing.EventTimeout)
	}
}

// outcomePayer counts the breaker's refusals and payment's overload of
// the order service's charges, each once, outside the breaker and every
// retry loop (the timeouts are countTimeouts').
type outcomePayer struct {
	next fooddelivery.Payer
	edge *metrics.EdgeStats
}

func (p outcomePayer) Charge(ctx context.Context, req fooddelivery.ChargeRequest) (fooddelivery.Charge, error) {
	ch, err := p.next.Charge(ctx, req)
	if !timedOut(err) {
		outcomes(ctx, p.edge, err)
	}
	return ch, err
}

// timedOut reports whether err is a timeout of the caller's own, which
// outcomes would count.
func timedOut(err error) bool {
	var answered *fooddelivery.CallError
	if errors.As(err, &answered) && answered.Status != 0 {
		return false
	}
	return errors.Is(err, fooddelivery.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
}

// countTimeouts wraps the transport of an http.Client so that every call
// of the client that its timeout or its caller's deadline cut off counts
// in Timeouts of edge: below the retry loops above the client, each
// attempt of theirs counts.
func countTimeouts(base http.RoundTripper, edge *metrics.EdgeStats) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper{func(r *http.Request) (*http.Response, error) {
		start := time.Now()
		resp, err := base.RoundTrip(r)
		var ne net.Error
		if err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() || pastDeadline(r.Context())) {
			edge.Timeouts.Add(1)
			tracing.Event(r.Context(), tracing.EventTimeout, attribute.Float64(tracing.AttrElapsedMs, float64(time.Since(start))/float64(time.Millisecond)))
		}
		return resp, err
	}, base}
}

// pastDeadline reports whether ctx's deadline has passed. http.Client
// enforces its Timeout with a deadline on the request's context and, for
// a transport it does not know (a wrapper such as countTimeouts), with a
// timer that closes Request.Cancel at the same instant: whichever fires
// first decides whether the transport returns a timeout or "net/http:
// request canceled", so the error alone cannot tell.
func pastDeadline(ctx context.Context) bool {
	deadline, ok := ctx.Deadline()
	return ok && !time.Now().Before(deadline)
}

// outcomeAuth counts the outcomes of the gateway's auth checks.
type outcomeAuth struct {
	next fooddelivery.Authorizer
	edge *metrics.EdgeStats
}

func (a outcomeAuth) Authorize(ctx context.Context, token string) (string, error) {
	user, err := a.next.Authorize(ctx, token)
	outcomes(ctx, a.edge, err)
	return user, err
}

// budgetWatch counts, in BudgetSpent, the calls a budgeted retry loop
// ended on a failure it could retry (retry.Retryable), before its last
// attempt, while its caller still waited: the budget withheld the retry.
// The loop itself cannot be asked, since a learner's need not say.
type budgetWatch struct {
	next     retry.Retrier
	attempts int
	edge     *metrics.EdgeStats
}

func (b budgetWatch) Do(ctx context.Context, key string, call func(ctx context.Context, attempt int) error) error {
	var made atomic.Int64
	var last atomic.Pointer[error]
	err := b.next.Do(ctx, key, func(ctx context.Context, attempt int) error {
		made.Add(1)
		err := call(ctx, attempt)
		last.Store(&err)
		return err
	})
	if err != nil && ctx.Err() == nil && int(made.Load()) < b.attempts {
		if p := last.Load(); p != nil && retry.Retryable(*p) {
			b.edge.BudgetSpent.Add(1)
			tracing.Event(ctx, tracing.EventBudgetRefused)
		}
	}
	return err
}

// counting is a Guard that runs every call and hands its error to count:
// with fooddelivery.GuardOrderService and its siblings it counts what a
// dependency's answers say without a wrapper type per interface.
func counting(edge *metrics.EdgeStats, count func(context.Context, *metrics.EdgeStats, error)) fooddelivery.Guard {
	return func(ctx context.Context, call func(context.Context) error) error {
		err := call(ctx)
		count(ctx, edge, err)
		return err
	}
}

// gatewayEdge names the service behind one of the gateway's dependencies
// (system.GatewayOrders is the order service).
func gatewayEdge(dependency string) string {
	if dependency == system.GatewayOrders {
		return "order"
	}
	return dependency
}

// countSlots wraps g, the bulkhead guarding the gateway's calls to
// service, so that it reports its slots in use as the compartment
// "gateway->service" with capacity slots, and counts the calls it refused
// (ErrBulkheadFull without running the call) in BulkheadFull.
func countSlots(g fooddelivery.Guard, m *metrics.Metrics, service string, capacity int) fooddelivery.Guard {
	var inUse atomic.Int64
	m.ReportBulkhead("gateway->"+service, capacity, func() int { return int(inUse.Load()) })
	edge := m.Edge("gateway", service)
	return func(ctx context.Context, call func(context.Context) error) error {
		var ran atomic.Bool
		start := time.Now()
		err := g(ctx, func(ctx context.Context) error {
			ran.Store(true)
			if waited := time.Since(start); waited >= time.Millisecond {
				tracing.Event(ctx, tracing.EventBulkheadWaited, attribute.Float64(tracing.AttrWaitedMs, float64(waited)/float64(time.Millisecond)))
			}
			inUse.Add(1)
			defer inUse.Add(-1)
			return call(ctx)
		})
		if !ran.Load() && errors.Is(err, fooddelivery.ErrBulkheadFull) {
			edge.BulkheadFull.Add(1)
			tracing.Event(ctx, tracing.EventBulkheadFull, attribute.Float64(tracing.AttrWaitedMs, float64(time.Since(start))/float64(time.Millisecond)))
		}
		return err
	}
}

// countFallbacks wraps the gateway's dependencies d so that every answer a
// fallback served (an error carrying a *gateway.FallbackError, next to
// the fallback's value) counts in Fallbacks of the gateway's edge to the
// service behind it. The auth check has no fallback answer: when auth is
// down it denies.
func countFallbacks(d gateway.Deps, m *metrics.Metrics) gateway.Deps {
	menus, courier, orders := m.Edge("gateway", "menu"), m.Edge("gateway", "courier"), m.Edge("gateway", "order")
	if d.Menu != nil {
		d.Menu = fooddelivery.GuardMenuReader(d.Menu, counting(menus, fellBack))
	}
	if d.Recs != nil {
		d.Recs = fallbackRecs{d.Recs, menus}
	}
	if d.Reviews != nil {
		d.Reviews = fallbackReviews{d.Reviews, menus}
	}
	if d.ETA != nil {
		d.ETA = fooddelivery.GuardETAReader(d.ETA, counting(courier, fellBack))
	}
	if d.Orders != nil {
		d.Orders = fooddelivery.GuardOrderService(d.Orders, counting(orders, fellBack))
	}
	return d
}

func fellBack(ctx context.Context, edge *metrics.EdgeStats, err error) {
	var fe *gateway.FallbackError
	if errors.As(err, &fe) {
		edge.Fallbacks.Add(1)
		tracing.Event(ctx, tracing.EventFallback, attribute.String(tracing.AttrFallback, fe.Code))
	}
}

type fallbackRecs struct {
	next fooddelivery.Recommender
	edge *metrics.EdgeStats
}

func (f fallbackRecs) Recommendations(ctx context.Context, user string) ([]fooddelivery.Dish, error) {
	out, err := f.next.Recommendations(ctx, user)
	fellBack(ctx, f.edge, err)
	return out, err
}

func (f fallbackRecs) Popular(ctx context.Context) ([]fooddelivery.Dish, error) {
	out, err := f.next.Popular(ctx)
	fellBack(ctx, f.edge, err)
	return out, err
}

type fallbackReviews struct {
	next fooddelivery.ReviewStore
	edge *metrics.EdgeStats
}

func (f fallbackReviews) SubmitReview(ctx context.Context, r fooddelivery.Review) (fooddelivery.Review, error) {
	out, err := f.next.SubmitReview(ctx, r)
	fellBack(ctx, f.edge, err)
	return out, err
}

// replays wraps the payment service's key store so that every outcome it
// replays for a repeated key counts in Replays of the edge order->payment.
type replays struct {
	payment.KeyStore
	edge *metrics.EdgeStats
}

func (r replays) Begin(key string, req fooddelivery.ChargeRequest) (*payment.Outcome, error) {
	o, err := r.KeyStore.Begin(key, req)
	if err == nil && o != nil {
		r.edge.Replays.Add(1)
	}
	return o, err
}
