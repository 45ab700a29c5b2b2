package metrics

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"
)

// Snapshot is every number of a Metrics at one moment, in plain values
// that encode to JSON as they are: what a dashboard shows and what an
// exporter such as package telemetry turns into Prometheus metrics, so
// both read the same numbers. Durations are in seconds. Counters (the
// int64 fields named for events) only grow over a system's life; gauges
// (in flight, states, slots, tokens) go up and down.
type Snapshot struct {
	// Time is when the snapshot was taken, by package time (under
	// testing/synctest, the bubble's fake clock).
	Time time.Time `json:"time"`
	// Routes holds one entry per route of each service instance that has
	// counters, sorted by instance, then route.
	Routes []RouteSnapshot `json:"routes"`
	// Limits is each instance's concurrency limit (Metrics.ReportLimit),
	// by instance name; 0 means no limit. Never nil.
	Limits map[string]int `json:"limits"`
	// Edges holds one entry per client edge that has counters, sorted by
	// caller, then dependency.
	Edges []EdgeSnapshot `json:"edges"`
	// Breakers, Bulkheads and RetryBudgets hold the patterns registered
	// with ReportBreaker, ReportBulkhead and ReportRetryBudget, sorted by
	// name. A pattern that was not registered is absent: nothing is
	// invented for it.
	Breakers     []BreakerSnapshot     `json:"breakers"`
	Bulkheads    []BulkheadSnapshot    `json:"bulkheads"`
	RetryBudgets []RetryBudgetSnapshot `json:"retryBudgets"`
	// OrdersChargedMoreThanOnce is the number of orders that were charged
	// two or more times, or nil (absent from JSON) when no reader was
	// registered with ReportChargedTwice.
	OrdersChargedMoreThanOnce *int64 `json:"ordersChargedMoreThanOnce,omitempty"`
}

// RouteSnapshot is the counters of one route of one service instance (see
// RouteStats for what each one counts).
type RouteSnapshot struct {
	Service  string `json:"service"`  // the service: "menu" for instance "menu-2" (ServiceOf)
	Instance string `json:"instance"` // the instance: "payment", "menu-2"
	Route    string `json:"route"`    // the route: "POST /charges"

	Received     int64 `json:"received"`     // counter: requests that arrived, rejected ones included
	InFlight     int64 `json:"inFlight"`     // gauge: requests being handled now
	PeakInFlight int64 `json:"peakInFlight"` // gauge: highest InFlight seen
	Completed    int64 `json:"completed"`    // counter: requests whose handler returned
	Rejected     int64 `json:"rejected"`     // counter: requests refused at the concurrency limit
	Cancelled    int64 `json:"cancelled"`    // counter: requests whose caller gave up before the handler returned

	WorkAfterCallerLeft        int64   `json:"workAfterCallerLeft"`        // counter: units of work started after the caller gave up
	WorkAfterCallerLeftSeconds float64 `json:"workAfterCallerLeftSeconds"` // counter: virtual time spent on them (RouteStats.WastedWork)

	// Responses counts answered requests by HTTP status code, rejected
	// ones included (503); code StatusNoResponse counts requests that got
	// no response. Never nil. In JSON the codes are object keys ("200").
	Responses map[int]int64 `json:"responses"`
	// Latency is the distribution of the durations of the requests in
	// Responses, arrival to answer.
	Latency Histogram `json:"latency"`
	// Sketch is the same durations in fine buckets, for quantiles within
	// SketchAccuracy (what the dashboard shows); it is left out of JSON.
	Sketch LatencySketch `json:"-"`
}

// EdgeSnapshot is the counters of one client edge (see EdgeStats).
type EdgeSnapshot struct {
	Edge       string `json:"edge"`       // "order->payment"
	Caller     string `json:"caller"`     // "order"
	Dependency string `json:"dependency"` // "payment"

	Attempts           int64 `json:"attempts"`
	Retries            int64 `json:"retries"`
	Hedges             int64 `json:"hedges"`
	HedgesWon          int64 `json:"hedgesWon"`
	Fallbacks          int64 `json:"fallbacks"`
	BreakerTransitions int64 `json:"breakerTransitions"`
	Replays            int64 `json:"replays"`
	Timeouts           int64 `json:"timeouts"`
	BreakerOpen        int64 `json:"breakerOpen"`
	BulkheadFull       int64 `json:"bulkheadFull"`
	BudgetSpent        int64 `json:"budgetSpent"`
	Overloaded         int64 `json:"overloaded"`
}

// BreakerSnapshot is the state of a circuit breaker registered with
// ReportBreaker.
type BreakerSnapshot struct {
	Name  string       `json:"name"` // the edge it guards, as registered
	State BreakerState `json:"state"`
}

// BulkheadSnapshot is the slots of a bulkhead compartment registered with
// ReportBulkhead.
type BulkheadSnapshot struct {
	Compartment string `json:"compartment"`
	InUse       int    `json:"inUse"`    // slots taken now
	Capacity    int    `json:"capacity"` // slots in all
}

// RetryBudgetSnapshot is the tokens left in a retry budget registered with
// ReportRetryBudget.
type RetryBudgetSnapshot struct {
	Name   string  `json:"name"`
	Tokens float64 `json:"tokens"`
}

