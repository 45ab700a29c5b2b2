package hedging_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
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

func TestStep4EverySlowReplicaHedgesWithinBudget(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4, Leak: leak}, func(t *testing.T) {
		const (
			slow  = 200 * time.Millisecond
			reads = 100
			ratio = 0.1
			burst = 5
		)
		sys := labtest.StartSystem(t, system.Config{})
		require.NoError(t, sys.Faults.Set("menu", "", faults.Fault{Latency: slow}), "step 4: setting up the latency")
		_, hc := hedged(t, sys, &hedging.Hedger{Delay: hedgeAfter, Budget: hedging.NewHedgeBudget(ratio, burst)})
		menus := menu.NewClient(hc, memnet.ServiceURL("menu-1"), memnet.ServiceURL("menu-2"), memnet.ServiceURL("menu-3"))

		var wg sync.WaitGroup
		for range reads / 10 { // ten readers, ten reads each
			wg.Go(func() {
				for range 10 {
					menus.Menu(context.Background(), system.SampleRestaurant)
				}
			})
		}
		wg.Wait()
		n, by := received(sys, menuRoute)
		allowed := int64(ratio*reads) + burst
		if hedges := n - reads; hedges > allowed {
			t.Fatalf("step 4: every replica was slow (%v per read); %d reads sent %d hedges (%s), %.0f%% more load "+
				"exactly when the menu service had none to spare. A budget of %.0f%% of requests, saving at most %d, "+
				"allows at most %d: count each hedgeable request with Budget.Request and hedge only if Budget.TryHedge "+
				"says so.", slow, reads, hedges, by, 100*float64(hedges)/reads, 100*ratio, burst, allowed)
		}
	})
}

func TestStep4QuietReadsSaveUpHedges(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4, Leak: leak}, func(t *testing.T) {
		const (
			quiet   = 50 // quick reads first: they earn 5 hedges, the whole burst...
			stalled = 10 // ...then reads from a stalled menu-1 spend them
			slow    = 4 * hedgeAfter
			ratio   = 0.1
			burst   = 5
		)
		sys := labtest.StartSystem(t, system.Config{})
		s, hc := hedged(t, sys, &hedging.Hedger{Delay: hedgeAfter, Budget: hedging.NewHedgeBudget(ratio, burst)})
		menus := menuAt(hc, "menu-1")
		for range quiet {
			_, err := menus.Menu(context.Background(), system.SampleRestaurant)
			require.NoError(t, err, "step 4: reading a menu from a healthy replica failed")
		}
		require.NoError(t, sys.Faults.Set("menu-1", "", faults.Fault{Latency: slow}), "step 4: setting up the latency")
		before := len(s.Attempts())
		for range stalled {
			_, err := menus.Menu(context.Background(), system.SampleRestaurant)
			require.NoError(t, err, "step 4: reading a menu through the Hedger failed")
		}
		if hedges := len(s.Attempts()) - before - stalled; hedges < burst || hedges > burst+1 {
			// What a budget alone does with the same requests says which half
			// to look at.
			probe, saved := hedging.NewHedgeBudget(ratio, burst), 0
			for range quiet {
				probe.Request()
			}
			for probe.TryHedge() && saved <= 100 {
				saved++
			}
			why := "A budget given the same " + fmt.Sprint(quiet) + " Requests by hand does allow " + fmt.Sprint(burst) +
				" hedges, so the Hedger spends or earns at the wrong moment: every hedgeable request earns its share " +
				"with Budget.Request when it starts, quick or slow; Budget.TryHedge spends one only when the timer fires."
			if saved != burst {
				why = fmt.Sprintf("A budget given the same %d Requests by hand then allowed %d hedges in a row, want %d: "+
					"the budget itself is wrong (make TestStep4BudgetAllowsAShareOfRequests pass first).", quiet, saved, burst)
			}
			t.Fatalf("step 4: %d quick reads (no hedge needed) should earn a budget of %.0f%% its whole burst, %d hedges; "+
				"then menu-1 slowed to %v and %d reads from it sent %d hedge(s), want %d. %s",
				quiet, 100*ratio, burst, slow, stalled, hedges, burst, why)
		}
	})
}

