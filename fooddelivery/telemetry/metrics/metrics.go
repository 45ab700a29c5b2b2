package metrics

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics is the counter registry of one running system. Services count
// what reaches them per route; clients count what they send per edge. Tests
// read these counters to assert behaviour a stub cannot fake. The zero value
// is not usable; call NewMetrics. A nil *Metrics is allowed everywhere and
// counts nothing.
type Metrics struct {
	mu        sync.Mutex
	limits    map[string]int // by instance; 0 is no limit
	routes    map[string]*RouteStats
	edges     map[string]*EdgeStats
	breakers  map[string]func() BreakerState
	bulkheads map[string]bulkheadReader
	budgets   map[string]func() float64
	// chargedTwice reads the number of orders charged more than once; nil
	// until ReportChargedTwice.
	chargedTwice func() int
	// sources read the snapshots of other processes (AddSource).
	sources []func() (Snapshot, bool)
}

type bulkheadReader struct {
	inUse    func() int
	capacity int
}

// NewMetrics returns an empty registry.
func NewMetrics() *Metrics {
	return &Metrics{
		limits: map[string]int{}, routes: map[string]*RouteStats{}, edges: map[string]*EdgeStats{},
		breakers: map[string]func() BreakerState{}, bulkheads: map[string]bulkheadReader{}, budgets: map[string]func() float64{},
	}
}

// BreakerState is a circuit breaker's state as reports name it: "closed",
// "open" or "half_open" (the names resilience4j's metrics use).
type BreakerState string

// The states of a circuit breaker.
const (
	BreakerClosed   BreakerState = "closed"
	BreakerOpen     BreakerState = "open"
	BreakerHalfOpen BreakerState = "half_open"
)

// ReportBreaker registers state as the reader of the current state of the
// circuit breaker named name (an edge such as "order->payment"); reports
// call it when they are made. A later call for the same name replaces the
// reader. Transitions are counted separately, in EdgeStats.BreakerTransitions.
func (m *Metrics) ReportBreaker(name string, state func() BreakerState) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.breakers[name] = state
}

// ReportLimit records the concurrency limit of the instance named
// instance (NewInstance calls it): requests it handles at once, 0 for no
// limit. Snapshots report it beside the instance's routes, so a report
// shows how full an instance is.
func (m *Metrics) ReportLimit(instance string, limit int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.limits[instance] = limit
}

// ReportBulkhead registers the bulkhead compartment named compartment
// (for example "gateway->menu"): capacity is its number of slots and inUse
// reads how many are taken now.
func (m *Metrics) ReportBulkhead(compartment string, capacity int, inUse func() int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bulkheads[compartment] = bulkheadReader{inUse: inUse, capacity: capacity}
}

// ReportRetryBudget registers tokens as the reader of the tokens left in
// the retry budget named name (an edge). An implementation that cannot
// tell its tokens is not registered: reports show no number rather than an
// invented one.
func (m *Metrics) ReportRetryBudget(name string, tokens func() float64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.budgets[name] = tokens
}

// ReportChargedTwice registers orders as the reader of the number of
// orders charged more than once (payment.Ledger.OrdersChargedMoreThanOnce
// of the system's ledger). Metrics does not know the ledger: until this is
// called, snapshots leave the number out. A later call replaces the reader.
func (m *Metrics) ReportChargedTwice(orders func() int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.chargedTwice = orders
}

// RouteStats counts what one route of one service instance saw. Fields are
// updated atomically and may be read at any time. Instance.RouteWith also
// records each request's status code and latency, read with Responses and
// Latency.
type RouteStats struct {
	Received     atomic.Int64 // requests that reached the route, rejected ones included
	InFlight     atomic.Int64 // requests being handled now
	PeakInFlight atomic.Int64 // highest InFlight seen
	Completed    atomic.Int64 // requests the handler finished (any status)
	Rejected     atomic.Int64 // requests refused at the concurrency limit (503)
	Cancelled    atomic.Int64 // requests whose caller gave up (context cancelled) before the handler finished

	// WorkAfterCallerLeft counts units of work (a downstream call, a
	// charge, a simulated computation) that a handler started after its
	// caller had already given up: work nobody waits for.
	WorkAfterCallerLeft atomic.Int64
	// WastedWork is the virtual time spent on those units, in nanoseconds
	// (read it with WastedWorkDuration). A service that knows when its
	// caller left (order.Deps.Callers, lab 02) also adds the part of a
	// unit that was still running at that moment.
	WastedWork atomic.Int64

	latency latencyHistogram
	fine    fineLatency
	codes   statusCounts
}

// Observe records the end of a request: the status it was answered with
// (an HTTP status code, StatusNoResponse for none) and how long it took.
// The instance serving the route calls it once per request.
func (s *RouteStats) Observe(code int, d time.Duration) {
	s.latency.observe(d)
	s.fine.observe(d)
	s.codes.add(code)
}

