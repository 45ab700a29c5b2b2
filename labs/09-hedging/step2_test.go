package hedging_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/menu"
	"github.com/gophereats/resilience/fooddelivery/system"
	hedging "github.com/gophereats/resilience/labs/09-hedging"
)

func TestStep2TrackerReportsThePercentile(t *testing.T) {
	const initial = 40 * time.Millisecond
	cases := []struct {
		name       string
		window     int
		percentile float64
		observed   []time.Duration
		want       time.Duration
	}{
		{"no latency yet: the initial delay", 100, 0.95, nil, initial},
		{"p95 of 1..100ms", 100, 0.95, ms(1, 1, 100), 95 * time.Millisecond},
		{"p50 of 1..10ms", 100, 0.5, ms(2, 1, 10), 5 * time.Millisecond},
		{"p95 of 20 latencies in a window of 1000", 1000, 0.95, ms(3, 1, 20), 19 * time.Millisecond},
		{"p100 is the slowest", 100, 1, ms(4, 1, 60), 60 * time.Millisecond},
		{"only the last 100 count", 100, 0.95, append(ms(5, 500, 599), ms(6, 1, 100)...), 95 * time.Millisecond},
		{"the window slides one by one", 100, 0.95, append(ms(7, 1, 100), ms(8, 201, 250)...), 245 * time.Millisecond},
		{"the oldest latency leaves first, not the smallest", 100, 0.95, append(down(200, 101), ms(9, 1, 50)...), 145 * time.Millisecond},
		// percentile x n is rarely a whole number: the rank rounds up.
		{"p95 of 1..10ms: rank 9.5 rounds up to 10", 100, 0.95, ms(10, 1, 10), 10 * time.Millisecond},
		{"p90 of 1..7ms: rank 6.3 rounds up to 7", 100, 0.9, ms(11, 1, 7), 7 * time.Millisecond},
		{"p50 of 1..5ms: rank 2.5 rounds up to 3", 100, 0.5, ms(12, 1, 5), 3 * time.Millisecond},
		{"p99 of 1..50ms: rank 49.5 rounds up to 50", 100, 0.99, ms(13, 1, 50), 50 * time.Millisecond},
		{"p30 of 1..9ms: rank 2.7 rounds up to 3", 100, 0.3, ms(14, 1, 9), 3 * time.Millisecond},
		{"p1 of 1..50ms: rank 0.5 rounds up to 1, the fastest", 100, 0.01, ms(15, 1, 50), time.Millisecond},
		// Floating point puts some products a hair above a whole number
		// (0.07 x 100 is 7.000000000000001): the rank is still that number.
		{"p7 of 1..100ms: 0.07 x 100 is 7.000000000000001 in floating point, rank 7", 100, 0.07, ms(18, 1, 100), 7 * time.Millisecond},
		{"p14 of 1..100ms: 0.14 x 100 is 14.000000000000002 in floating point, rank 14", 100, 0.14, ms(19, 1, 100), 14 * time.Millisecond},
		{"p55 of 1..100ms: 0.55 x 100 is 55.00000000000001 in floating point, rank 55", 100, 0.55, ms(20, 1, 100), 55 * time.Millisecond},
		{"p28 of 1..50ms: 0.28 x 50 is 14.000000000000002 in floating point, rank 14", 100, 0.28, ms(21, 1, 50), 14 * time.Millisecond},
		// ...but a tolerance wide enough to swallow a real fraction is wrong.
		{"p95.01 of 1..100ms: rank 95.01 rounds up to 96", 100, 0.9501, ms(22, 1, 100), 96 * time.Millisecond},
		// The edges: one latency, the slowest, a window of one.
		{"p10 of a single latency is that latency", 100, 0.1, ms(16, 7, 7), 7 * time.Millisecond},
		{"p100 of a single latency is that latency", 100, 1, ms(17, 7, 7), 7 * time.Millisecond},
		{"a window of 1 holds the last latency", 1, 0.5, []time.Duration{9 * time.Millisecond, 3 * time.Millisecond, 5 * time.Millisecond}, 5 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
				tr := hedging.NewLatencyTracker(c.window, c.percentile, initial)
				for _, d := range c.observed {
					tr.Observe(d)
					tr.Delay() // as the Hedger does: every request reads the delay
				}
				if got := tr.Delay(); got != c.want {
					t.Fatalf("step 2: NewLatencyTracker(%d, %v, %v) observed %d latencies (%s); Delay() = %v, want %v: "+
						"the nearest-rank p%.4g of the last %d latencies (the initial delay before any; Delay was read after "+
						"every Observe).",
						c.window, c.percentile, initial, len(c.observed), c.name, got, c.want, 100*c.percentile, c.window)
				}
			})
		})
	}
}

