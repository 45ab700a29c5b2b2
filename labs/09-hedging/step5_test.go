package hedging_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/system"
	hedging "github.com/gophereats/resilience/labs/09-hedging"
)

func TestStep5WinnersBodyStaysReadable(t *testing.T) {
	const trickle = 200 * time.Millisecond
	cases := []struct {
		name   string
		winner string
		rules  map[string]faults.Fault
	}{
		{"the hedge wins", "menu-2", map[string]faults.Fault{
			"menu-1": {Latency: stall},
			"menu-2": {SlowBody: trickle},
		}},
		{"the first attempt wins", "menu-1", map[string]faults.Fault{
			"menu-1": {SlowBody: trickle},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 5, Leak: leak}, func(t *testing.T) {
				sys := labtest.StartSystem(t, system.Config{})
				for replica, f := range c.rules {
					require.NoError(t, sys.Faults.Set(replica, "", f), "step 5: setting up the faults")
				}
				s, hc := hedged(t, sys, &hedging.Hedger{Delay: hedgeAfter})

				began := time.Now()
				m, err := menuAt(hc, "menu-1").Menu(context.Background(), system.SampleRestaurant)
				took := time.Since(began)
				if err != nil {
					t.Fatalf("step 5: %s sent its headers first and then its body over %v; reading the body failed "+
						"after %v: %v (requests sent to: %s).\nThe winner's body is read after RoundTrip returns: "+
						"cancelling the loser must not cancel the winner (one context per attempt), and the winner's "+
						"context may only be cancelled when its body is closed.", c.winner, trickle, took, err, s.Hosts())
				}
				require.NotEmpty(t, m.Dishes, "step 5: the menu came back without dishes")
				if took > hedgeAfter+trickle+slack {
					t.Fatalf("step 5: %s (%s): %s sends its headers first and its body over %v, yet the read took %v, "+
						"the attempts: %s. A read that has waited %v is hedged to the next replica (step 1).", c.name,
						rules(c.rules), c.winner, trickle, took, labtest.Timeline(s.Attempts(), began), hedgeAfter)
				}
			})
		})
	}
}

func TestStep5WinnerIsReleasedWhenItsBodyIsClosed(t *testing.T) {
	cases := []struct {
		name   string
		rules  map[string]faults.Fault
		winner string // the attempt whose response RoundTrip returns
		sent   int    // attempts the read sends
	}{
		{"a quick read, no hedge", nil, "menu-1", 1},
		{"the hedge wins", map[string]faults.Fault{"menu-1": {Latency: stall}}, "menu-2", 2},
		{"the first attempt wins after the hedge went out",
			map[string]faults.Fault{"menu-1": {Latency: hedgeAfter + slack}, "menu-2": {Latency: stall}}, "menu-1", 2},
	}
	for _, c := range cases {
		for _, readFirst := range []bool{true, false} {
			how := "read to the end, then closed"
			if !readFirst {
				how = "closed unread"
			}
			t.Run(c.name+", "+how, func(t *testing.T) {
				labtest.Run(t, labtest.Options{Step: 5, Leak: leak}, func(t *testing.T) {
					sys := labtest.StartSystem(t, system.Config{})
					for replica, f := range c.rules {
						require.NoError(t, sys.Faults.Set(replica, "", f), "step 5: setting up the faults")
					}
					s, hc := hedged(t, sys, &hedging.Hedger{Delay: hedgeAfter})
					req, err := http.NewRequest(http.MethodGet, memnet.ServiceURL("menu-1")+menuPath, nil)
					require.NoError(t, err, "step 5: building the request")

					resp, err := hc.Do(req)
					require.NoError(t, err, "step 5: reading a menu through the Hedger failed (requests sent to: %s)", s.Hosts())
					sent := s.Attempts()
					if len(sent) != c.sent || sent[len(sent)-1].Host != replicas[len(sent)-1] {
						resp.Body.Close()
						t.Fatalf("step 5: %s (%s): the read sent %d request(s) (%s), want %d. Hedge a read that has "+
							"waited %v (step 1).", c.name, rules(c.rules), len(sent), labtest.Hosts(sent), c.sent, hedgeAfter)
					}
					if readFirst {
						_, err = io.ReadAll(resp.Body)
						require.NoError(t, err, "step 5: reading the winning body of %s failed after %d attempt(s)", c.winner, len(sent))
					}
					winner := slices.IndexFunc(sent, func(a labtest.Attempt) bool { return a.Host == c.winner })
					if sent[winner].Ctx.Err() != nil {
						resp.Body.Close()
						t.Fatalf("step 5: %s (%s): the winning attempt's context (%s's) was already done before the "+
							"caller closed its body (%d attempt(s), contexts: %s): its body could not have been read. "+
							"Cancel the winner only when its body is closed.", c.name, rules(c.rules), c.winner,
							len(sent), contexts(sent))
					}
					require.NoError(t, resp.Body.Close(), "step 5: closing the winning body of %s (%d attempt(s))", c.winner, len(sent))
					time.Sleep(slack)
					if sent[winner].Ctx == req.Context() {
						t.Fatalf("step 5: %s (%s): of the %d attempt(s), %s's, the winner, was handed to Base with the "+
							"caller's own context, which the Hedger can never cancel: give each attempt its own, "+
							"context.WithCancel(req.Context()), and cancel the winner's when the caller closes its body.",
							c.name, rules(c.rules), len(sent), c.winner)
					}
					if len(live(sent)) > 0 {
						t.Fatalf("step 5: %s (%s): the caller closed the body of %s's winning response (%s); %v later, the "+
							"contexts of the %d attempt(s) were: %s. Once the caller has closed the body, the read "+
							"is over: cancel the winner's context too (wrap resp.Body so that Close calls its cancel "+
							"function), or every read leaves a context that is never released, registered with the "+
							"caller's for as long as that one lives.", c.name, rules(c.rules), c.winner, how, slack,
							len(sent), contexts(sent))
					}
				})
			})
		}
	}
}
