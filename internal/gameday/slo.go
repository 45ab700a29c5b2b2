package gameday

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Measure is one number a play of a stage yields, over one phase.
type Measure int

const (
	BrowseAvailability   Measure = iota // share of browse requests answered, in full or from a fallback
	CheckoutAvailability                // share of checkouts placed and paid
	TrackAvailability                   // share of order lookups answered
	CheckoutP99                         // the 99th percentile of checkouts' latency, answered or not
	BrowseP99                           // the 99th percentile of browse requests' latency
	FallbackShare                       // share of answers served, in part, from a fallback
	CallsPerCheckout                    // charges payment received per checkout sent (amplification)
	Recovery                            // from the phase's start to the last checkout that failed in it
	DoubleCharges                       // orders charged more than once, over the whole stage
	LetInWithoutAuth                    // requests the gateway let in although their auth check failed
	ExtraMenuReads                      // hedges per menu read the gateway asked for
	LateWork                            // units of work the order and payment services started after their customer had given up
	OrderSlots                          // the mean share of the order service's slots in use
	PaymentLoad                         // the most charges in flight at payment at once, as a share of its capacity
	RetriesPerCharge                    // retries the order service's payment client sent per first attempt
)

// measures describes each Measure: its name on the score card, whether
// the limit is a floor (at least) or a ceiling (at most), and its unit.
var measures = []struct {
	name    string
	atLeast bool
	unit    string // "%", "ms", "x", "s" or "" (a count)
}{
	BrowseAvailability:   {"browse available", true, "%"},
	CheckoutAvailability: {"checkouts succeed", true, "%"},
	TrackAvailability:    {"tracking available", true, "%"},
	CheckoutP99:          {"checkout p99", false, "ms"},
	BrowseP99:            {"browse p99", false, "ms"},
	FallbackShare:        {"from fallbacks", false, "%"},
	CallsPerCheckout:     {"charges per checkout", false, "x"},
	Recovery:             {"back after", false, "s"},
	DoubleCharges:        {"double charges", false, ""},
	LetInWithoutAuth:     {"let in without auth", false, ""},
	ExtraMenuReads:       {"extra menu reads", false, "%"},
	LateWork:             {"work after the customer left", false, ""},
	OrderSlots:           {"order slots held", false, "%"},
	PaymentLoad:          {"payment's peak load", false, "%"},
	RetriesPerCharge:     {"retries per charge", false, "x"},
}

func (m Measure) String() string { return measures[m].name }

// SLO is a limit on one measure of one phase of a stage.
type SLO struct {
	Measure Measure
	// Phase names the phase measured; "" means the whole stage.
	Phase string
	// Limit is the floor (availability) or the ceiling (everything else):
	// a share from 0 to 1, a duration in seconds, a ratio or a count.
	Limit float64
}

// String writes the SLO as the README states it: "checkouts succeed >= 97% (flaky)".
func (o SLO) String() string {
	op := "<="
	if measures[o.Measure].atLeast {
		op = ">="
	}
	s := fmt.Sprintf("%s %s %s", o.Measure, op, format(o.Measure, o.Limit))
	if o.Phase != "" {
		s += " (" + o.Phase + ")"
	}
	return s
}

// Met reports whether v meets the SLO. NaN, a phase without a request of
// the kind measured, does not: an SLO nothing could test fails closed.
func (o SLO) Met(v float64) bool {
	if math.IsNaN(v) {
		return false
	}
	if measures[o.Measure].atLeast {
		return v >= o.Limit
	}
	return v <= o.Limit
}

// format writes v in m's unit.
func format(m Measure, v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	switch measures[m].unit {
	case "%":
		return fmt.Sprintf("%.1f%%", 100*v)
	case "ms":
		return fmt.Sprintf("%dms", int(math.Round(v*1000)))
	case "s":
		return fmt.Sprintf("%.1fs", v)
	case "x":
		return fmt.Sprintf("%.2fx", v)
	}
	return fmt.Sprintf("%d", int(v))
}

