package hedging_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/system"
	hedging "github.com/gophereats/resilience/labs/09-hedging"
)

func TestStep3OnlyReadsAreHedged(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3, Leak: leak}, func(t *testing.T) {
		const slow = 300 * time.Millisecond
		sys := labtest.StartSystem(t, system.Config{})
		require.NoError(t, sys.Faults.Set("menu-1", "", faults.Fault{Latency: slow}), "step 3: setting up the latency")
		s, hc := hedged(t, sys, &hedging.Hedger{Delay: hedgeAfter})
		menus := menuAt(hc, "menu-1")

		began := time.Now()
		_, err := menus.Menu(context.Background(), system.SampleRestaurant)
		require.NoError(t, err, "step 3: reading a menu through the Hedger failed")
		if took := time.Since(began); took > hedgeAfter+slack {
			t.Fatalf("step 3: a menu read from menu-1 (slow: %v) took %v, the attempts: %s. A GET is a read: "+
				"hedged after %v, its copy to menu-2 answers first (step 1).", slow, took, labtest.Timeline(s.Attempts(), began), hedgeAfter)
		}

		review := fooddelivery.Review{RestaurantID: system.SampleRestaurant, User: "alice", Stars: 5, Text: "Crisp crust."}
		before := len(s.Attempts())
		_, err = menus.SubmitReview(context.Background(), review)
		require.NoError(t, err, "step 3: submitting a review through the Hedger failed")
		// Counted where the Hedger hands requests to Base: a copy counts even
		// if it never reached a replica (its body already read by the first).
		if sent := s.Attempts()[before:]; len(sent) != 1 {
			t.Fatalf("step 3: one review was handed to Base as %d POST requests (%s). A write is not idempotent: "+
				"a copy that reaches a replica stores the review twice. Hedge only GET and HEAD; send everything else "+
				"to its one replica.", len(sent), labtest.Hosts(sent))
		}
		if n, by := received(sys, "POST /reviews"); n != 1 {
			t.Fatalf("step 3: one review was sent as %d POST /reviews requests (%s). A write is not idempotent: "+
				"had menu-1 been slow after storing the review rather than before, it would now be stored twice. "+
				"Hedge only GET and HEAD; send everything else to its one replica.", n, by)
		}
		require.Equal(t, 1, sys.Reviews.Len(), "step 3: one review submitted, one stored")
	})
}

func TestStep3EveryReadIsHedged(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3, Leak: leak}, func(t *testing.T) {
		sys := labtest.StartSystem(t, system.Config{})
		// Connections to menu-1 never open: every request to it waits, whatever its method or route.
		require.NoError(t, sys.Faults.Set("menu-1", "", faults.Fault{Connect: memnet.BlackHoled}), "step 3: setting up the black hole")
		h := &hedging.Hedger{Delay: hedgeAfter}
		s, _ := hedged(t, sys, h)

		// Sent to the Hedger itself, as an http.Client would hand them over:
		// an empty Method is how a Request built by hand says GET.
		for _, method := range []string{"", http.MethodGet, http.MethodHead} {
			ctx, cancel := context.WithTimeout(context.Background(), 4*hedgeAfter)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, memnet.ServiceURL("menu-1")+menuPath, nil)
			require.NoError(t, err, "step 3: building a request")
			req.Method = method
			before := len(s.Attempts())
			began := time.Now()
			resp, err := h.RoundTrip(req)
			took := time.Since(began)
			cancel()
			if err == nil {
				resp.Body.Close()
			}
			sent := s.Attempts()[before:]
			if err != nil || took > hedgeAfter+slack || len(sent) != 2 {
				name := method
				if name == "" {
					name = `an empty Method (which net/http sends as GET)`
				}
				t.Fatalf("step 3: a request with %s to menu-1 (which did not answer) took %v (error: %v) and was "+
					"handed to Base %d time(s): %s. GET and HEAD are reads, and so is an empty Method, which means GET: "+
					"hedge all three after %v.", name, took, err, len(sent), labtest.Timeline(sent, began), hedgeAfter)
			}
		}
	})
}

func TestStep3NoWriteIsHedged(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3, Leak: leak}, func(t *testing.T) {
		const wait = 4 * hedgeAfter // how long each request waits for menu-1
		sys := labtest.StartSystem(t, system.Config{})
		// Connections to menu-1 never open: every request to it waits, whatever its method or route.
		require.NoError(t, sys.Faults.Set("menu-1", "", faults.Fault{Connect: memnet.BlackHoled}), "step 3: setting up the black hole")
		s, hc := hedged(t, sys, &hedging.Hedger{Delay: hedgeAfter})

		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			req, err := http.NewRequestWithContext(ctx, method, memnet.ServiceURL("menu-1")+"/reviews", strings.NewReader(`{"stars":5}`))
			require.NoError(t, err, "step 3: building a %s request", method)
			if resp, err := hc.Do(req); err == nil {
				resp.Body.Close()
			}
			cancel()
			if n := s.CountMethod(method); n != 1 {
				var hosts []string
				for _, a := range s.Attempts() {
					if a.Method == method {
						hosts = append(hosts, a.Host)
					}
				}
				t.Fatalf("step 3: one %s to menu-1, which did not answer for %v, was handed to Base as %d requests (%s). "+
					"%s is a write: hedge only GET and HEAD, and send every other method to its one replica.",
					method, wait, n, strings.Join(hosts, ", "), method)
			}
		}
	})
}
