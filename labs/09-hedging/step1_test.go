package hedging_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
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

func TestStep1StalledReplicaIsHedged(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Leak: leak}, func(t *testing.T) {
		sys := labtest.StartSystem(t, system.Config{})
		s, hc := hedged(t, sys, &hedging.Hedger{Delay: hedgeAfter})

		for i, stalled := range replicas { // each replica stalls in turn; its reads must escape to the next one
			next := replicas[(i+1)%len(replicas)]
			sys.Faults.ClearAll()
			require.NoError(t, sys.Faults.Set(stalled, "", faults.Fault{Latency: stall}), "step 1: setting up the stall")
			before := len(s.Attempts())

			began := time.Now()
			m, err := menuAt(hc, stalled).Menu(context.Background(), system.SampleRestaurant)
			took := time.Since(began)
			sent := s.Attempts()[before:]

			require.NoError(t, err, "step 1: reading a menu through the Hedger failed (attempts went to %s)", labtest.Hosts(sent))
			require.NotEmpty(t, m.Dishes, "step 1: the menu came back without dishes")
			if took > hedgeAfter+slack {
				t.Fatalf("step 1: %s was stalled for %v; reading a menu from it took %v, with requests sent to: %s.\n"+
					"After %v without an answer, send a copy of the read to another replica (the next one in Replicas: "+
					"a stalled replica stalls the copy too) and return the first answer.", stalled, stall, took, labtest.Hosts(sent), hedgeAfter)
			}
			if len(sent) != 2 || sent[1].Host != next {
				t.Fatalf("step 1: %s was stalled; a read sent to it went to: %s, want %s, %s. The copy goes to the replica "+
					"after the request's own in Replicas, wrapping around (menu-3's to menu-1), so that the copies of every "+
					"replica's slow reads spread over the others instead of piling onto one.", stalled, labtest.Hosts(sent), stalled, next)
			}
		}
	})
}

func TestStep1FailedAttemptIsNotAnAnswer(t *testing.T) {
	// menu-1 drops the connection (no HTTP response: a transport error)
	// just after the hedge has gone out.
	resetLate := faults.Fault{Latency: hedgeAfter + slack, Reset: true}
	cases := []struct {
		name     string
		setup    string
		rules    map[string]faults.Fault
		ok       bool          // whether the read must succeed
		attempts int           // requests it must send
		within   time.Duration // how long it may take
		why      string
	}{
		{"the first attempt fails before the delay", "menu-1 drops the connection at once", map[string]faults.Fault{"menu-1": {Reset: true}},
			false, 1, slack, "A read that fails before the delay has no answer to wait for: return its error at once, " +
				"without a copy (replacing failed requests is retrying, lab 03's pattern, with its own budget)."},
		{"the first attempt fails after the hedge went out",
			"menu-1 drops the connection after 60ms; menu-2 answers a copy after 50ms", map[string]faults.Fault{"menu-1": resetLate, "menu-2": {Latency: hedgeAfter}},
			true, 2, 2*hedgeAfter + slack, "An error is not an answer: while the other attempt is still out, wait for it " +
				"and return what it gets."},
		{"both attempts fail", "menu-1 drops the connection after 60ms; menu-2 drops a copy's at once", map[string]faults.Fault{"menu-1": resetLate, "menu-2": {Reset: true}},
			false, 2, hedgeAfter + 2*slack, "When both attempts fail, return an error (the first one) as soon as the " +
				"second has failed."},
		{"both attempts fail, the first attempt first", "menu-1 drops the connection after 60ms; menu-2 drops a copy's after 30ms",
			map[string]faults.Fault{"menu-1": resetLate, "menu-2": {Latency: 3 * slack, Reset: true}},
			false, 2, hedgeAfter + 4*slack, "When both attempts fail, return an error (the first one) as soon as the " +
				"second has failed."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 1, Leak: leak}, func(t *testing.T) {
				sys := labtest.StartSystem(t, system.Config{})
				for replica, f := range c.rules {
					require.NoError(t, sys.Faults.Set(replica, "", f), "step 1: setting up the faults")
				}
				s, hc := hedged(t, sys, &hedging.Hedger{Delay: hedgeAfter})
				// Both attempts fail with the same io.EOF: give each its own
				// error, so that the read's error says whose it is.
				s.Base = tagErrors{s.Base}

				began := time.Now()
				_, err := menuAt(hc, "menu-1").Menu(context.Background(), system.SampleRestaurant)
				took := time.Since(began)
				got, want := "failed", "fail"
				if err == nil {
					got = "succeeded"
				}
				if c.ok {
					want = "succeed"
				}
				if (err == nil) != c.ok || len(s.Attempts()) != c.attempts || took > c.within {
					why := c.why
					for _, a := range s.Attempts() {
						if errors.Is(a.Err, context.Canceled) && a.End.Sub(began) < c.within {
							// Nothing here cancels but the Hedger: the caller's context never ends.
							why = fmt.Sprintf("%s's attempt was cancelled at %v, before it could answer: when one attempt "+
								"fails, cancel that one only (one context per attempt), and keep waiting for the other.",
								a.Host, a.End.Sub(began))
							break
						}
					}
					t.Fatalf("step 1: %s (%s, with a %v hedge delay): the read %s after %v; the attempts: %s. "+
						"It should %s within %v, with %d request(s). %s", c.name, c.setup, hedgeAfter, got, took,
						labtest.Timeline(s.Attempts(), began), want, c.within, c.attempts, why)
				}
				if err != nil {
					firstErrorReturned(t, c.name, err, s.Attempts(), began)
				}
			})
		})
	}
}

