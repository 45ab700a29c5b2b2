package loadgen

import (
	"maps"
	"slices"
	"time"
)

// Codes Stats counts besides the gateway's own extensions.code values
// (gateway.CodeTimeout, gateway.CodeOverloaded, ...).
const (
	// CodeUnknown counts GraphQL errors that carried no extensions.code.
	CodeUnknown = "UNKNOWN"
)

// codeCancelled marks a request cut short because Run was stopping; it is
// counted in Cancelled, not in Failed.
const codeCancelled = "\x00cancelled"

// Stats is a snapshot of a Generator: its settings and what its requests
// met, in total and per action. It encodes to JSON as is.
type Stats struct {
	// Running is true while Run runs.
	Running bool `json:"running"`
	// Rate is the rate asked for, in requests per second; MaxRate its cap.
	Rate    int `json:"rate"`
	MaxRate int `json:"maxRate"`
	// InFlight is the number of requests in flight now, at most
	// MaxInFlight.
	InFlight    int `json:"inFlight"`
	MaxInFlight int `json:"maxInFlight"`
	// Mix is the current mix.
	Mix Mix `json:"mix"`
	// Customers is how many customers have come so far: sent, dropped
	// and skipped together.
	Customers int64 `json:"customers"`
	// Total sums Actions.
	Total ActionStats `json:"total"`
	// Actions has one entry per action of Actions, even unused ones.
	Actions map[string]ActionStats `json:"actions"`
}

// ActionStats counts the requests of one action.
type ActionStats struct {
	// Sent counts requests sent; each ends as OK, Failed or Cancelled, or
	// is still in flight.
	Sent int64 `json:"sent"`
	// OK counts answers without any GraphQL error.
	OK int64 `json:"ok"`
	// Failed counts the others: an answer with errors, no answer, or a
	// checkout answered with status PAYMENT_FAILED.
	Failed int64 `json:"failed"`
	// Partial counts the failed answers that still carried data: the
	// gateway degraded gracefully (a home page without some menus, say).
	Partial int64 `json:"partial"`
	// Errors counts Failed by code: the first error's extensions.code
	// ("UNAVAILABLE", "TIMEOUT", "OVERLOADED", ...), the code the gateway
	// would give a transport error when there was no GraphQL answer
	// (gateway.ErrorCode), "PAYMENT_FAILED" or CodeUnknown.
	Errors map[string]int64 `json:"errors"`
	// Cancelled counts requests cut short because Run was stopping (its
	// context ended): neither OK nor Failed.
	Cancelled int64 `json:"cancelled"`
	// Dropped counts requests not sent because MaxInFlight requests were
	// in flight.
	Dropped int64 `json:"dropped"`
	// Skipped counts order lookups not sent because no order had been
	// placed yet.
	Skipped int64 `json:"skipped"`
	// Latency is the time from sending to the decoded answer, of the
	// finished requests (OK and Failed).
	Latency Latency `json:"latency"`
}

// Latency summarises response times, in milliseconds. Count, MeanMs and
// MaxMs cover every finished request; the percentiles cover the most
// recent ones (up to 1024 per action).
type Latency struct {
	Count  int64   `json:"count"`
	MeanMs float64 `json:"meanMs"`
	P50Ms  float64 `json:"p50Ms"`
	P90Ms  float64 `json:"p90Ms"`
	P99Ms  float64 `json:"p99Ms"`
	MaxMs  float64 `json:"maxMs"`
}

// recentSamples is how many latencies per action feed the percentiles.
const recentSamples = 1024

// counts is the mutable form of ActionStats (guarded by Generator.mu).
type counts struct {
	sent, ok, failed, partial, cancelled, dropped, skipped int64
	errors                                                 map[string]int64
	n                                                      int64
	sum, max                                               time.Duration
	recent                                                 []time.Duration // ring of the last recentSamples
}

func newCounts() *counts { return &counts{errors: map[string]int64{}} }

// done records a finished request: code "" means OK.
func (c *counts) done(code string, partial bool, took time.Duration) {
	if code == codeCancelled {
		c.cancelled++
		return
	}
	if code == "" {
		c.ok++
	} else {
		c.failed++
		c.errors[code]++
		if partial {
			c.partial++
		}
	}
	if len(c.recent) < recentSamples {
		c.recent = append(c.recent, took)
	} else {
		c.recent[c.n%recentSamples] = took
	}
	c.n++
	c.sum += took
	c.max = max(c.max, took)
}

func (c *counts) snapshot() ActionStats {
	return ActionStats{
		Sent: c.sent, OK: c.ok, Failed: c.failed, Partial: c.partial, Cancelled: c.cancelled,
		Errors: maps.Clone(c.errors), Dropped: c.dropped, Skipped: c.skipped,
		Latency: latency(c.n, c.sum, c.max, c.recent),
	}
}

func latency(n int64, sum, maxi time.Duration, recent []time.Duration) Latency {
	if n == 0 {
		return Latency{}
	}
	sorted := slices.Clone(recent)
	slices.Sort(sorted)
	q := func(p float64) float64 { return ms(sorted[int(p*float64(len(sorted)-1))]) }
	return Latency{Count: n, MeanMs: ms(sum / time.Duration(n)), P50Ms: q(0.50), P90Ms: q(0.90), P99Ms: q(0.99), MaxMs: ms(maxi)}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Stats returns a snapshot of the Generator's settings and counters.
func (g *Generator) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := Stats{
		Running: g.running.Load(), Rate: g.rate, MaxRate: MaxRate,
		InFlight: len(g.slots), MaxInFlight: g.maxInFlight,
		Mix: g.mix.clone(), Customers: g.next,
		Actions: map[string]ActionStats{},
	}
	total := newCounts()
	for _, a := range Actions() {
		c := g.stats[a]
		s.Actions[a] = c.snapshot()
		total.sent += c.sent
		total.ok += c.ok
		total.failed += c.failed
		total.partial += c.partial
		total.cancelled += c.cancelled
		total.dropped += c.dropped
		total.skipped += c.skipped
		for code, k := range c.errors {
			total.errors[code] += k
		}
		total.n += c.n
		total.sum += c.sum
		total.max = max(total.max, c.max)
		total.recent = append(total.recent, c.recent...)
	}
	s.Total = total.snapshot()
	return s
}
