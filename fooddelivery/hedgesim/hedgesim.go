// Package hedgesim is the in-process model behind lab 09's experiment: a
// home page that fans out to many menu reads over a few replicas, each of
// which now and then stalls for a stretch of time (a GC pause, a
// compaction), with or without hedged reads. It runs tens of thousands of
// reads in milliseconds, deterministically, so that p99.9 can be measured
// with enough samples behind it; the HTTP mechanics of hedging are tested
// against the real system instead.
//
// The model is a discrete-event simulation in virtual time. Every random
// number is a fooddelivery.Draw of the seed, so a run is a pure function of
// its Model and of the Tracker and Budget it drives.
package hedgesim

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
)

// Tracker decides when to hedge: Delay is read when a read starts, and
// Observe receives the latency of every read (its first answer), as a
// hedging client would record them.
type Tracker interface {
	Observe(latency time.Duration)
	Delay() time.Duration
}

// Budget limits hedges: Request is called once per read, TryHedge when a
// read has waited its delay; a hedge is sent only if TryHedge returns true.
type Budget interface {
	Request()
	TryHedge() bool
}

// Policy is how reads are hedged. Tracker is required. Budget nil means
// every read that waits longer than the delay is hedged.
type Policy struct {
	Tracker Tracker
	Budget  Budget
}

// Model describes the home page and the menu replicas. Fields have no
// defaults and the zero Model is not usable: start from Default. Replicas,
// Pages and StallEvery must be positive, and StallFor at most StallEvery.
type Model struct {
	// Seed keys every draw.
	Seed int64
	// Replicas is the number of menu replicas. A read goes to the next
	// replica in turn (round-robin, like menu.Client); its hedge goes to
	// the replica after that.
	Replicas int
	// FanOut is the number of menu reads one home page makes, all at once.
	FanOut int
	// Pages is how many home pages are served, one every PageEvery.
	Pages     int
	PageEvery time.Duration
	// Each replica stalls for StallFor once in every StallEvery of time,
	// at a moment drawn at random within it. A stalled replica answers
	// nothing until the stall ends; then it finishes what it was doing.
	StallEvery time.Duration
	StallFor   time.Duration
	// A read that meets no stall takes BaseMin plus an exponential draw
	// with mean BaseMean.
	BaseMin, BaseMean time.Duration
}

// Default is the experiment's model: 3 replicas, home pages of 20 menu
// reads every 100 ms for 10 virtual minutes (120,000 reads), and each
// replica stalling for 1 s once every 200 s (0.5% of its time). A read that
// meets no stall takes 5 ms plus a mean of 5 ms (median 8.5 ms, p95 20 ms).
func Default() Model {
	return Model{
		Seed:       9,
		Replicas:   3,
		FanOut:     20,
		Pages:      6000,
		PageEvery:  100 * time.Millisecond,
		StallEvery: 200 * time.Second,
		StallFor:   time.Second,
		BaseMin:    5 * time.Millisecond,
		BaseMean:   5 * time.Millisecond,
	}
}

// Result is what one run measured.
type Result struct {
	Pages, Reads, Hedges int
	// Percentiles of the home page's latency (its slowest read), nearest
	// rank.
	P50, P99, P999 time.Duration
}

// Extra is the share of extra requests hedging sent: Hedges / Reads.
func (r Result) Extra() float64 {
	if r.Reads == 0 {
		return 0
	}
	return float64(r.Hedges) / float64(r.Reads)
}

// StallShare is the fraction of time each replica is stalled.
func (m Model) StallShare() float64 { return float64(m.StallFor) / float64(m.StallEvery) }

// world is a Model with its stalls drawn in advance: starts[r][k] is when
// replica r's stall of period k begins.
type world struct {
	Model
	starts [][]time.Duration
}

func newWorld(m Model) *world {
	periods := int(time.Duration(m.Pages)*m.PageEvery/m.StallEvery) + 3
	w := &world{Model: m, starts: make([][]time.Duration, m.Replicas)}
	for r := range w.starts {
		key := "stall-menu-" + strconv.Itoa(r+1)
		w.starts[r] = make([]time.Duration, periods)
		for k := range periods {
			w.starts[r][k] = time.Duration(k)*m.StallEvery +
				time.Duration(fooddelivery.Draw(m.Seed, key, k)*float64(m.StallEvery-m.StallFor))
		}
	}
	return w
}

