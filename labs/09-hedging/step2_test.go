package hedging_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
						"the nearest-rank p%.0f of the last %d latencies (the initial delay before any; Delay was read after "+
						"every Observe).",
						c.window, c.percentile, initial, len(c.observed), c.name, got, c.want, 100*c.percentile, c.window)
				}
			})
		})
	}
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
		for range warmup {
			_, err := menus.Menu(context.Background(), system.SampleRestaurant)
			require.NoError(t, err, "step 2: reading a menu from healthy replicas failed")
		}
		if sent := s.Attempts(); len(sent) > warmup+warmup/4 {
			t.Fatalf("step 2: %d reads from healthy replicas (%v to %v each) sent %d requests; the first read's "+
				"attempts: %s. With a tracker set, the hedge delay is its Delay() (%v at first, then the p95 of what "+
				"it observed), not the Hedger's Delay field (zero here).", warmup, usual, usual+jitter, len(sent),
				timeline(sent[:2], sent[0].Start), initial)
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
				"the attempts: %s. %s", usual, stall, took, timeline(sent, began), why)
		}
	})
}
