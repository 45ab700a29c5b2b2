// Package contention is a model of many clients competing to update one
// row with optimistic concurrency, after Marc Brooker's simulator for
// "Exponential Backoff And Jitter" (AWS Architecture Blog, 2015). Lab 03's
// experiment drives a backoff policy through it in-process: a few thousand
// simulated calls per run take microseconds, not an HTTP round trip each.
//
// The model, as in the blog's simulator: at time zero every client reads
// the row's version, then writes with that version. The row accepts a
// write only if its version is unchanged since the read (and then bumps
// it); a client whose write was refused waits for its backoff and starts
// over with a fresh read. Every message takes one network hop of
// abs(Normal(10ms, 2ms)). Each client stops after its first successful
// write. A run reports the write calls the row received and the virtual
// time at which the last client finished.
//
// Runs are deterministic: every random number is fooddelivery.Draw or
// fooddelivery.DrawNormal of the run's seed, so the same seed and policy
// always give the same result.
package contention

import (
	"container/heap"
	"math"
	"strconv"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
)

// The model's constants, Brooker's values (2015).
const (
	HopMean = 10 * time.Millisecond   // mean network hop
	HopSD   = 2 * time.Millisecond    // standard deviation of a hop
	Base    = 5 * time.Millisecond    // the backoff base the policies use
	Cap     = 2000 * time.Millisecond // the backoff cap the policies use
)

// Policy returns how long a client waits before its retry number attempt
// (1 before the first retry, as in Brooker's simulator). prev is the wait
// the client chose before its previous retry (Base before the first), which
// only decorrelated jitter uses; r is a uniform draw in [0, 1) fresh for
// this client and attempt.
type Policy func(attempt int, prev time.Duration, r float64) time.Duration

// Result is what one run, or the average of several, measured.
type Result struct {
	// Calls is the number of writes the row received (Brooker's "work").
	Calls float64
	// Completion is the virtual time at which the last client's write
	// succeeded and its answer arrived.
	Completion time.Duration
}

// event kinds: a message arriving at the row or back at a client.
const (
	readArrives = iota
	readAnswered
	writeArrives
	writeAnswered
)

type event struct {
	at      time.Duration
	seq     int // breaks ties in arrival order, so runs are deterministic
	kind    int
	client  int
	version int  // the version read (readAnswered, writeArrives)
	ok      bool // whether the write succeeded (writeAnswered)
}

type queue []event

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *queue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// Run simulates clients clients (at least 1) updating the row once each
// with policy p, with every random number drawn from seed.
func Run(clients int, seed int64, p Policy) Result {
	clients = max(clients, 1)
	var (
		q       queue
		seq     int
		hops    int
		version int
		calls   int
		now     time.Duration
		attempt = make([]int, clients)
		prev    = make([]time.Duration, clients)
	)
	hop := func() time.Duration {
		hops++
		ms := math.Abs(float64(HopMean)/1e6 + float64(HopSD)/1e6*fooddelivery.DrawNormal(seed, "hop", hops))
		return time.Duration(ms * 1e6)
	}
	send := func(at time.Duration, kind, client, v int, ok bool) {
		seq++
		heap.Push(&q, event{at: at, seq: seq, kind: kind, client: client, version: v, ok: ok})
	}
	for c := range clients {
		prev[c] = Base
		send(hop(), readArrives, c, 0, false)
	}
	for q.Len() > 0 {
		e := heap.Pop(&q).(event)
		now = e.at
		switch e.kind {
		case readArrives:
			send(now+hop(), readAnswered, e.client, version, false)
		case readAnswered:
			send(now+hop(), writeArrives, e.client, e.version, false)
		case writeArrives:
			calls++
			ok := e.version == version
			if ok {
				version++
			}
			send(now+hop(), writeAnswered, e.client, 0, ok)
		case writeAnswered:
			if e.ok {
				continue
			}
			attempt[e.client]++
			n := attempt[e.client]
			r := fooddelivery.Draw(seed, "client-"+strconv.Itoa(e.client), n)
			wait := max(p(n, prev[e.client], r), 0)
			prev[e.client] = wait
			send(now+hop()+wait, readArrives, e.client, 0, false)
		}
	}
	return Result{Calls: float64(calls), Completion: now}
}

// Average runs the model once for each seed in [first, first+runs) and
// returns the mean calls and the mean completion time.
func Average(clients int, first int64, runs int, p Policy) Result {
	var calls float64
	var completion time.Duration
	for i := range max(runs, 1) {
		r := Run(clients, first+int64(i), p)
		calls += r.Calls
		completion += r.Completion
	}
	n := max(runs, 1)
	return Result{Calls: calls / float64(n), Completion: completion / time.Duration(n)}
}

// exponential is min(Cap, Base*2^attempt) without overflow.
func exponential(attempt int) time.Duration {
	if attempt >= 30 {
		return Cap
	}
	return min(Cap, Base<<max(attempt, 0))
}

// The strategies Brooker compared, besides full jitter (which lab 03's
// learners write themselves).
var (
	// NoBackoff retries at once.
	NoBackoff Policy = func(int, time.Duration, float64) time.Duration { return 0 }
	// Exponential waits min(Cap, Base*2^attempt), with no randomness.
	Exponential Policy = func(attempt int, _ time.Duration, _ float64) time.Duration { return exponential(attempt) }
	// EqualJitter waits half of the exponential value plus a uniform draw
	// over the other half.
	EqualJitter Policy = func(attempt int, _ time.Duration, r float64) time.Duration {
		v := exponential(attempt)
		return v/2 + time.Duration(r*float64(v/2))
	}
	// Decorrelated waits min(Cap, uniform(Base, 3*prev)).
	Decorrelated Policy = func(_ int, prev time.Duration, r float64) time.Duration {
		return min(Cap, Base+time.Duration(r*float64(3*prev-Base)))
	}
)

// Row is one strategy's line in lab 03's experiment table.
type Row struct {
	// Name is the strategy: "no backoff", "exponential", "full jitter",
	// "equal jitter" or "decorrelated jitter".
	Name string
	// Measured is the average over the experiment's seeds.
	Measured Result
	// Port is the average a port of Brooker's simulator gave over 100
	// seeds at 100 clients (Brooker 2015, as the lab 03 README reports); a zero Completion
	// means that figure was not recorded.
	Port Result
}

// Compare runs the five strategies of Brooker's comparison at clients
// clients, each averaged over the seeds 1..runs, with fullJitter as the
// full-jitter strategy (the one lab 03's learners write). The rows come in
// a fixed order: no backoff, exponential, decorrelated jitter, equal
// jitter, full jitter.
func Compare(clients, runs int, fullJitter Policy) []Row {
	rows := []Row{
		{Name: "no backoff", Port: Result{Calls: 2424}},
		{Name: "exponential", Port: Result{Calls: 1866, Completion: 64 * time.Second}},
		{Name: "decorrelated jitter", Port: Result{Calls: 1001}},
		{Name: "equal jitter", Port: Result{Calls: 813}},
		{Name: "full jitter", Port: Result{Calls: 796, Completion: 4900 * time.Millisecond}},
	}
	policies := []Policy{NoBackoff, Exponential, Decorrelated, EqualJitter, fullJitter}
	for i := range rows {
		rows[i].Measured = Average(clients, 1, runs, policies[i])
	}
	return rows
}

// Find returns the row named name, and false if rows has none.
func Find(rows []Row, name string) (Row, bool) {
	for _, r := range rows {
		if r.Name == name {
			return r, true
		}
	}
	return Row{}, false
}