// stall returns the stall of replica r that is going on at t or comes next.
func (w *world) stall(r int, t time.Duration) (from, to time.Duration) {
	k := min(int(t/w.StallEvery), len(w.starts[r])-2)
	from = w.starts[r][k]
	if t >= from+w.StallFor {
		from = w.starts[r][k+1]
	}
	return from, from + w.StallFor
}

// finish returns when an attempt sent at t to replica r answers: its base
// service time, with the clock stopped while the replica is stalled.
func (w *world) finish(r int, t time.Duration, read, attempt int) time.Duration {
	u := fooddelivery.Draw(w.Seed, "read", 2*read+attempt)
	base := w.BaseMin + time.Duration(-math.Log1p(-u)*float64(w.BaseMean))
	end := t + base
	if from, to := w.stall(r, t); from < end {
		return to + end - max(from, t)
	}
	return end
}

type event struct {
	at   time.Duration
	seq  int
	kind int // pageStart, hedgeDue, answered
	id   int // page or read
}

const (
	pageStart = iota
	hedgeDue
	answered
)

type read struct {
	page           int
	start          time.Duration
	replica        int
	primary, first time.Duration // when the primary answers; when the first answer arrives
}

// Run serves m.Pages home pages and measures them. A nil policy sends every
// read to one replica and waits for it. Run panics on a Model that breaks
// the rules under Model (Default follows them).
func Run(m Model, p *Policy) Result {
	w := newWorld(m)
	var q queue
	seq := 0
	push := func(at time.Duration, kind, id int) {
		seq++
		q.push(event{at, seq, kind, id})
	}
	reads := make([]read, 0, m.Pages*m.FanOut)
	pages := make([]time.Duration, m.Pages)
	for i := range m.Pages {
		push(time.Duration(i)*m.PageEvery, pageStart, i)
	}
	next, hedges := 0, 0
	for q.len() > 0 {
		e := q.pop()
		switch e.kind {
		case pageStart:
			var delay time.Duration
			if p != nil {
				delay = p.Tracker.Delay() // every read of the page starts now
			}
			for range m.FanOut {
				id := len(reads)
				r := read{page: e.id, start: e.at, replica: next % m.Replicas}
				next++
				r.primary = w.finish(r.replica, e.at, id, 0)
				r.first = r.primary
				reads = append(reads, r)
				if p != nil {
					if p.Budget != nil {
						p.Budget.Request()
					}
					if r.primary > e.at+delay {
						push(e.at+delay, hedgeDue, id)
						continue
					}
				}
				push(r.primary, answered, id)
			}
		case hedgeDue:
			r := &reads[e.id]
			if p.Budget == nil || p.Budget.TryHedge() {
				hedges++
				r.first = min(r.primary, w.finish((r.replica+1)%m.Replicas, e.at, e.id, 1))
			}
			push(r.first, answered, e.id)
		case answered:
			r := &reads[e.id]
			if p != nil {
				p.Tracker.Observe(r.first - r.start)
			}
			pages[r.page] = max(pages[r.page], r.first-r.start)
		}
	}
	slices.Sort(pages)
	rank := func(pct float64) time.Duration {
		i := int(math.Ceil(pct*float64(len(pages))-1e-9)) - 1
		return pages[max(0, min(i, len(pages)-1))]
	}
	return Result{Pages: m.Pages, Reads: len(reads), Hedges: hedges, P50: rank(0.50), P99: rank(0.99), P999: rank(0.999)}
}

// queue is a binary min-heap of events by (at, seq).
type queue struct{ h []event }

func (q *queue) len() int { return len(q.h) }

func less(a, b event) bool { return a.at < b.at || (a.at == b.at && a.seq < b.seq) }

func (q *queue) push(e event) {
	q.h = append(q.h, e)
	for i := len(q.h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !less(q.h[i], q.h[parent]) {
			break
		}
		q.h[i], q.h[parent] = q.h[parent], q.h[i]
		i = parent
	}
}

func (q *queue) pop() event {
	top := q.h[0]
	last := len(q.h) - 1
	q.h[0] = q.h[last]
	q.h = q.h[:last]
	for i := 0; ; {
		l, r, small := 2*i+1, 2*i+2, i
		if l < last && less(q.h[l], q.h[small]) {
			small = l
		}
		if r < last && less(q.h[r], q.h[small]) {
			small = r
		}
		if small == i {
			return top
		}
		q.h[i], q.h[small] = q.h[small], q.h[i]
		i = small
	}
}
