package dashboard

import (
	"math"
	"slices"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/loadgen"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

// Services are the services the page charts, in the diagram's order.
var Services = []string{"gateway", "auth", "order", "payment", "menu", "courier"}

// Instances are the diagram's nodes.
var Instances = []string{"gateway", "auth", "order", "payment", "menu-1", "menu-2", "menu-3", "courier"}

// edgeSource says where an edge's requests are counted: at the
// dependency, on the routes the caller sends (nil: every route of the
// dependency's instances). Counting at the dependency measures every
// edge whether or not a lab's client updates its EdgeStats; menu's
// GET /restaurants/{id}/menu is sent by both the gateway and the order
// service, so it counts on both edges.
type edgeSource struct {
	Edge       string
	Caller     string
	Dependency string
	Routes     []string
}

// Edges are the diagram's call edges.
var Edges = []edgeSource{
	{"gateway->auth", "gateway", "auth", nil},
	{"gateway->menu", "gateway", "menu", nil},
	{"gateway->courier", "gateway", "courier", []string{"GET /eta/{restaurantId}"}},
	{"gateway->order", "gateway", "order", nil},
	{"order->payment", "order", "payment", nil},
	{"order->menu", "order", "menu", []string{"GET /restaurants/{id}/menu"}},
	{"order->courier", "order", "courier", []string{"POST /assignments"}},
}

// agg sums the answers of some routes: cumulative counters read from one
// snapshot.
type agg struct {
	answered int64 // responses of every status, no response included
	errors   int64 // 5xx and no response
	rejected int64 // refused at the instances' concurrency limits (overloaded)
	inFlight int64 // gauge: being handled now
	// latency holds the durations of the answers in fine buckets; a
	// sample older than every window still to be measured drops it
	// (Dashboard.Sample), so only the last Window's sketches are kept.
	latency metrics.LatencySketch
}

func (a *agg) add(r metrics.RouteSnapshot) {
	a.rejected += r.Rejected
	a.inFlight += r.InFlight
	for code, n := range r.Responses {
		a.answered += n
		if code == fooddelivery.StatusNoResponse || code >= 500 {
			a.errors += n
		}
	}
	a.latency = a.latency.Add(r.Sketch)
}

// sample is what one tick keeps of its snapshot: cumulative sums, so that
// any window is the difference of two samples.
type sample struct {
	t         time.Time
	instances map[string]*agg
	services  map[string]*agg
	edges     map[string]*agg
	clients   map[string]metrics.EdgeSnapshot // by edge
	checkout  [2]int64                        // ok, failed (cumulative, from the load generator)
	breakers  map[string]metrics.BreakerState
}

func newSample(snap metrics.Snapshot, load *loadgen.Stats) *sample {
	s := &sample{t: snap.Time, instances: map[string]*agg{}, services: map[string]*agg{}, edges: map[string]*agg{},
		breakers: map[string]metrics.BreakerState{}, clients: map[string]metrics.EdgeSnapshot{}}
	for _, e := range snap.Edges {
		s.clients[e.Edge] = e
	}
	get := func(m map[string]*agg, k string) *agg {
		a, ok := m[k]
		if !ok {
			a = &agg{}
			m[k] = a
		}
		return a
	}
	for _, r := range snap.Routes {
		get(s.instances, r.Instance).add(r)
		get(s.services, r.Service).add(r)
		for _, e := range Edges {
			if r.Service == e.Dependency && (e.Routes == nil || slices.Contains(e.Routes, r.Route)) {
				get(s.edges, e.Edge).add(r)
			}
		}
	}
	if load != nil {
		c := load.Actions[loadgen.ActionCheckout]
		s.checkout = [2]int64{c.OK, c.Failed}
	}
	for _, b := range snap.Breakers {
		s.breakers[b.Name] = b.State
	}
	return s
}

// window is what happened between two samples.
type window struct {
	Seconds    float64
	Answered   int64    // answers
	Overloaded int64    // refused at a concurrency limit
	Rate       float64  // answers per second
	ErrorRate  *float64 // share of answers that were errors; nil without answers
	P99        *float64 // seconds, within fooddelivery.SketchAccuracy of the true p99 (nearest rank); nil without observations
}

// diff returns the window from old to cur of the aggregate named k in the
// maps pick chooses; old nil means no earlier sample (nothing measured).
func diff(old, cur *sample, pick func(*sample) map[string]*agg, k string) window {
	if old == nil || !cur.t.After(old.t) {
		return window{}
	}
	w := window{Seconds: cur.t.Sub(old.t).Seconds()}
	c := pick(cur)[k]
	if c == nil {
		return w
	}
	o := pick(old)[k]
	if o == nil {
		o = &agg{}
	}
	n := c.answered - o.answered
	w.Answered, w.Overloaded = n, c.rejected-o.rejected
	w.Rate = float64(n) / w.Seconds
	if n > 0 {
		e := float64(c.errors-o.errors) / float64(n)
		w.ErrorRate = &e
	}
	if d, ok := c.latency.Sub(o.latency).Quantile(0.99); ok {
		v := d.Seconds()
		w.P99 = &v
	}
	return w
}

// dropLatency forgets the latency sketches of s, a sample no window will
// start at again.
func (s *sample) dropLatency() {
	for _, m := range []map[string]*agg{s.instances, s.services, s.edges} {
		for _, a := range m {
			a.latency = metrics.LatencySketch{}
		}
	}
}

// ratio returns ok/(ok+failed), nil for none.
func ratio(ok, failed int64) *float64 {
	if ok+failed <= 0 {
		return nil
	}
	r := float64(ok) / float64(ok+failed)
	return &r
}

// round keeps JSON short: four significant decimals are plenty for a
// chart.
func round(v float64) float64 { return math.Round(v*1e4) / 1e4 }

func roundp(v *float64) *float64 {
	if v == nil {
		return nil
	}
	r := round(*v)
	return &r
}
