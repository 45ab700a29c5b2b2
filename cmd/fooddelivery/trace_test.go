package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

// spansNamed returns the spans of t whose name is name.
func spansNamed(t tracing.Trace, name string) []tracing.Span {
	var out []tracing.Span
	for _, s := range t.Spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// hasEvent reports whether s recorded the event name.
func hasEvent(s tracing.Span, name string) bool {
	for _, e := range s.Events {
		if e.Name == name {
			return true
		}
	}
	return false
}

// describeTraces says what a ring held, for a failure: how many traces,
// and the span names of the first few.
func describeTraces(traces []tracing.Trace) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d traces", len(traces))
	for i, t := range traces {
		if i == 3 {
			break
		}
		names := make([]string, 0, len(t.Spans))
		for _, s := range t.Spans {
			names = append(names, s.Name)
		}
		fmt.Fprintf(&b, "\n  %s: %s", t.TraceID, strings.Join(names, ", "))
	}
	return b.String()
}

// traced runs spec for 20 s with every span kept (a ring of 5000 traces)
// and returns the traces.
func traced(t *testing.T, spec runSpec) []tracing.Trace {
	ring := tracing.NewRing(5000, tracing.DefaultSpansPerTrace)
	spec.length, spec.tracer = 20*time.Second, tracing.New(ring)
	runSystem(t, spec)
	return ring.Traces()
}

// Under lost payment answers with every lab's solution, a checkout's trace
// runs from the customer through the gateway and the order service to
// payment, and shows the charge sent twice with the same idempotency key,
// the second answered from payment's store (the replay marked).
func TestTraceShowsARetriedChargeReplayed(t *testing.T) {
	traces := traced(t, runSpec{labs: []string{"all=solution"}, scenario: "lost-payment-responses", load: 20, mix: checkoutHeavy})
	found := 0
	for _, tr := range traces {
		charges := spansNamed(tr, "payment POST /charges")
		if len(charges) < 2 || len(spansNamed(tr, "gateway POST /graphql")) == 0 || len(spansNamed(tr, "order POST /orders")) == 0 {
			continue
		}
		keys := map[any]int{}
		replayed := false
		for _, c := range charges {
			keys[c.Attributes[tracing.AttrIdempotencyKey]]++
			replayed = replayed || hasEvent(c, tracing.EventReplay)
		}
		if len(keys) == 1 && keys[nil] == 0 && replayed {
			found++
		}
	}
	if found == 0 {
		t.Fatalf("no checkout trace spans gateway, order and payment with two charges of one idempotency key and a replay; the ring held %s", describeTraces(traces))
	}
	t.Logf("%d of %d traces show a charge retried with its key and replayed", found, len(traces))
}

// Under a slow menu replica with lab 09's solution, a menu read's trace
// shows a hedged copy sent, the winner marked on the call's span, and the
// losing attempt cancelled.
func TestTraceShowsAHedgedReadWithItsWinnerAndTheCancelledLoser(t *testing.T) {
	traces := traced(t, runSpec{labs: []string{"09=solution"}, scenario: "slow-menu-replica", load: 20, mix: browseAndBuy})
	found := 0
	for _, tr := range traces {
		var sent, won, cancelled bool
		for _, s := range tr.Spans {
			sent = sent || hasEvent(s, tracing.EventHedgeSent)
			won = won || hasEvent(s, tracing.EventHedgeWon)
			cancelled = cancelled || hasEvent(s, tracing.EventHedgeCancelled)
		}
		if sent && won && cancelled {
			found++
		}
	}
	if found == 0 {
		t.Fatalf("no trace shows a hedge sent, its winner and the cancelled loser; the ring held %s", describeTraces(traces))
	}
	t.Logf("%d of %d traces show a hedged read won and its loser cancelled", found, len(traces))
}

// Whichever lab's loop retries a charge (lab 03's transport with lab 08's
// keys, lab 04's budgeted layer, lab 08's keyed client), the trace marks
// each retry with retry.attempt and its backoff and counts as retried;
// and the hedged reads of lab 09, whose copies also carry an attempt
// number, are not retries.
func TestTraceMarksTheRetriesOfEveryRetryLoop(t *testing.T) {
	for _, labs := range [][]string{{"03=solution", "08=solution"}, {"04=solution"}, {"08=solution"}, {"all=solution"}} {
		t.Run(strings.Join(labs, ","), func(t *testing.T) {
			traces := traced(t, runSpec{labs: labs, load: 20, mix: checkoutHeavy,
				faults: []string{"payment:POST /charges=error,status=503,p=0.5"}})
			marked, listed := 0, 0
			for _, tr := range traces {
				attempts := 0
				for _, s := range tr.Spans {
					for _, e := range s.Events {
						if e.Name == tracing.EventAttempt {
							attempts++
						}
					}
				}
				if attempts > 0 {
					marked++
				}
				if tracing.Summarize(tr).Has(tracing.OutcomeRetried) != (attempts > 0) {
					t.Errorf("trace %s: %d retry.attempt events, outcomes %v", tr.TraceID, attempts, tracing.Summarize(tr).Outcomes)
				}
				if tracing.Summarize(tr).Has(tracing.OutcomeRetried) {
					listed++
				}
			}
			if marked == 0 {
				t.Fatalf("half the charges answered 503 and %v retries them, but no trace has a retry.attempt event; the ring held %s", labs, describeTraces(traces))
			}
			t.Logf("%d of %d traces mark a retry, %d listed as retried", marked, len(traces), listed)
		})
	}
	t.Run("09=solution hedges", func(t *testing.T) {
		traces := traced(t, runSpec{labs: []string{"09=solution"}, scenario: "slow-menu-replica", load: 20, mix: browseAndBuy})
		hedged := 0
		for _, tr := range traces {
			s := tracing.Summarize(tr)
			if s.Has(tracing.OutcomeHedged) {
				hedged++
			}
			if s.Has(tracing.OutcomeRetried) {
				t.Errorf("trace %s was hedged, not retried (nothing retries under lab 09 alone), yet lists %v", tr.TraceID, s.Outcomes)
			}
		}
		if hedged == 0 {
			t.Fatalf("no hedged trace under a slow menu replica; the ring held %s", describeTraces(traces))
		}
	})
}