func TestStep4OnlyHedgeableRequestsEarnHedges(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4, Leak: leak}, func(t *testing.T) {
		const (
			n     = 30 // requests of each kind: at 10%, enough to earn 3 hedges if they earned any
			ratio = 0.1
			burst = 5
		)
		sys := labtest.StartSystem(t, system.Config{})
		budget := hedging.NewHedgeBudget(ratio, burst)
		_, hc := hedged(t, sys, &hedging.Hedger{Delay: hedgeAfter, Budget: budget})
		menus := menuAt(hc, "menu-1")
		// saved spends, one by one, every hedge the budget allows now.
		saved := func() int {
			count := 0
			for budget.TryHedge() && count <= 100 {
				count++
			}
			return count
		}
		kinds := []struct {
			what string
			send func(i int)
		}{
			{"reviews (POST to menu-1), writes", func(i int) {
				review := fooddelivery.Review{RestaurantID: system.SampleRestaurant, User: fmt.Sprint("user-", i), Stars: 4, Text: "Fine."}
				_, err := menus.SubmitReview(context.Background(), review)
				require.NoError(t, err, "step 4: submitting a review through the Hedger failed")
			}},
			{"reads from the courier service, a host not in Replicas", func(int) {
				status, err := get(context.Background(), hc, "courier", "/eta/"+system.SampleRestaurant)
				require.NoError(t, err, "step 4: reading an ETA from the courier service through the Hedger failed")
				require.Equal(t, http.StatusOK, status, "step 4: the courier service answered %d", status)
			}},
		}
		for _, k := range kinds {
			for i := range n {
				k.send(i)
			}
			if got := saved(); got > 0 {
				why := fmt.Sprintf("Those are never to be hedged (steps 1 and 3), so they must earn nothing: call Budget.Request only for "+
					"a request it could hedge (a GET or HEAD to one of Replicas), after deciding that, and send the others "+
					"straight to Base. Earned by them, %.0f%% of a hedge each would let a client that writes a lot hedge "+
					"far more of its reads than %.0f%%.", 100*ratio, 100*ratio)
				if hedging.NewHedgeBudget(ratio, burst).TryHedge() {
					why = "A new budget, given no request at all, allows a hedge too: the budget itself is wrong (make " +
						"TestStep4BudgetAllowsAShareOfRequests pass first)."
				}
				t.Fatalf("step 4: %d %s went through the Hedger (budget %.0f%%, burst %d), and then the budget allowed "+
					"%d hedge(s) in a row, want 0. %s", n, k.what, 100*ratio, burst, got, why)
			}
		}
	})
}

func TestStep4BudgetRejectsABadConfiguration(t *testing.T) {
	cases := []struct {
		ratio float64
		burst int
		bad   string // why it is a configuration error; "" for a valid one
	}{
		{10, 5, "a ratio of 10 (meant as 10%) is above 1: ten hedges per request"},
		{1.5, 5, "a ratio of 1.5 is above 1: more hedges than requests"},
		{0, 5, "a ratio of 0 never earns a hedge"},
		{-0.1, 5, "a ratio of -0.1 is negative"},
		{0.1, 0, "a burst of 0 can never save the one hedge a TryHedge needs"},
		{0.1, -1, "a burst of -1 is negative"},
		{1, 1, ""},
		{0.001, 1, ""},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("NewHedgeBudget(%v, %d)", c.ratio, c.burst), func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
				why, panicked := panics(func() { hedging.NewHedgeBudget(c.ratio, c.burst) })
				switch {
				case c.bad != "" && !panicked:
					t.Fatalf("step 4: NewHedgeBudget(%v, %d) returned a budget, want a panic: %s. A ratio outside (0, 1] "+
						"or a burst below 1 is a configuration error, which must stop the program at start-up.",
						c.ratio, c.burst, c.bad)
				case c.bad == "" && panicked:
					t.Fatalf("step 4: NewHedgeBudget(%v, %d) panicked (%v), want a budget: any ratio in (0, 1] with a "+
						"burst of 1 or more is valid.", c.ratio, c.burst, why)
				}
			})
		})
	}
}