// Value is what r measured for o; NaN when the phase had no request of
// the kind measured. A phase name that the stage plays more than once (a
// deploy's restarts, say) measures all of them together.
func (r Result) Value(o SLO) float64 {
	type span struct {
		from, to    time.Duration
		first, last Mark
	}
	spans := []span{{0, r.Marks[len(r.Marks)-1].At, r.Marks[0], r.Marks[len(r.Marks)-1]}}
	if o.Phase != "" {
		spans = nil
		for i, ph := range r.Phases {
			if ph.Name == o.Phase {
				spans = append(spans, span{r.Marks[i].At, r.Marks[i+1].At, r.Marks[i], r.Marks[i+1]})
			}
		}
	}
	within := func(at time.Duration) bool {
		return slices.ContainsFunc(spans, func(s span) bool { return at >= s.from && at < s.to })
	}
	// delta sums what a Mark's counter grew by over the spans.
	delta := func(f func(Mark) int64) int64 {
		var d int64
		for _, s := range spans {
			d += f(s.last) - f(s.first)
		}
		return d
	}
	var in []Request
	for _, q := range r.Requests {
		if within(q.Start) {
			in = append(in, q)
		}
	}
	share := func(keep func(Request) bool, count func(Request) bool) float64 {
		n, k := 0, 0
		for _, q := range in {
			if keep(q) {
				n++
				if count(q) {
					k++
				}
			}
		}
		if n == 0 {
			return math.NaN()
		}
		return float64(k) / float64(n)
	}
	flow := func(f string) func(Request) bool { return func(q Request) bool { return flowOf(q.Action) == f } }
	answered := func(q Request) bool { return q.Outcome != Failed }
	switch o.Measure {
	case BrowseAvailability:
		return share(flow(FlowBrowse), answered)
	case CheckoutAvailability:
		return share(flow(FlowCheckout), answered)
	case TrackAvailability:
		return share(flow(FlowTrack), answered)
	case CheckoutP99, BrowseP99:
		f := FlowCheckout
		if o.Measure == BrowseP99 {
			f = FlowBrowse
		}
		var took []time.Duration
		for _, q := range in {
			if flowOf(q.Action) == f {
				took = append(took, q.Took)
			}
		}
		if len(took) == 0 {
			return math.NaN()
		}
		return quantile(took, 0.99).Seconds()
	case FallbackShare:
		return share(func(q Request) bool { return q.Outcome != Failed }, func(q Request) bool { return q.Outcome == Degraded })
	case CallsPerCheckout:
		n := 0
		for _, q := range in {
			if q.Action == ActionCheckout {
				n++
			}
		}
		if n == 0 {
			return math.NaN()
		}
		return float64(delta(func(m Mark) int64 { return m.Charges })) / float64(n)
	case Recovery:
		var worst time.Duration
		for _, q := range in {
			if q.Action == ActionCheckout && q.Outcome == Failed {
				for _, s := range spans {
					if q.Start >= s.from && q.Start < s.to {
						worst = max(worst, q.Start-s.from)
					}
				}
			}
		}
		return worst.Seconds()
	case DoubleCharges:
		return float64(r.ChargedTwice)
	case LetInWithoutAuth:
		n := 0
		for _, at := range r.LetIn {
			if within(at) {
				n++
			}
		}
		return float64(n)
	case ExtraMenuReads:
		hedges := delta(func(m Mark) int64 { return m.Hedges })
		reads := delta(func(m Mark) int64 { return m.MenuReads }) - hedges
		if reads <= 0 {
			return 0
		}
		return float64(hedges) / float64(reads)
	case LateWork:
		return float64(delta(func(m Mark) int64 { return m.LateWork["order"] + m.LateWork["payment"] }))
	case OrderSlots, PaymentLoad:
		var sum, peak int64
		n := 0
		for _, x := range r.Samples {
			if within(x.At) {
				sum += x.Order
				peak = max(peak, x.Payment)
				n++
			}
		}
		if n == 0 {
			return math.NaN()
		}
		if o.Measure == OrderSlots {
			return float64(sum) / float64(n) / float64(Capacity["order"])
		}
		return float64(peak) / float64(Capacity["payment"])
	case RetriesPerCharge:
		retries := delta(func(m Mark) int64 { return m.Retries })
		first := delta(func(m Mark) int64 { return m.Attempts }) - retries
		if first <= 0 {
			return 0
		}
		return float64(retries) / float64(first)
	}
	panic(fmt.Sprintf("gameday: no measure %d", o.Measure))
}

// quantile returns the q-quantile of d by nearest rank, exactly; 0 for no
// samples (Value measures NaN for those before it asks).
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(i, 0)]
}

// Verdict is one SLO judged on one play.
type Verdict struct {
	SLO   SLO
	Value float64
	Met   bool
}

// Judge holds r to the SLOs of s.
func Judge(s Stage, r Result) []Verdict {
	var out []Verdict
	for _, o := range s.SLOs {
		v := r.Value(o)
		out = append(out, Verdict{SLO: o, Value: v, Met: o.Met(v)})
	}
	return out
}

// Format writes v's value in its measure's unit.
func (v Verdict) Format() string { return format(v.SLO.Measure, v.Value) }