// tagErrors wraps each error of base in one of its own, which names the
// attempt's host: two attempts that fail alike return different errors.
type tagErrors struct{ base http.RoundTripper }

func (t tagErrors) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		err = fmt.Errorf("%s's attempt: %w", req.URL.Host, err)
	}
	return resp, err
}

// firstErrorReturned fails the test unless err, what a read whose attempts
// all failed returned, wraps the error of the attempt that failed first
// (the Spy keeps the very error Base returned for each attempt).
func firstErrorReturned(t *testing.T, name string, err error, sent []labtest.Attempt, began time.Time) {
	t.Helper()
	var failed []labtest.Attempt
	for _, a := range sent {
		if a.Err != nil {
			failed = append(failed, a)
		}
	}
	slices.SortStableFunc(failed, func(a, b labtest.Attempt) int { return a.End.Compare(b.End) })
	if len(failed) == 0 || errors.Is(err, failed[0].Err) {
		return
	}
	whose := "none of the attempts' errors"
	for _, a := range failed[1:] {
		if errors.Is(err, a.Err) {
			whose = fmt.Sprintf("the error of %s's attempt, which failed at %v", a.Host, a.End.Sub(began))
		}
	}
	t.Fatalf("step 1: %s: the read returned %q, %s; the attempts: %s. When every attempt fails, return the "+
		"first error, %s's (at %v): the first failure is usually the cause, and the later one often only its echo.",
		name, err, whose, labtest.Timeline(sent, began), failed[0].Host, failed[0].End.Sub(began))
}

func TestStep1LoserIsCancelled(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Leak: leak}, func(t *testing.T) {
		sys := labtest.StartSystem(t, system.Config{})
		require.NoError(t, sys.Faults.Set("menu-1", "", faults.Fault{Latency: stall}), "step 1: setting up the stall")
		s, hc := hedged(t, sys, &hedging.Hedger{Delay: hedgeAfter})

		_, err := menuAt(hc, "menu-1").Menu(context.Background(), system.SampleRestaurant)
		require.NoError(t, err, "step 1: reading a menu through the Hedger failed (attempts went to %s)", s.Hosts())
		sent := s.Attempts()
		if len(sent) < 2 {
			t.Fatalf("step 1: menu-1 was stalled for %v and the read sent %d request(s) (%s): no hedge, so there was "+
				"no loser to cancel. Send a copy to the next replica after %v.", stall, len(sent), s.Hosts(), hedgeAfter)
		}
		time.Sleep(slack) // let the cancellation reach menu-1
		stats := sys.Metrics.Route("menu-1", menuRoute)
		if sent[0].Ctx.Err() == nil || stats.InFlight.Load() != 0 {
			t.Fatalf("step 1: the hedge answered, but %v later the losing request to menu-1 was still going "+
				"(its context cancelled: %v; requests in flight on menu-1: %d). It would have held a goroutine, a "+
				"connection and a slot on a struggling replica for the rest of its %v stall. Cancel the loser as soon "+
				"as the winner answers.", slack, sent[0].Ctx.Err() != nil, stats.InFlight.Load(), stall)
		}
		if stats.Cancelled.Load() != 1 {
			t.Fatalf("step 1: menu-1 saw %d cancelled requests, want 1: the losing request must be cancelled", stats.Cancelled.Load())
		}
	})
}

