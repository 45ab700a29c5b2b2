// Package dashboard serves a live page a room can watch while the
// food-delivery system runs: the services as a diagram whose call edges
// are coloured by health, the breakers, bulkheads, retries, hedges,
// fallbacks and replays of the labs, charts of the last few minutes with
// a marker wherever a fault was switched on or off, and controls that
// call the admin API.
//
// The page and its assets are embedded files (no build step, no request
// leaves the gateway's address). A Dashboard takes one Metrics.Snapshot
// a second (Interval), keeps what it needs of the last few minutes in a
// ring (History), and serves:
//
//	GET /                   the page, every panel (the same as /?view=full)
//	GET /?view=room         the page laid out for a projector: it fits 1280x720 CSS px
//	                        without scrolling, the diagram large beside checkout
//	                        success, the customers' rate, the breakers, the bulkheads'
//	                        slots, hedges and the latest change
//	GET /?view=traces       the trace view, also for 1280x720: the latest traces of the
//	                        admin API (GET /admin/traces on the same origin), filtered
//	                        by ?flow= and ?outcome=, and the one picked (?trace=ID, or
//	                        newest) as a waterfall of its spans and events (ViewTraces);
//	                        any other view or query parameter is 400, in plain text
//	GET /dashboard/static/  its script and style sheet
//	GET /dashboard/state    JSON: the latest frame, the history, the change log,
//	                        the scenario status, the load, the labs, the thresholds
//	GET /dashboard/events   server-sent events: one "frame" event per tick, with the
//	                        changes logged since the previous event (?after=N: since
//	                        change number N), the scenario status, the load and the labs
//
// Rates, error rates and p99 latencies are over the last Window (10s),
// from the differences of cumulative counters and of fine latency
// buckets, so that a p99 is within fooddelivery.SketchAccuracy (2%) of the
// true p99 of the answers in the window.
// An edge's requests are counted at its dependency (see Edges).
package dashboard

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gophereats/resilience/fooddelivery/loadgen"
	"github.com/gophereats/resilience/fooddelivery/scenario"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

// Defaults of Config.
const (
	DefaultInterval = time.Second
	DefaultHistory  = 300 // ticks: five minutes at one a second
	DefaultWindow   = 10 * time.Second
	// DefaultDegraded and DefaultFailing are the error rates at which an
	// edge turns degraded and failing. 50% is the failure rate at which
	// resilience4j's breakers open by default.
	DefaultDegraded = 0.05
	DefaultFailing  = 0.5
	// DefaultMaxStreams is enough for every screen of a workshop room
	// several times over, and little enough that streams cannot starve
	// the gateway they share a process with.
	DefaultMaxStreams = 100
	// StreamWriteTimeout is how long one event may take to reach its
	// client before the stream ends.
	StreamWriteTimeout = 10 * time.Second
	// maxTransitions bounds the breaker transitions kept.
	maxTransitions = 200
)

// Config says what a Dashboard reads.
type Config struct {
	// Metrics is the system's registry. Required.
	Metrics *metrics.Metrics
	// Log is the change log; nil shows no changes.
	Log *scenario.Log
	// Status reads the scenario runner's status (Runner.Status); nil
	// shows none.
	Status func() scenario.Status
	// Load reads the load generator's counters (Generator.Stats); nil
	// shows none, and no checkout success rate.
	Load func() loadgen.Stats
	// Labs says what runs at each lab's integration point, one line a
	// lab, as the banner prints them.
	Labs []string
	// Interval is the time between ticks; 0 means DefaultInterval.
	Interval time.Duration
	// History is the number of ticks kept; 0 means DefaultHistory.
	History int
	// Window is the time rates and p99s are measured over; 0 means
	// DefaultWindow.
	Window time.Duration
	// Degraded and Failing are the error rates at which an edge's health
	// turns degraded and failing; 0 means DefaultDegraded and
	// DefaultFailing.
	Degraded, Failing float64
	// MaxStreams is the most event streams open at once; past it a new
	// one is refused with 503 and Retry-After. 0 means DefaultMaxStreams.
	MaxStreams int
}