// TestStep2TrackerFollowsAMixedStream observes latencies with many repeats,
// rising and falling at random, and checks Delay after every one against
// the window sorted afresh: a sorted copy that is moved by hand must keep
// exactly the samples of the window, ties and both ends included.
func TestStep2TrackerFollowsAMixedStream(t *testing.T) {
	cases := []struct {
		window, percent int // the percentile in whole percent, so that the rank is exact
	}{
		{100, 95}, {100, 50}, {10, 100}, {9, 30}, {2, 50}, {1, 95},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("NewLatencyTracker(%d, %v, 40ms)", c.window, float64(c.percent)/100), func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
				tr := hedging.NewLatencyTracker(c.window, float64(c.percent)/100, 40*time.Millisecond)
				var seen []time.Duration
				for i := range 400 {
					// 1 to 25ms, in an order drawn from the case: each value repeats about 16 times.
					d := time.Duration(1+int(25*fooddelivery.Draw(int64(c.window*c.percent), fmt.Sprint(i), 0))) * time.Millisecond
					seen = append(seen, d)
					tr.Observe(d)
					window := slices.Sorted(slices.Values(seen[max(0, len(seen)-c.window):]))
					rank := (c.percent*len(window) + 99) / 100 // ceil(percent/100 x n), in integers
					if got, want := tr.Delay(), window[rank-1]; got != want {
						t.Fatalf("step 2: NewLatencyTracker(%d, %v, 40ms) observed %d latencies of 1 to 25ms, with repeats, "+
							"in a mixed order (the last five: %v); Delay() = %v, want %v, the nearest-rank p%d of the last %d "+
							"(the %d%s smallest). The tracker has lost track of its last %d latencies. If you keep a sorted copy "+
							"up to date by hand, check that it stays sorted and holds exactly the window when the arriving latency "+
							"is faster than the leaving one, slower, equal, or at either end of the order.",
							c.window, float64(c.percent)/100, i+1, seen[max(0, len(seen)-5):], got, want, c.percent,
							len(window), rank, ordinal(rank), c.window)
					}
				}
			})
		})
	}
}

// ordinal returns the suffix of n's ordinal: "st" for 1, "nd" for 2, "th" for 11.
func ordinal(n int) string {
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return "th"
	case n%10 == 1:
		return "st"
	case n%10 == 2:
		return "nd"
	case n%10 == 3:
		return "rd"
	}
	return "th"
}

func TestStep2TrackerRejectsABadConfiguration(t *testing.T) {
	cases := []struct {
		window     int
		percentile float64
		initial    time.Duration
		bad        string // why it is a configuration error; "" for a valid one
	}{
		{100, 95, 50 * time.Millisecond, "a percentile of 95 (meant as 95%) is above 1: its rank would be past the end of the window"},
		{100, 1.5, 50 * time.Millisecond, "a percentile of 1.5 is above 1"},
		{100, 1.0000001, 50 * time.Millisecond, "a percentile of 1.0000001 is above 1"},
		{100, 0, 50 * time.Millisecond, "a percentile of 0 is not above 0: its rank would be 0, before the fastest latency"},
		{100, -0.5, 50 * time.Millisecond, "a percentile of -0.5 is negative"},
		{0, 0.95, 50 * time.Millisecond, "a window of 0 holds no latency"},
		{-1, 0.95, 50 * time.Millisecond, "a window of -1 is negative"},
		{100, 0.95, -time.Millisecond, "an initial delay of -1ms is negative"},
		{1, 1, 0, ""},
		{1, 0.0001, 0, ""},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("NewLatencyTracker(%d, %v, %v)", c.window, c.percentile, c.initial), func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
				why, panicked := panics(func() { hedging.NewLatencyTracker(c.window, c.percentile, c.initial) })
				switch {
				case c.bad != "" && !panicked:
					t.Fatalf("step 2: NewLatencyTracker(%d, %v, %v) returned a tracker, want a panic: %s. A window below 1, "+
						"a percentile outside (0, 1] or a negative initial delay is a configuration error, which must stop "+
						"the program at start-up rather than hedge at a nonsense delay.", c.window, c.percentile, c.initial, c.bad)
				case c.bad == "" && panicked:
					t.Fatalf("step 2: NewLatencyTracker(%d, %v, %v) panicked (%v), want a tracker: a window of 1, any "+
						"percentile in (0, 1] and an initial delay of 0 are valid.", c.window, c.percentile, c.initial, why)
				}
			})
		})
	}
}