func TestStep1LosingResponseIsClosed(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Leak: leak}, func(t *testing.T) {
		sys := labtest.StartSystem(t, system.Config{})
		// Both attempts answer at the same instant: the loser has a response
		// too, whose body holds a connection until it is closed.
		require.NoError(t, sys.Faults.Set("menu-1", "", faults.Fault{Latency: 2 * hedgeAfter}), "step 1: setting up the delay")
		require.NoError(t, sys.Faults.Set("menu-2", "", faults.Fault{Latency: hedgeAfter}), "step 1: setting up the delay")
		s, hc := hedged(t, sys, &hedging.Hedger{Delay: hedgeAfter})

		for range 5 {
			_, err := menuAt(hc, "menu-1").Menu(context.Background(), system.SampleRestaurant)
			require.NoError(t, err, "step 1: reading a menu through the Hedger failed (attempts went to %s)", s.Hosts())
		}
		sent := s.Attempts()
		if len(sent) < 10 {
			t.Fatalf("step 1: menu-1 answered after %v, past the %v hedge delay, yet 5 reads sent only %d requests (%s): "+
				"each read should have sent a hedge.", 2*hedgeAfter, hedgeAfter, len(sent), s.Hosts())
		}
		time.Sleep(slack)
		if open := s.OpenBodies(); open > 0 {
			t.Fatalf("step 1: after 5 hedged reads, %d response bodies were never closed. When both attempts answer, "+
				"the loser's response is yours to close: until it is, its connection can be neither reused nor freed.", open)
		}
	})
}

func TestStep1FastReadsAreNotHedged(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Leak: leak}, func(t *testing.T) {
		sys := labtest.StartSystem(t, system.Config{})
		require.NoError(t, sys.Faults.Set("menu", "", faults.Fault{Latency: hedgeAfter / 5}), "step 1: setting up the latency")
		_, hc := hedged(t, sys, &hedging.Hedger{Delay: hedgeAfter})
		menus := menu.NewClient(hc, memnet.ServiceURL("menu-1"), memnet.ServiceURL("menu-2"), memnet.ServiceURL("menu-3"))

		const reads = 30
		for range reads {
			_, err := menus.Menu(context.Background(), system.SampleRestaurant)
			require.NoError(t, err, "step 1: reading a menu from healthy replicas failed")
		}
		if n, by := received(sys, menuRoute); n != reads {
			t.Fatalf("step 1: %d reads from healthy replicas (each answers in %v) sent %d requests (%s). "+
				"A hedge is for a read that has waited the whole delay (%v) without an answer, not for every read.",
				reads, hedgeAfter/5, n, by, hedgeAfter)
		}
	})
}

func TestStep1HomePageIsHedged(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Leak: leak}, func(t *testing.T) {
		sys := labtest.StartSystem(t, system.Config{
			MenuHedging: func(base http.RoundTripper, replicas []string) http.RoundTripper {
				return &hedging.Hedger{Base: base, Replicas: replicas, Delay: hedgeAfter}
			},
		})
		require.NoError(t, sys.Faults.Set("menu-2", "", faults.Fault{Latency: stall}), "step 1: setting up the stall")

		began := time.Now()
		resp, _, err := sys.GraphQL(context.Background(), "", `{ home { restaurants { name menu { name } } } }`, nil)
		took := time.Since(began)
		require.NoError(t, err, "step 1: the home-page query failed")
		require.Empty(t, resp.Errors, "step 1: the home page came back with errors")
		if took > 4*hedgeAfter {
			n, by := received(sys, menuRoute)
			t.Fatalf("step 1: menu-2 was stalled for %v and the home page took %v: %d menu reads (%s), and the ones "+
				"sent to menu-2 waited for it. With hedging after %v the page should take well under %v.",
				stall, took, n, by, hedgeAfter, 4*hedgeAfter)
		}
	})
}