// ObserveTraced is Observe for a request that is traced: traceID, the
// request's OpenTelemetry trace id (16 bytes), becomes the exemplar of the
// latency bucket d falls in (Histogram.Exemplars), replacing the one
// before it, with at, the time the request ended. A zero traceID (no
// trace) records no exemplar, as Observe. It takes no lock and allocates
// nothing.
func (s *RouteStats) ObserveTraced(code int, d time.Duration, traceID [16]byte, at time.Time) {
	if traceID == ([16]byte{}) {
		s.Observe(code, d)
		return
	}
	s.latency.observeTraced(d, traceID, at)
	s.fine.observe(d)
	s.codes.add(code)
}

// Responses returns how many requests were answered with the HTTP status
// code (StatusNoResponse: requests that got no response), rejected ones
// included.
func (s *RouteStats) Responses(code int) int64 { return s.codes.get(code) }

// Latency returns the histogram of the latencies of the requests answered
// so far, rejected ones included, over the buckets of LatencyBuckets.
func (s *RouteStats) Latency() Histogram { return s.latency.snapshot() }

// LatencySketch returns the same latencies in the fine buckets of
// LatencySketch, whose quantiles are within SketchAccuracy of the true
// ones.
func (s *RouteStats) LatencySketch() LatencySketch { return s.fine.snapshot() }

// Enter records that a request admitted by the concurrency limit started,
// and returns the new in-flight count. (Received is counted separately,
// before the limit, so rejected requests never count as in flight.)
func (s *RouteStats) Enter() int64 {
	n := s.InFlight.Add(1)
	for {
		peak := s.PeakInFlight.Load()
		if n <= peak || s.PeakInFlight.CompareAndSwap(peak, n) {
			return n
		}
	}
}

// Leave records the end of a request entered with Enter.
func (s *RouteStats) Leave() { s.InFlight.Add(-1) }

// WastedWorkDuration returns WastedWork as a duration.
func (s *RouteStats) WastedWorkDuration() time.Duration { return time.Duration(s.WastedWork.Load()) }

// EdgeStats counts what one client sent along one edge (from a caller to a
// dependency). Resilience code in the labs updates the fields that fit it.
type EdgeStats struct {
	Attempts           atomic.Int64 // every call sent, first attempts, retries and hedges together
	Retries            atomic.Int64 // attempts after the first that were retries
	Hedges             atomic.Int64 // hedged copies sent
	HedgesWon          atomic.Int64 // calls whose answer came from a hedged copy
	Fallbacks          atomic.Int64 // answers served by a fallback instead of the dependency
	BreakerTransitions atomic.Int64 // circuit breaker state changes
	Replays            atomic.Int64 // answers the dependency replayed for a repeated idempotency key

	// Why calls along the edge did not get the dependency's answer, as
	// the caller saw it, each event counted once (a call that timed out
	// and whose retry the budget then withheld counts in both):
	Timeouts     atomic.Int64 // calls the caller gave up on at its timeout or deadline (ErrTimeout, context.DeadlineExceeded)
	BreakerOpen  atomic.Int64 // calls the edge's circuit breaker refused without sending them (ErrCircuitOpen)
	BulkheadFull atomic.Int64 // calls the edge's bulkhead compartment refused without sending them (ErrBulkheadFull)
	BudgetSpent  atomic.Int64 // retries the retry budget withheld: a retryable failure answered with no further attempt
	Overloaded   atomic.Int64 // calls the dependency refused at its concurrency limit (its own 503 "overloaded")
}

// Route returns the counters of service's route (for example "payment",
// "POST /charges"), creating them on first use. Instances of a replicated
// service use names like "menu-1".
func (m *Metrics) Route(service, route string) *RouteStats {
	if m == nil {
		return &RouteStats{}
	}
	k := service + " " + route
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.routes[k]
	if !ok {
		s = &RouteStats{}
		m.routes[k] = s
	}
	return s
}

// Edge returns the counters of the edge from caller to dependency (for
// example "order", "payment"), creating them on first use.
func (m *Metrics) Edge(from, to string) *EdgeStats {
	if m == nil {
		return &EdgeStats{}
	}
	k := from + "->" + to
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.edges[k]
	if !ok {
		s = &EdgeStats{}
		m.edges[k] = s
	}
	return s
}

// Routes lists the registered "service route" keys in order, for reports.
func (m *Metrics) Routes() []string {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := make([]string, 0, len(m.routes))
	for k := range m.routes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ServiceReceived sums Received over every route of service.
func (m *Metrics) ServiceReceived(service string) int64 {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for k, s := range m.routes {
		if len(k) > len(service) && k[:len(service)] == service && k[len(service)] == ' ' {
			n += s.Received.Load()
		}
	}
	return n
}