func TestStep4BudgetAllowsAShareOfRequests(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		const ratio, burst = 0.1, 20
		b := hedging.NewHedgeBudget(ratio, burst)
		if b.TryHedge() {
			t.Fatalf("step 4: a new budget allowed a hedge before any request: it starts empty, and each request earns %v of a hedge", ratio)
		}
		one := hedging.NewHedgeBudget(1, 1)
		one.Request()
		if !one.TryHedge() {
			t.Fatalf("step 4: NewHedgeBudget(1, 1) was given 1 request, which earned exactly 1 hedge, and TryHedge " +
				"refused it: a budget holding one whole hedge must allow it (refuse only when less than 1 is saved).")
		}
		allowed := 0
		for range 100 { // every request is slow and asks for a hedge
			b.Request()
			if b.TryHedge() {
				allowed++
			}
		}
		if allowed != 10 {
			t.Fatalf("step 4: 100 requests each asked for a hedge and %d were allowed; a budget of %.0f%% allows 10, one "+
				"every 10 requests. Floating point must not cost one: 0.1 added ten times is 0.9999999999999999, not 1 "+
				"(count in integers, millionths of a hedge say).", allowed, 100*ratio)
		}
		for range 1000 { // a quiet hour: nothing is hedged, the budget saves up
			b.Request()
		}
		saved := 0
		for b.TryHedge() && saved <= 1000 {
			saved++
		}
		if saved > burst {
			t.Fatalf("step 4: after 1000 requests without hedges, the budget allowed %d hedges in a row; it saves at "+
				"most its burst (%d), or one quiet hour would pay for a storm of hedges later.", saved, burst)
		}
		if saved < burst {
			t.Fatalf("step 4: after 1000 requests without hedges (%.0f hedges earned, capped at the burst of %d), the "+
				"budget allowed only %d hedges in a row, want %d: every whole hedge saved must be allowed, the last one "+
				"too.", 1000*ratio, burst, saved, burst)
		}
	})
}

func TestStep4BudgetIsSafeForConcurrentUse(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		const ratio, burst, requests = 0.1, 10, 8000
		b := hedging.NewHedgeBudget(ratio, burst)
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range requests / 8 {
					b.Request()
					if b.TryHedge() {
						allowed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		far := func(n int64) bool { return n > int64(ratio*requests)+burst || n < int64(ratio*requests)-burst }
		// The same requests from one goroutine: a budget that is wrong even
		// then has its counting to fix before any locking.
		alone, allowedAlone := hedging.NewHedgeBudget(ratio, burst), int64(0)
		for range requests {
			alone.Request()
			if alone.TryHedge() {
				allowedAlone++
			}
		}
		if far(allowedAlone) {
			t.Fatalf("step 4: one goroutine sent %d requests that each asked for a hedge; %d were allowed, want about "+
				"%.0f. The budget is wrong before any concurrency: make TestStep4BudgetAllowsAShareOfRequests pass first.",
				requests, allowedAlone, ratio*requests)
		}
		if n := allowed.Load(); far(n) {
			t.Fatalf("step 4: 8 goroutines sent %d requests that each asked for a hedge; %d were allowed, want about "+
				"%.0f, which the same requests from one goroutine did get (%d). The difference comes from the calls "+
				"running at once: the budget is shared by every request, so guard its state with a mutex.",
				requests, n, ratio*requests, allowedAlone)
		}
	})
}