func TestStep1CallerWhoGivesUpCancelsEveryAttempt(t *testing.T) {
	cases := []struct {
		name     string
		rules    map[string]faults.Fault
		giveUp   time.Duration // when the caller cancels its context
		attempts int           // requests the read has sent by then
	}{
		{"before the hedge went out", map[string]faults.Fault{"menu": {Latency: stall}}, hedgeAfter / 2, 1},
		{"while both attempts wait", map[string]faults.Fault{"menu": {Latency: stall}}, 2 * hedgeAfter, 2},
		{"while the first attempt's body is still coming", map[string]faults.Fault{"menu": {SlowBody: stall}}, hedgeAfter / 2, 1},
		{"while the hedge's body is still coming", map[string]faults.Fault{"menu-1": {Latency: stall}, "menu-2": {SlowBody: stall}}, 2 * hedgeAfter, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 1, Leak: leak}, func(t *testing.T) {
				sys := labtest.StartSystem(t, system.Config{})
				for replica, f := range c.rules {
					require.NoError(t, sys.Faults.Set(replica, "", f), "step 1: setting up the faults")
				}
				s, hc := hedged(t, sys, &hedging.Hedger{Delay: hedgeAfter})

				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				type outcome struct {
					err  error
					took time.Duration
				}
				done := make(chan outcome, 1)
				began := time.Now()
				go func() {
					_, err := get(ctx, hc, "menu-1", menuPath)
					done <- outcome{err, time.Since(began)}
				}()
				time.Sleep(c.giveUp)
				cancel()
				time.Sleep(slack)

				sent := s.Attempts()
				stillLive, states := live(sent), contexts(sent) // now, not once the read has ended
				busy, by := inFlight(sys)
				var ended *outcome
				select {
				case o := <-done:
					ended = &o
				default:
				}
				if ended == nil || len(stillLive) > 0 || busy > 0 {
					how := "had ended"
					if ended == nil {
						select {
						case o := <-done:
							how = fmt.Sprintf("had not ended (it ended %v after it began, error: %v)", o.took, o.err)
						case <-time.After(2 * stall):
							how = fmt.Sprintf("had not ended (nor had it %v later)", 2*stall)
						}
					}
					t.Fatalf("step 1: %s (%s; menu-1 read, hedge after %v), the caller cancelled its context after %v. "+
						"%v later the read %s; %d attempt(s) had been sent, their contexts: %s; menu reads still in "+
						"flight: %s. A caller who gives up must stop every request made on its behalf: give each "+
						"attempt a context derived from the caller's, context.WithCancel(req.Context()), never one "+
						"detached from it.", c.name, rules(c.rules), hedgeAfter, c.giveUp, slack, how, len(sent),
						states, by)
				}
				if ended.err == nil || len(sent) != c.attempts {
					t.Fatalf("step 1: %s (%s), the caller cancelled its context after %v; the read ended after %v "+
						"with error %v and %d attempt(s) sent (%s), want an error and %d attempt(s).", c.name,
						rules(c.rules), c.giveUp, ended.took, ended.err, len(sent), labtest.Hosts(sent), c.attempts)
				}
			})
		})
	}
}

func TestStep1OtherHostsAreNotHedged(t *testing.T) {
	const slow = 2 * hedgeAfter // the host answers after this: a hedge would have gone out
	cases := []struct {
		name     string
		replicas []string // the Hedger's Replicas
		host     string   // where the request goes
		path     string
	}{
		{"another service", replicas, "courier", "/eta/" + system.SampleRestaurant},
		{"a replica's name with a port", replicas, "menu-1:80", menuPath},
		{"a replica left out of Replicas", []string{"menu-2", "menu-3"}, "menu-1", menuPath},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 1, Leak: leak}, func(t *testing.T) {
				sys := labtest.StartSystem(t, system.Config{})
				service, _, _ := strings.Cut(c.host, ":")
				require.NoError(t, sys.Faults.Set(service, "", faults.Fault{Latency: slow}), "step 1: setting up the latency")
				s, hc := hedged(t, sys, &hedging.Hedger{Delay: hedgeAfter, Replicas: c.replicas})

				began := time.Now()
				status, err := get(context.Background(), hc, c.host, c.path)
				took := time.Since(began)
				sent := s.Attempts()
				if len(sent) != 1 || sent[0].Host != c.host || err != nil || status != http.StatusOK {
					t.Fatalf("step 1: %s: a GET to %s, a host not in Replicas (%s), answers 200 after %v; the Hedger "+
						"(hedge after %v) handed Base %d request(s) (%s) and the read ended after %v with status %d, "+
						"error %v. A request whose URL.Host is not, exactly as it is, one of Replicas is not hedged: "+
						"send it once, to its own host (a copy sent to a replica of another service gets that replica's "+
						"answer, a quick 404 say, instead of its own).", c.name, c.host,
						strings.Join(c.replicas, ", "), slow, hedgeAfter, len(sent), labtest.Hosts(sent), took, status, err)
				}
			})
		})
	}
}

// rules describes a test's faults for a message: "menu-1 latency 1s, menu-2 slow body 1s".
func rules(r map[string]faults.Fault) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(r)) {
		f := r[name]
		if f.Latency > 0 {
			parts = append(parts, fmt.Sprintf("%s answers after %v", name, f.Latency))
		}
		if f.SlowBody > 0 {
			parts = append(parts, fmt.Sprintf("%s sends its body over %v", name, f.SlowBody))
		}
	}
	if len(parts) == 0 {
		return "no fault"
	}
	return strings.Join(parts, ", ")
}