// Dashboard samples a system's metrics and serves the page. Start it
// before serving and Close it when done.
type Dashboard struct {
	cfg Config

	mu          sync.Mutex
	samples     []*sample // ring, History long, oldest at start
	points      []Point   // ring beside samples
	start       int
	latest      *Frame
	transitions []Transition
	tick        chan struct{} // closed and replaced at every tick
	closed      chan struct{}
	stopOnce    sync.Once
	started     atomic.Bool
	streams     atomic.Int64 // event streams open now
	done        chan struct{}
}

// New returns a Dashboard for cfg; it panics without cfg.Metrics.
func New(cfg Config) *Dashboard {
	if cfg.Metrics == nil {
		panic("dashboard: Config.Metrics is required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.History <= 0 {
		cfg.History = DefaultHistory
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Degraded <= 0 {
		cfg.Degraded = DefaultDegraded
	}
	if cfg.Failing <= 0 {
		cfg.Failing = DefaultFailing
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = DefaultMaxStreams
	}
	if cfg.Labs == nil {
		cfg.Labs = []string{}
	}
	return &Dashboard{cfg: cfg, tick: make(chan struct{}), closed: make(chan struct{}), done: make(chan struct{})}
}

// Start takes a first sample now and one every Interval until Close.
func (d *Dashboard) Start() {
	if d.started.Swap(true) {
		return
	}
	d.Sample()
	go func() {
		defer close(d.done)
		t := time.NewTicker(d.cfg.Interval)
		defer t.Stop()
		for {
			select {
			case <-d.closed:
				return
			case <-t.C:
				d.Sample()
			}
		}
	}()
}

// Close stops the ticks and ends every event stream. It waits for the
// ticker if Start was called.
func (d *Dashboard) Close() {
	d.stopOnce.Do(func() { close(d.closed) })
	if d.started.Load() {
		<-d.done
	}
}

// Point is one tick of the history: what the charts draw.
type Point struct {
	Time time.Time `json:"t"`
	// CheckoutSuccess is the share of checkouts that succeeded over the
	// window (nil: none finished); CheckoutRate finished checkouts a
	// second.
	CheckoutSuccess *float64 `json:"checkoutSuccess"`
	CheckoutRate    float64  `json:"checkoutRate"`
	// P99 is each service's p99 latency in seconds over the window.
	P99 map[string]*float64 `json:"p99"`
	// EdgeRate and EdgeErrorRate are each edge's requests a second and
	// share of errors over the window.
	EdgeRate      map[string]float64  `json:"edgeRate"`
	EdgeErrorRate map[string]*float64 `json:"edgeErrorRate"`
	// Breakers is each breaker's state.
	Breakers map[string]string `json:"breakers"`
}

// Frame is the whole state the page shows at one tick.
type Frame struct {
	Time          time.Time                     `json:"time"`
	WindowSeconds float64                       `json:"windowSeconds"`
	Nodes         []Node                        `json:"nodes"`    // Instances, in order
	Services      []Node                        `json:"services"` // Services, in order
	Edges         []Edge                        `json:"edges"`    // Edges, in order
	Breakers      []Breaker                     `json:"breakers"`
	Bulkheads     []Bulkhead                    `json:"bulkheads"`
	RetryBudgets  []metrics.RetryBudgetSnapshot `json:"retryBudgets"`
	Totals        Totals                        `json:"totals"`
	Checkout      Checkout                      `json:"checkout"`
	// Transitions are the breaker transitions seen at this tick.
	Transitions []Transition `json:"transitions"`
	Point       Point        `json:"point"`
}

// Node is a service or an instance over the window.
type Node struct {
	Name         string   `json:"name"`
	Rate         float64  `json:"rate"`
	ErrorRate    *float64 `json:"errorRate"`
	P99          *float64 `json:"p99"`
	InFlight     int64    `json:"inFlight"`
	Rejected     int64    `json:"rejected"` // counter: refused at the concurrency limit
	PeakInFlight int64    `json:"peakInFlight"`
	// Limit is the concurrency limit InFlight is held to: the
	// instance's, or for a service the sum of its instances'; 0 means
	// none.
	Limit int `json:"limit"`
	// Overloaded is the number of requests refused at the limit over the
	// window (OVERLOADED).
	Overloaded int64 `json:"overloaded"`
}

// The causes an edge's badge names, from the counts of Causes.
const (
	CauseTimeout      = "TIMEOUT"       // the caller gave up at its timeout or deadline
	CauseBreakerOpen  = "BREAKER_OPEN"  // the edge's circuit breaker refused calls
	CauseBulkheadFull = "BULKHEAD_FULL" // the edge's compartment refused calls
	CauseBudgetSpent  = "BUDGET_SPENT"  // the retry budget withheld retries
	CauseOverloaded   = "OVERLOADED"    // the dependency refused calls at its concurrency limit
	CauseFallback     = "FALLBACK"      // a fallback answered instead of the dependency
	// CauseWaiting: none of the above, but more calls are in flight at the
	// dependency than its answers over the window explain (see waiting):
	// it hangs.
	CauseWaiting = "WAITING"
)

// Causes counts, over the window, why calls along an edge did not get
// the dependency's answer, as its caller saw them (timeouts, refusals by
// its breaker, compartment or retry budget, the dependency's refusals at
// its concurrency limit), and the answers a fallback served instead
// (which cover one of the others, when the caller counts it).
type Causes struct {
	Timeouts     int64 `json:"timeouts"`
	BreakerOpen  int64 `json:"breakerOpen"`
	BulkheadFull int64 `json:"bulkheadFull"`
	BudgetSpent  int64 `json:"budgetSpent"`
	Overloaded   int64 `json:"overloaded"`
	Fallbacks    int64 `json:"fallbacks"`
}

// cause names the largest count of c among the failures (the first in
// the order of the Cause constants on a tie), CauseFallback when there is
// none but fallbacks answered (a fallback covers a failure: the failure
// is the edge's story), and "" when every count is 0.
func (c Causes) cause() string {
	best, n := "", int64(0)
	for _, k := range []struct {
		name string
		n    int64
	}{{CauseTimeout, c.Timeouts}, {CauseBreakerOpen, c.BreakerOpen}, {CauseBulkheadFull, c.BulkheadFull},
		{CauseBudgetSpent, c.BudgetSpent}, {CauseOverloaded, c.Overloaded}} {
		if k.n > n {
			best, n = k.name, k.n
		}
	}
	if best == "" && c.Fallbacks > 0 {
		return CauseFallback
	}
	return best
}

// waiting reports whether inFlight calls are more than the window's
// answers explain: by Little's law a dependency answering rate calls a
// second within p99 seconds holds about rate × p99 at once, so calls in
// flight beyond twice that (and at least 3) are waiting on a hang.
func waiting(inFlight int64, w window) bool {
	expect := 0.0
	if w.P99 != nil {
		expect = w.Rate * *w.P99
	}
	return inFlight >= 3 && float64(inFlight) > 2*expect
}

// Edge is a call edge over the window, with its client's counters.
type Edge struct {
	Edge       string   `json:"edge"`
	Caller     string   `json:"caller"`
	Dependency string   `json:"dependency"`
	Rate       float64  `json:"rate"`
	ErrorRate  *float64 `json:"errorRate"`
	P99        *float64 `json:"p99"`
	// ErrorRate is the share of the edge's calls that failed over the
	// window: the dependency's errors (5xx, no response) and the calls
	// the caller refused itself (breaker open, bulkhead full), out of
	// both. Health is "failing", "degraded" or "ok" (no traffic is ok),
	// from ErrorRate and the thresholds.
	Health string `json:"health"`
	// Breaker is the state of the breaker on the edge ("" for none).
	Breaker string `json:"breaker"`
	// InFlight is the number of the edge's calls the dependency is
	// handling now.
	InFlight int64 `json:"inFlight"`
	// Causes are the window's counts of calls that got no answer of the
	// dependency, by cause; Cause names the largest (a Cause constant),
	// or CauseWaiting, or "" for none.
	Causes Causes `json:"causes"`
	Cause  string `json:"cause"`
	// Client holds the edge's client counters (zero where no lab
	// counts them).
	Client metrics.EdgeSnapshot `json:"client"`
}

// Breaker is a breaker's state, as the page's badge says it.
type Breaker struct {
	Name  string `json:"name"`
	State string `json:"state"` // closed, open, half_open
	Label string `json:"label"` // CLOSED, OPEN, HALF-OPEN
}

// Bulkhead is a compartment's slots, with the calls it refused (its
// edge's BulkheadFull, since the system started).
type Bulkhead struct {
	metrics.BulkheadSnapshot
	Rejections int64 `json:"rejections"`
}

// Transition is a breaker's change of state between two ticks.
type Transition struct {
	Time    time.Time `json:"time"`
	Breaker string    `json:"breaker"`
	From    string    `json:"from"`
	To      string    `json:"to"`
}

// Totals sums the patterns' counters over every edge and route.
type Totals struct {
	Attempts                   int64   `json:"attempts"`
	Retries                    int64   `json:"retries"`
	Hedges                     int64   `json:"hedges"`
	HedgesWon                  int64   `json:"hedgesWon"`
	Fallbacks                  int64   `json:"fallbacks"`
	Timeouts                   int64   `json:"timeouts"`
	BreakerOpen                int64   `json:"breakerOpen"`
	BulkheadFull               int64   `json:"bulkheadFull"`
	BudgetSpent                int64   `json:"budgetSpent"`
	Overloaded                 int64   `json:"overloaded"` // refused at the instances' concurrency limits
	BreakerTransitions         int64   `json:"breakerTransitions"`
	Replays                    int64   `json:"replays"`
	OrdersChargedMoreThanOnce  *int64  `json:"ordersChargedMoreThanOnce"`
	Cancelled                  int64   `json:"cancelled"`
	WorkAfterCallerLeft        int64   `json:"workAfterCallerLeft"`
	WorkAfterCallerLeftSeconds float64 `json:"workAfterCallerLeftSeconds"`
}

// Checkout is the simulated customers' checkouts.
type Checkout struct {
	OK          int64    `json:"ok"`
	Failed      int64    `json:"failed"`
	Rate        float64  `json:"rate"`        // finished a second over the window
	SuccessRate *float64 `json:"successRate"` // over the window
}

// Label is a breaker state as a badge says it.
func Label(s metrics.BreakerState) string {
	switch s {
	case metrics.BreakerOpen:
		return "OPEN"
	case metrics.BreakerHalfOpen:
		return "HALF-OPEN"
	case metrics.BreakerClosed:
		return "CLOSED"
	}
	return string(s)
}

// Sample takes one snapshot, adds it to the history and wakes the event
// streams. Start calls it every Interval; tests may call it directly.
func (d *Dashboard) Sample() *Frame {
	snap := d.cfg.Metrics.Snapshot()
	var load *loadgen.Stats
	if d.cfg.Load != nil {
		s := d.cfg.Load()
		load = &s
	}
	cur := newSample(snap, load)

	d.mu.Lock()
	defer d.mu.Unlock()
	var prev, base *sample
	if n := len(d.samples); n > 0 {
		prev = d.at(n - 1)
		// The window's start: the newest sample at least Window old, or
		// the oldest kept.
		base = d.at(0)
		at := 0
		for i := n - 1; i >= 0; i-- {
			// Half a tick of slack, so that ticks a little late or early
			// still give a window of Window, not one tick more.
			if s := d.at(i); !cur.t.Before(s.t.Add(d.cfg.Window - d.cfg.Interval/2)) {
				base, at = s, i
				break
			}
		}
		// Windows only move forward: no later one starts before base.
		for i := range at {
			d.at(i).dropLatency()
		}
	}
	f := d.frame(snap, cur, base, prev, load)
	if len(d.samples) < d.cfg.History {
		d.samples = append(d.samples, cur)
		d.points = append(d.points, f.Point)
	} else {
		d.samples[d.start] = cur
		d.points[d.start] = f.Point
		d.start = (d.start + 1) % d.cfg.History
	}
	d.transitions = append(d.transitions, f.Transitions...)
	if over := len(d.transitions) - maxTransitions; over > 0 {
		d.transitions = append([]Transition(nil), d.transitions[over:]...)
	}
	d.latest = f
	close(d.tick)
	d.tick = make(chan struct{})
	return f
}

// at returns the i-th sample kept, oldest first; d.mu is held.
func (d *Dashboard) at(i int) *sample { return d.samples[(d.start+i)%len(d.samples)] }

// frame builds the frame of cur; d.mu is held.
func (d *Dashboard) frame(snap metrics.Snapshot, cur, base, prev *sample, load *loadgen.Stats) *Frame {
	f := &Frame{Time: cur.t, WindowSeconds: d.cfg.Window.Seconds(),
		Nodes: []Node{}, Services: []Node{}, Edges: []Edge{}, Breakers: []Breaker{}, Bulkheads: []Bulkhead{},
		RetryBudgets: snap.RetryBudgets, Transitions: []Transition{}}
	if base != nil {
		f.WindowSeconds = round(cur.t.Sub(base.t).Seconds())
	}
	p := Point{Time: cur.t, P99: map[string]*float64{}, EdgeRate: map[string]float64{},
		EdgeErrorRate: map[string]*float64{}, Breakers: map[string]string{}}

	gauges := map[string]*Node{}
	for _, r := range snap.Routes {
		for _, k := range []string{"i:" + r.Instance, "s:" + r.Service} {
			g := gauges[k]
			if g == nil {
				g = &Node{}
				gauges[k] = g
			}
			g.InFlight += r.InFlight
			g.Rejected += r.Rejected
			g.PeakInFlight = max(g.PeakInFlight, r.PeakInFlight)
		}
		f.Totals.Overloaded += r.Rejected
		f.Totals.Cancelled += r.Cancelled
		f.Totals.WorkAfterCallerLeft += r.WorkAfterCallerLeft
		f.Totals.WorkAfterCallerLeftSeconds += r.WorkAfterCallerLeftSeconds
	}
	node := func(name, key string, pick func(*sample) map[string]*agg) Node {
		w := diff(base, cur, pick, name)
		n := Node{Name: name, Rate: round(w.Rate), ErrorRate: roundp(w.ErrorRate), P99: roundp(w.P99),
			Overloaded: w.Overloaded, Limit: limit(snap.Limits, key, name)}
		if g := gauges[key+name]; g != nil {
			n.InFlight, n.Rejected, n.PeakInFlight = g.InFlight, g.Rejected, g.PeakInFlight
		}
		return n
	}
	for _, name := range Instances {
		f.Nodes = append(f.Nodes, node(name, "i:", func(s *sample) map[string]*agg { return s.instances }))
	}
	for _, name := range Services {
		n := node(name, "s:", func(s *sample) map[string]*agg { return s.services })
		f.Services = append(f.Services, n)
		p.P99[name] = n.P99
	}

	clients := map[string]metrics.EdgeSnapshot{}
	for _, e := range snap.Edges {
		clients[e.Edge] = e
		f.Totals.Attempts += e.Attempts
		f.Totals.Retries += e.Retries
		f.Totals.Hedges += e.Hedges
		f.Totals.HedgesWon += e.HedgesWon
		f.Totals.Fallbacks += e.Fallbacks
		f.Totals.Timeouts += e.Timeouts
		f.Totals.BreakerOpen += e.BreakerOpen
		f.Totals.BulkheadFull += e.BulkheadFull
		f.Totals.BudgetSpent += e.BudgetSpent
		f.Totals.BreakerTransitions += e.BreakerTransitions
		f.Totals.Replays += e.Replays
	}
	f.Totals.OrdersChargedMoreThanOnce = snap.OrdersChargedMoreThanOnce
	for _, src := range Edges {
		w := diff(base, cur, func(s *sample) map[string]*agg { return s.edges }, src.Edge)
		e := Edge{Edge: src.Edge, Caller: src.Caller, Dependency: src.Dependency,
			Rate: round(w.Rate), ErrorRate: roundp(w.ErrorRate), P99: roundp(w.P99),
			Health: d.health(w.ErrorRate), Breaker: string(cur.breakers[src.Edge])}
		e.Client = clients[src.Edge]
		e.Client.Edge, e.Client.Caller, e.Client.Dependency = src.Edge, src.Caller, src.Dependency
		if a := cur.edges[src.Edge]; a != nil {
			e.InFlight = a.inFlight
		}
		if base != nil {
			now, was := cur.clients[src.Edge], base.clients[src.Edge]
			e.Causes = Causes{Timeouts: now.Timeouts - was.Timeouts, BreakerOpen: now.BreakerOpen - was.BreakerOpen,
				BulkheadFull: now.BulkheadFull - was.BulkheadFull, BudgetSpent: now.BudgetSpent - was.BudgetSpent,
				Overloaded: now.Overloaded - was.Overloaded, Fallbacks: now.Fallbacks - was.Fallbacks}
		}
		// The calls the caller refused itself never reached the
		// dependency, where the error rate is measured: they are
		// failures of the edge all the same.
		if refused := e.Causes.BreakerOpen + e.Causes.BulkheadFull; refused > 0 {
			failed := float64(refused)
			if w.ErrorRate != nil {
				failed += *w.ErrorRate * float64(w.Answered)
			}
			r := failed / float64(w.Answered+refused)
			e.ErrorRate = roundp(&r)
			e.Health = d.health(&r)
		}
		e.Cause = e.Causes.cause()
		if e.Cause == "" && waiting(e.InFlight, w) {
			e.Cause = CauseWaiting
		}
		f.Edges = append(f.Edges, e)
		p.EdgeRate[src.Edge] = e.Rate
		p.EdgeErrorRate[src.Edge] = e.ErrorRate
	}
	for _, b := range snap.Breakers {
		f.Breakers = append(f.Breakers, Breaker{Name: b.Name, State: string(b.State), Label: Label(b.State)})
		p.Breakers[b.Name] = string(b.State)
		if prev != nil {
			if was, ok := prev.breakers[b.Name]; ok && was != b.State {
				f.Transitions = append(f.Transitions, Transition{Time: cur.t, Breaker: b.Name, From: string(was), To: string(b.State)})
			}
		}
	}
	for _, b := range snap.Bulkheads {
		f.Bulkheads = append(f.Bulkheads, Bulkhead{BulkheadSnapshot: b, Rejections: clients[b.Compartment].BulkheadFull})
	}
	if load != nil {
		c := load.Actions[loadgen.ActionCheckout]
		f.Checkout.OK, f.Checkout.Failed = c.OK, c.Failed
		if base != nil && cur.t.After(base.t) {
			ok, failed := cur.checkout[0]-base.checkout[0], cur.checkout[1]-base.checkout[1]
			f.Checkout.Rate = round(float64(ok+failed) / cur.t.Sub(base.t).Seconds())
			f.Checkout.SuccessRate = roundp(ratio(ok, failed))
		}
	}
	p.CheckoutSuccess, p.CheckoutRate = f.Checkout.SuccessRate, f.Checkout.Rate
	f.Point = p
	return f
}

// limit returns the concurrency limit of the instance name (key "i:") or
// the sum of a service's instances' (key "s:"); 0 when there is none or
// one of them has none.
func limit(limits map[string]int, key, name string) int {
	if key == "i:" {
		return limits[name]
	}
	sum := 0
	for in, l := range limits {
		if metrics.ServiceOf(in) == name {
			if l == 0 {
				return 0
			}
			sum += l
		}
	}
	return sum
}

// health names an edge's health from its error rate.
func (d *Dashboard) health(errRate *float64) string {
	switch {
	case errRate == nil:
		return "ok"
	case *errRate >= d.cfg.Failing:
		return "failing"
	case *errRate >= d.cfg.Degraded:
		return "degraded"
	}
	return "ok"
}

// History returns the points kept, oldest first.
func (d *Dashboard) History() []Point {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Point, 0, len(d.points))
	for i := range d.points {
		out = append(out, d.points[(d.start+i)%len(d.points)])
	}
	return out
}

// Latest returns the latest frame and a channel closed at the next tick;
// the frame is nil before the first tick.
func (d *Dashboard) Latest() (*Frame, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.latest, d.tick
}

// Transitions returns the breaker transitions kept, oldest first.
func (d *Dashboard) Transitions() []Transition {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Transition{}, d.transitions...)
}
