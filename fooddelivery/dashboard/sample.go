package dashboard

import (
	"math"
	"slices"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/loadgen"
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
	answered int64     // responses of every status, no response included
	errors   int64     // 5xx and no response
	count    int64     // latency observations, +Inf included
	buckets  []int64   // cumulative per bound
	bounds   []float64 // seconds
}

func (a *agg) add(r fooddelivery.RouteSnapshot) {
	for code, n := range r.Responses {
		a.answered += n
		if code == fooddelivery.StatusNoResponse || code >= 500 {
			a.errors += n
		}
	}
	a.count += r.Latency.Count
	if a.buckets == nil {
		a.buckets = make([]int64, len(r.Latency.Buckets))
		a.bounds = make([]float64, len(r.Latency.Buckets))
	}
	for i, b := range r.Latency.Buckets {
		if i < len(a.buckets) {
			a.buckets[i] += b.Count
			a.bounds[i] = b.UpperBoundSeconds
		}
	}
}

// sample is what one tick keeps of its snapshot: cumulative sums, so that
// any window is the difference of two samples.
type sample struct {
	t         time.Time
	instances map[string]*agg
	services  map[string]*agg
	edges     map[string]*agg
	checkout  [2]int64 // ok, failed (cumulative, from the load generator)
	breakers  map[string]fooddelivery.BreakerState
}

func newSample(snap fooddelivery.Snapshot, load *loadgen.Stats) *sample {
	s := &sample{t: snap.Time, instances: map[string]*agg{}, services: map[string]*agg{}, edges: map[string]*agg{},
		breakers: map[string]fooddelivery.BreakerState{}}
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
	Seconds   float64
	Rate      float64  // answers per second
	ErrorRate *float64 // share of answers that were errors; nil without answers
	P99       *float64 // seconds; nil without observations
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
	w.Rate = float64(n) / w.Seconds
	if n > 0 {
		e := float64(c.errors-o.errors) / float64(n)
		w.ErrorRate = &e
	}
	deltas := make([]int64, len(c.buckets))
	for i := range c.buckets {
		deltas[i] = c.buckets[i]
		if i < len(o.buckets) {
			deltas[i] -= o.buckets[i]
		}
	}
	w.P99 = quantile(0.99, c.count-o.count, deltas, c.bounds)
	return w
}

// quantile estimates the q-quantile of total observations from cumulative
// bucket counts, interpolating linearly inside the bucket it falls in (as
// Prometheus' histogram_quantile does). Beyond the last bucket it returns
// the last bound. It returns nil for no observations.
func quantile(q float64, total int64, cumulative []int64, bounds []float64) *float64 {
	if total <= 0 || len(bounds) == 0 {
		return nil
	}
	rank := q * float64(total)
	prevCount, prevBound := 0.0, 0.0
	for i, c := range cumulative {
		if float64(c) >= rank {
			v := bounds[i]
			if span := float64(c) - prevCount; span > 0 {
				v = prevBound + (bounds[i]-prevBound)*(rank-prevCount)/span
			}
			return &v
		}
		prevCount, prevBound = float64(c), bounds[i]
	}
	v := bounds[len(bounds)-1]
	return &v
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
