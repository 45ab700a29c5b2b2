package metrics

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// AddSource adds the numbers of another process to every Snapshot of m:
// cmd/fooddelivery -processes runs one service per process, and the
// gateway's process, whose dashboard and /metrics the room reads, adds
// each other process's snapshot to its own. read is called once per
// Snapshot, after m's own counters are read, and returns that process's
// snapshot, or ok false when it cannot be read (the process is down or
// restarting): that Snapshot then leaves it out. read must bound its own
// time (a timeout on its request). A nil m ignores the call.
func (m *Metrics) AddSource(read func() (Snapshot, bool)) {
	if m == nil || read == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sources = append(m.sources, read)
}

// merge adds o's numbers to s: their routes and patterns side by side
// (each process counts its own instances and patterns; where both name the
// same one, both are kept, o's after s's), their edges summed per edge
// (every process wires the same edges, and only the caller's process
// counts on them: a /metrics must not hold one edge twice), their limits
// together (s's win), and their orders charged twice summed.
func (s Snapshot) merge(o Snapshot) Snapshot {
	s.Routes = append(s.Routes, o.Routes...)
	slices.SortStableFunc(s.Routes, func(a, b RouteSnapshot) int {
		return cmp.Or(cmp.Compare(a.Instance, b.Instance), cmp.Compare(a.Route, b.Route))
	})
	limits := maps.Clone(o.Limits)
	if limits == nil {
		limits = map[string]int{}
	}
	maps.Copy(limits, s.Limits)
	s.Limits = limits
	s.Edges = sumEdges(append(slices.Clone(s.Edges), o.Edges...))
	s.Breakers = append(s.Breakers, o.Breakers...)
	slices.SortStableFunc(s.Breakers, func(a, b BreakerSnapshot) int { return cmp.Compare(a.Name, b.Name) })
	s.Bulkheads = append(s.Bulkheads, o.Bulkheads...)
	slices.SortStableFunc(s.Bulkheads, func(a, b BulkheadSnapshot) int { return cmp.Compare(a.Compartment, b.Compartment) })
	s.RetryBudgets = append(s.RetryBudgets, o.RetryBudgets...)
	slices.SortStableFunc(s.RetryBudgets, func(a, b RetryBudgetSnapshot) int { return cmp.Compare(a.Name, b.Name) })
	if o.OrdersChargedMoreThanOnce != nil {
		n := *o.OrdersChargedMoreThanOnce
		if s.OrdersChargedMoreThanOnce != nil {
			n += *s.OrdersChargedMoreThanOnce
		}
		s.OrdersChargedMoreThanOnce = &n
	}
	return s
}

// wireSnapshot is a Snapshot as one process sends it to another: the
// Snapshot's own JSON, plus each route's latency sketch (which the
// Snapshot's JSON leaves out), in the order of Routes.
type wireSnapshot struct {
	Snapshot
	Sketches []wireSketch `json:"sketches"`
}

type wireSketch struct {
	Index []int32 `json:"index"`
	Count []int64 `json:"count"`
}

// MarshalWire encodes s for another process, sketches included:
// UnmarshalWire reads it back with every number the same.
func (s Snapshot) MarshalWire() ([]byte, error) {
	w := wireSnapshot{Snapshot: s, Sketches: make([]wireSketch, len(s.Routes))}
	for i, r := range s.Routes {
		w.Sketches[i] = wireSketch{Index: r.Sketch.index, Count: r.Sketch.count}
	}
	return json.Marshal(w)
}

// UnmarshalWire decodes what MarshalWire encoded. It returns an error for
// malformed JSON and for sketches that do not fit their routes (a count
// for each route, indexes increasing, counts not negative).
func UnmarshalWire(data []byte) (Snapshot, error) {
	var w wireSnapshot
	if err := json.Unmarshal(data, &w); err != nil {
		return Snapshot{}, fmt.Errorf("a snapshot from another process: %w", err)
	}
	if len(w.Sketches) != len(w.Routes) {
		return Snapshot{}, fmt.Errorf("a snapshot from another process: %d sketches for %d routes", len(w.Sketches), len(w.Routes))
	}
	for i, sk := range w.Sketches {
		if len(sk.Index) != len(sk.Count) {
			return Snapshot{}, fmt.Errorf("a snapshot from another process: route %s %s: %d sketch indexes for %d counts",
				w.Routes[i].Instance, w.Routes[i].Route, len(sk.Index), len(sk.Count))
		}
		for j := range sk.Index {
			if sk.Count[j] < 0 || j > 0 && sk.Index[j] <= sk.Index[j-1] {
				return Snapshot{}, fmt.Errorf("a snapshot from another process: route %s %s: its sketch is not in increasing order with counts of 0 or more",
					w.Routes[i].Instance, w.Routes[i].Route)
			}
		}
		w.Routes[i].Sketch = LatencySketch{index: sk.Index, count: sk.Count}
	}
	if w.Limits == nil {
		w.Limits = map[string]int{}
	}
	return w.Snapshot, nil
}

// sumEdges returns edges with those of one caller and dependency summed
// into one, sorted by caller, then dependency.
func sumEdges(edges []EdgeSnapshot) []EdgeSnapshot {
	slices.SortStableFunc(edges, func(a, b EdgeSnapshot) int {
		return cmp.Or(cmp.Compare(a.Caller, b.Caller), cmp.Compare(a.Dependency, b.Dependency))
	})
	out := edges[:0]
	for _, e := range edges {
		if n := len(out); n > 0 && out[n-1].Caller == e.Caller && out[n-1].Dependency == e.Dependency {
			p := &out[n-1]
			p.Attempts += e.Attempts
			p.Retries += e.Retries
			p.Hedges += e.Hedges
			p.HedgesWon += e.HedgesWon
			p.Fallbacks += e.Fallbacks
			p.BreakerTransitions += e.BreakerTransitions
			p.Replays += e.Replays
			p.Timeouts += e.Timeouts
			p.BreakerOpen += e.BreakerOpen
			p.BulkheadFull += e.BulkheadFull
			p.BudgetSpent += e.BudgetSpent
			p.Overloaded += e.Overloaded
			continue
		}
		out = append(out, e)
	}
	return out
}