// Snapshot reads every counter and calls every registered reader once. It
// holds the registry's lock only to list what is registered; counters are
// read atomically, one by one, while requests go on, so numbers of one
// route may be a request apart. They are read in an order that keeps the
// obvious sums true: a route's Received is at least its answered
// Responses, and a histogram's Count is the sum of its buckets. Readers
// run outside the lock; they must not block for long. The snapshots of
// the sources given to AddSource (other processes) are merged in last. A
// nil Metrics gives an empty Snapshot.
func (m *Metrics) Snapshot() Snapshot {
	snap := Snapshot{
		Time:   time.Now(),
		Routes: []RouteSnapshot{}, Limits: map[string]int{}, Edges: []EdgeSnapshot{},
		Breakers: []BreakerSnapshot{}, Bulkheads: []BulkheadSnapshot{}, RetryBudgets: []RetryBudgetSnapshot{},
	}
	if m == nil {
		return snap
	}
	type route struct {
		instance, route string
		s               *RouteStats
	}
	type edge struct {
		from, to string
		s        *EdgeStats
	}
	m.mu.Lock()
	routes := make([]route, 0, len(m.routes))
	for k, s := range m.routes {
		instance, r, _ := strings.Cut(k, " ")
		routes = append(routes, route{instance, r, s})
	}
	edges := make([]edge, 0, len(m.edges))
	for k, s := range m.edges {
		from, to, _ := strings.Cut(k, "->")
		edges = append(edges, edge{from, to, s})
	}
	breakers, bulkheads, budgets := maps.Clone(m.breakers), maps.Clone(m.bulkheads), maps.Clone(m.budgets)
	maps.Copy(snap.Limits, m.limits)
	chargedTwice := m.chargedTwice
	sources := slices.Clone(m.sources)
	m.mu.Unlock()

	slices.SortFunc(routes, func(a, b route) int {
		return cmp.Or(cmp.Compare(a.instance, b.instance), cmp.Compare(a.route, b.route))
	})
	for _, r := range routes {
		snap.Routes = append(snap.Routes, r.s.snapshot(r.instance, r.route))
	}
	slices.SortFunc(edges, func(a, b edge) int {
		return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to))
	})
	for _, e := range edges {
		s := e.s
		snap.Edges = append(snap.Edges, EdgeSnapshot{
			Edge: e.from + "->" + e.to, Caller: e.from, Dependency: e.to,
			Attempts:           s.Attempts.Load(),
			Retries:            s.Retries.Load(),
			Hedges:             s.Hedges.Load(),
			HedgesWon:          s.HedgesWon.Load(),
			Fallbacks:          s.Fallbacks.Load(),
			BreakerTransitions: s.BreakerTransitions.Load(),
			Replays:            s.Replays.Load(),
			Timeouts:           s.Timeouts.Load(),
			BreakerOpen:        s.BreakerOpen.Load(),
			BulkheadFull:       s.BulkheadFull.Load(),
			BudgetSpent:        s.BudgetSpent.Load(),
			Overloaded:         s.Overloaded.Load(),
		})
	}
	for _, name := range slices.Sorted(maps.Keys(breakers)) {
		snap.Breakers = append(snap.Breakers, BreakerSnapshot{Name: name, State: breakers[name]()})
	}
	for _, name := range slices.Sorted(maps.Keys(bulkheads)) {
		b := bulkheads[name]
		snap.Bulkheads = append(snap.Bulkheads, BulkheadSnapshot{Compartment: name, InUse: b.inUse(), Capacity: b.capacity})
	}
	for _, name := range slices.Sorted(maps.Keys(budgets)) {
		snap.RetryBudgets = append(snap.RetryBudgets, RetryBudgetSnapshot{Name: name, Tokens: budgets[name]()})
	}
	if chargedTwice != nil {
		n := int64(chargedTwice())
		snap.OrdersChargedMoreThanOnce = &n
	}
	for _, read := range sources {
		if o, ok := read(); ok {
			snap = snap.merge(o)
		}
	}
	return snap
}

// snapshot reads the route's counters, those that count answers first, so
// that Received (read last) is never below them.
func (s *RouteStats) snapshot(instance, route string) RouteSnapshot {
	out := RouteSnapshot{Service: ServiceOf(instance), Instance: instance, Route: route}
	out.Responses = s.codes.snapshot()
	out.Latency = s.latency.snapshot()
	out.Sketch = s.fine.snapshot()
	out.WorkAfterCallerLeft = s.WorkAfterCallerLeft.Load()
	out.WorkAfterCallerLeftSeconds = time.Duration(s.WastedWork.Load()).Seconds()
	out.Cancelled = s.Cancelled.Load()
	out.Completed = s.Completed.Load()
	out.Rejected = s.Rejected.Load()
	out.InFlight = s.InFlight.Load()
	out.PeakInFlight = s.PeakInFlight.Load()
	out.Received = s.Received.Load()
	return out
}

// ServiceOf returns the service an instance belongs to: "menu" for the
// replica "menu-2" (a name ending in "-" and digits), and the name itself
// for any other instance ("payment").
func ServiceOf(instance string) string {
	i := strings.LastIndexByte(instance, '-')
	if i <= 0 || i == len(instance)-1 {
		return instance
	}
	for _, c := range instance[i+1:] {
		if c < '0' || c > '9' {
			return instance
		}
	}
	return instance[:i]
}