// panics calls f and reports what it panicked with, and whether it did.
func panics(f func()) (why any, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			why, panicked = r, true
		}
	}()
	f()
	return nil, false
}

func TestStep2TrackerIsSafeForConcurrentUse(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		const want = 760 * time.Millisecond // the p95 of 1..800ms
		// The same latencies from one goroutine first: a tracker that is wrong
		// even then has a percentile to fix before any locking.
		alone := hedging.NewLatencyTracker(1000, 0.95, time.Second)
		for g := range 8 {
			for i := range 100 {
				alone.Observe(time.Duration(g*100+i+1) * time.Millisecond)
				alone.Delay()
			}
		}
		if got := alone.Delay(); got != want {
			t.Fatalf("step 2: one goroutine observed 1..800ms in a window of 1000; Delay() = %v, want %v (the p95). "+
				"The tracker is wrong before any concurrency: make TestStep2TrackerReportsThePercentile pass first.",
				got, want)
		}
		tr := hedging.NewLatencyTracker(1000, 0.95, time.Second)
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 100 {
					tr.Observe(time.Duration(g*100+i+1) * time.Millisecond)
					tr.Delay()
				}
			})
		}
		wg.Wait()
		if got := tr.Delay(); got != want {
			t.Fatalf("step 2: 8 goroutines observed 1..800ms at once; Delay() = %v, want %v (the p95), which the same "+
				"latencies observed from one goroutine did give. The difference comes from the calls running at once: "+
				"every request observes and reads the tracker, from many goroutines, so guard its state with a mutex.",
				got, want)
		}
	})
}

func TestStep2HedgeDelayFollowsObservedLatency(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2, Leak: leak}, func(t *testing.T) {
		const (
			usual   = 20 * time.Millisecond  // every replica's latency...
			jitter  = 10 * time.Millisecond  // ...plus up to this
			initial = 500 * time.Millisecond // the tracker's first guess: far too long
			warmup  = 60
		)
		sys := labtest.StartSystem(t, system.Config{})
		require.NoError(t, sys.Faults.Set("menu", "", faults.Fault{Latency: usual, Jitter: jitter}), "step 2: setting up the latency")
		tracker := hedging.NewLatencyTracker(100, 0.95, initial)
		s, hc := hedged(t, sys, &hedging.Hedger{Latencies: tracker})
		menus := menu.NewClient(hc, memnet.ServiceURL("menu-1"), memnet.ServiceURL("menu-2"), memnet.ServiceURL("menu-3"))
		// Read by read: the tracker's Delay() when it began, how long it took
		// as the test measured it, and the attempts it sent.
		type read struct {
			delay, took time.Duration
			began       time.Time
			sent        []labtest.Attempt
		}
		var reads []read
		for range warmup {
			before, delay, began := len(s.Attempts()), tracker.Delay(), time.Now()
			_, err := menus.Menu(context.Background(), system.SampleRestaurant)
			require.NoError(t, err, "step 2: reading a menu from healthy replicas failed")
			reads = append(reads, read{delay, time.Since(began), began, s.Attempts()[before:]})
		}
		if sent := s.Attempts(); len(sent) > warmup+warmup/4 {
			var hedged []int // the reads that sent more than one attempt, counted from 1
			for i, r := range reads {
				if len(r.sent) > 1 {
					hedged = append(hedged, i+1)
				}
			}
			last := reads[hedged[len(hedged)-1]-1]
			after := last.sent[1].Start.Sub(last.began)
			took := make([]time.Duration, 0, len(reads))
			for _, r := range reads {
				took = append(took, r.took)
			}
			slices.Sort(took)
			p95 := took[(95*len(took)+99)/100-1] // the nearest rank: ceil(0.95 x n)
			var why string
			switch {
			case after < last.delay-slack:
				why = fmt.Sprintf("Its copy went out after %v, though the tracker's Delay() said %v: with a tracker set, "+
					"the hedge delay is its Delay(), read when the request starts, not the Hedger's Delay field (zero here).",
					after, last.delay)
			case last.delay < p95-time.Millisecond:
				why = fmt.Sprintf("Its copy went out at the tracker's Delay(), %v by then, but the p95 of the %d reads' "+
					"latencies, as the test measured them, is %v: the tracker's percentile is lower than the reads', as "+
					"if it had not seen the slow ones. Observe every read's latency until its first answer, hedged or not.",
					last.delay, len(reads), p95)
			default:
				why = fmt.Sprintf("Its copy went out after %v, the tracker's Delay() (%v), about the p95 of the reads' "+
					"latencies (%v): with that delay, about 5%% of the reads should have been hedged.", after, last.delay, p95)
			}
			t.Fatalf("step 2: %d reads from healthy replicas (%v to %v each; the tracker started at %v) sent %d "+
				"requests: %d reads were hedged (reads %s). The last of them, read %d: %s. %s", warmup, usual,
				usual+jitter, initial, len(sent), len(hedged), firstFew(hedged), hedged[len(hedged)-1],
				labtest.Timeline(last.sent, last.began), why)
		}
		if d := tracker.Delay(); d < usual || d > usual+jitter+slack {
			// Which half is wrong: a tracker fed by hand the latency of one read
			// must report it.
			probe := hedging.NewLatencyTracker(100, 0.95, initial)
			probe.Observe(usual)
			why := fmt.Sprintf("A tracker given one latency of %v by hand does report %v, so the tracker works: "+
				"the Hedger must record each read's latency in Latencies (Observe, from the start of the read to its "+
				"first answer).", usual, usual)
			if got := probe.Delay(); got != usual {
				why = fmt.Sprintf("A tracker given one latency of %v by hand reports %v: the tracker itself is wrong "+
					"(make TestStep2TrackerReportsThePercentile pass first).", usual, got)
			}
			t.Fatalf("step 2: after %d reads that each took %v to %v, the tracker's Delay() is %v (it started at %v). %s",
				warmup, usual, usual+jitter, d, initial, why)
		}

		require.NoError(t, sys.Faults.Set("menu-1", "", faults.Fault{Latency: stall}), "step 2: setting up the stall")
		before := len(s.Attempts())
		began := time.Now()
		_, err := menuAt(hc, "menu-1").Menu(context.Background(), system.SampleRestaurant)
		took := time.Since(began)
		require.NoError(t, err, "step 2: reading a menu through the Hedger failed")
		if took > 2*(usual+jitter)+slack {
			sent := s.Attempts()[before:]
			why := fmt.Sprintf("The hedge delay is the tracker's Delay() (about %v here), not the Hedger's Delay "+
				"field nor the tracker's initial %v.", tracker.Delay(), initial)
			if len(sent) > 1 && sent[1].Start.Sub(began) <= usual+jitter+slack {
				why = "The copy went out in time, yet did not answer first: see step 1."
			}
			t.Fatalf("step 2: reads took %v or a little more, then menu-1 stalled for %v; a read from it took %v, "+
				"the attempts: %s. %s", usual, stall, took, labtest.Timeline(sent, began), why)
		}
	})
}

// firstFew lists up to 12 numbers: "5, 6, 7, ... (60 in all)".
func firstFew(ns []int) string {
	var parts []string
	for _, n := range ns[:min(len(ns), 12)] {
		parts = append(parts, fmt.Sprint(n))
	}
	if len(ns) > 12 {
		parts = append(parts, fmt.Sprintf("... (%d in all)", len(ns)))
	}
	return strings.Join(parts, ", ")
}

// A hedged read is observed as long as its caller waited for it: from the
// start of the read, not from the winning copy's own send. Recording the
// copy's latency teaches the tracker a p95 lower than what callers wait,
// and the hedges then fire ever earlier.
func TestStep2HedgedReadIsObservedFromItsStart(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2, Leak: leak}, func(t *testing.T) {
		const (
			initial = 100 * time.Millisecond // the hedge delay of the first read
			fast    = 20 * time.Millisecond  // the copy's replica
		)
		sys := labtest.StartSystem(t, system.Config{})
		require.NoError(t, sys.Faults.Set("menu-1", "", faults.Fault{Latency: stall}), "step 2: stalling menu-1")
		require.NoError(t, sys.Faults.Set("menu-2", "", faults.Fault{Latency: fast}), "step 2: slowing menu-2")
		tracker := hedging.NewLatencyTracker(100, 0.95, initial)
		s, hc := hedged(t, sys, &hedging.Hedger{Latencies: tracker})
		began := time.Now()
		_, err := menuAt(hc, "menu-1").Menu(context.Background(), system.SampleRestaurant)
		took := time.Since(began)
		require.NoError(t, err, "step 2: a read from the stalled menu-1 failed (attempts went to %s)", labtest.Hosts(s.Attempts()))
		if d := tracker.Delay(); d < took-slack || d > took+slack {
			t.Fatalf("step 2: one read, whose first attempt stalled on menu-1 and whose copy went to menu-2 after %v and answered "+
				"%v later, took %v as its caller waited; the tracker, which has seen only this read, now says %v. "+
				"Observe each read's latency from the start of the read to its first answer (%v here), not from the "+
				"winning attempt's own send: a tracker fed the copy's %v learns a percentile lower than what callers wait, "+
				"and hedges ever earlier.", initial, fast, took, d, took, fast)
		}
	})
}
