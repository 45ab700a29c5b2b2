package faults_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/memnet"
)

const (
	charges = "POST /charges"
	menu    = "GET /menu"
)

// rig runs instances, each with the routes POST /charges and GET /menu
// behind one injector, on an in-memory network. It must be built inside a
// synctest bubble; it shuts everything down in t.Cleanup.
type rig struct {
	net    *memnet.Network
	inj    *faults.Injector
	client *http.Client
	calls  map[string]*atomic.Int64 // handler runs per "instance route"
}

func newRig(t *testing.T, seed int64, instances ...string) *rig {
	t.Helper()
	n := memnet.New()
	t.Cleanup(func() { n.Close() })
	rg := &rig{
		net:    n,
		inj:    faults.New(seed, n),
		client: &http.Client{Transport: (&memnet.Dialer{Network: n}).Transport()},
		calls:  map[string]*atomic.Int64{},
	}
	for _, name := range instances {
		l, err := n.Listen(name)
		require.NoError(t, err)
		mux := http.NewServeMux()
		for _, route := range []string{charges, menu} {
			count := new(atomic.Int64)
			rg.calls[name+" "+route] = count
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				count.Add(1)
				fooddelivery.WriteJSON(w, http.StatusOK, map[string]string{
					"served": name + " " + route,
					"pad":    strings.Repeat("x", 900),
				})
			})
			mux.Handle(route, rg.inj.Middleware(name, route, h))
		}
		srv := &http.Server{Handler: mux}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
	}
	t.Cleanup(rg.client.CloseIdleConnections)
	return rg
}

// ran reports how often the handler of route on instance ran.
func (rg *rig) ran(instance, route string) int64 { return rg.calls[instance+" "+route].Load() }

// result is what a caller saw.
type result struct {
	status  int
	header  http.Header
	body    string
	err     error
	elapsed time.Duration // virtual time from sending to the end of the body
}

// code returns the JSON error code of the body, or "".
func (r result) code() string {
	var b fooddelivery.ErrorBody
	_ = json.Unmarshal([]byte(r.body), &b)
	return b.Code
}

// call sends route to instance with request id id ("" for none) and reads
// the whole response.
func (rg *rig) call(ctx context.Context, instance, route, id string) result {
	method, path, _ := strings.Cut(route, " ")
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"orderId":"o-1","amountCents":1250,"card":"tok_visa"}`)
	}
	req, err := http.NewRequestWithContext(ctx, method, memnet.ServiceURL(instance)+path, body)
	if err != nil {
		return result{err: err}
	}
	if id != "" {
		req.Header.Set(fooddelivery.HeaderRequestID, id)
	}
	start := time.Now()
	resp, err := rg.client.Do(req)
	if err != nil {
		return result{err: err, elapsed: time.Since(start)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: string(b), err: err, elapsed: time.Since(start)}
}

func TestLatencyDelaysTheHandlerByExactlyTheConfiguredTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1, "payment")
		require.NoError(t, rg.inj.Set("payment", charges, faults.Fault{Latency: 50 * time.Millisecond}))

		res := rg.call(t.Context(), "payment", charges, "req-1")
		require.NoError(t, res.err)
		assert.Equal(t, http.StatusOK, res.status)
		assert.Equal(t, 50*time.Millisecond, res.elapsed, "a fixed latency of 50ms adds exactly 50ms of virtual time")
		assert.EqualValues(t, 1, rg.ran("payment", charges), "after the delay the handler runs")
		assert.EqualValues(t, 1, rg.inj.Applied("payment", charges))

		res = rg.call(t.Context(), "payment", menu, "req-1")
		require.NoError(t, res.err)
		assert.Zero(t, res.elapsed, "a rule for POST /charges leaves GET /menu alone")
	})
}

func TestJitterAddsADeterministicUniformDraw(t *testing.T) {
	run := func(t *testing.T) []time.Duration {
		var got []time.Duration
		synctest.Test(t, func(t *testing.T) {
			rg := newRig(t, 1, "payment")
			require.NoError(t, rg.inj.Set("payment", "", faults.Fault{Latency: 50 * time.Millisecond, Jitter: 20 * time.Millisecond}))
			for i := range 50 {
				res := rg.call(t.Context(), "payment", charges, fmt.Sprintf("req-%d", i))
				require.NoError(t, res.err)
				assert.GreaterOrEqual(t, res.elapsed, 50*time.Millisecond, "request %d", i)
				assert.Less(t, res.elapsed, 70*time.Millisecond, "request %d: jitter is drawn from [0, 20ms)", i)
				got = append(got, res.elapsed)
			}
		})
		return got
	}
	first, second := run(t), run(t)
	assert.Equal(t, first, second, "the same seed and request ids give the same delays")
	distinct := map[time.Duration]bool{}
	for _, d := range first {
		distinct[d] = true
	}
	assert.Greater(t, len(distinct), 40, "50 request ids should draw (almost) 50 different jitters")
}

func TestCallerGivingUpDuringTheDelaySkipsTheHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1, "payment")
		require.NoError(t, rg.inj.Set("payment", charges, faults.Fault{Latency: 5 * time.Second}))

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		res := rg.call(ctx, "payment", charges, "req-1")
		require.ErrorIs(t, res.err, context.DeadlineExceeded)
		assert.Equal(t, time.Second, res.elapsed)
		synctest.Wait()
		assert.Zero(t, rg.ran("payment", charges), "nobody waits for the answer any more, so the handler must not run")
	})
}

func TestTailLatencyHitsTheConfiguredFraction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 3, "menu")
		require.NoError(t, rg.inj.Set("menu", menu, faults.Fault{
			Latency:         10 * time.Millisecond,
			TailProbability: 0.1,
			TailLatency:     time.Second,
		}))
		slow := 0
		for i := range 500 {
			res := rg.call(t.Context(), "menu", menu, fmt.Sprintf("req-%d", i))
			require.NoError(t, res.err)
			switch res.elapsed {
			case time.Second:
				slow++
			case 10 * time.Millisecond:
			default:
				t.Fatalf("request %d took %v; want 10ms or, in the tail, 1s", i, res.elapsed)
			}
		}
		// Binomial(500, 0.1): mean 50, deviation 6.7.
		assert.InDelta(t, 50, slow, 20, "%d of 500 requests took the 1s tail; want about 10%%", slow)
	})
}

func TestHangEndsWhenTheCallerGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1, "payment")
		require.NoError(t, rg.inj.Set("payment", charges, faults.Fault{Hang: 30 * time.Second}))

		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		res := rg.call(ctx, "payment", charges, "req-1")
		require.ErrorIs(t, res.err, context.DeadlineExceeded)
		assert.Equal(t, 2*time.Second, res.elapsed, "the caller's 2s timeout ends the hang")
		synctest.Wait()
		assert.Zero(t, rg.ran("payment", charges), "a hung request never reaches the handler")
		assert.EqualValues(t, 1, rg.inj.Applied("payment", charges))
	})
}

func TestHangEndsAtItsMaximumWithA503(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1, "payment")
		require.NoError(t, rg.inj.Set("payment", charges, faults.Fault{Hang: 30 * time.Second}))

		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		res := rg.call(ctx, "payment", charges, "req-1")
		require.NoError(t, res.err)
		assert.Equal(t, 30*time.Second, res.elapsed, "a caller that waits longer than the hang gets an answer at 30s")
		assert.Equal(t, http.StatusServiceUnavailable, res.status)
		assert.Equal(t, "hung", res.code())
		assert.Zero(t, rg.ran("payment", charges))
	})
}

// failures sends one request per id and returns the ids that got a 503.
func failures(t *testing.T, rg *rig, ids []string) map[string]bool {
	t.Helper()
	failed := map[string]bool{}
	for _, id := range ids {
		res := rg.call(t.Context(), "payment", charges, id)
		require.NoError(t, res.err)
		if res.status == http.StatusServiceUnavailable {
			assert.Equal(t, "injected", res.code())
			failed[id] = true
		} else {
			require.Equal(t, http.StatusOK, res.status)
		}
	}
	return failed
}

func TestErrorProbabilityIsAFixedFunctionOfTheRequestID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := make([]string, 1000)
		for i := range ids {
			ids[i] = fmt.Sprintf("req-%d", i)
		}
		fault := faults.Fault{Status: http.StatusServiceUnavailable, Probability: 0.3}
		a, b, other := newRig(t, 7, "payment"), newRig(t, 7, "payment"), newRig(t, 8, "payment")
		for _, rg := range []*rig{a, b, other} {
			require.NoError(t, rg.inj.Set("payment", charges, fault))
		}

		firstA := failures(t, a, ids)
		assert.GreaterOrEqual(t, len(firstA), 250, "p=0.3 over 1000 requests")
		assert.LessOrEqual(t, len(firstA), 350, "p=0.3 over 1000 requests")
		assert.EqualValues(t, len(firstA), a.inj.Applied("payment", charges))
		assert.EqualValues(t, 1000-len(firstA), a.ran("payment", charges), "requests the fault spared reach the handler")

		assert.Equal(t, firstA, failures(t, b, ids), "a second injector with the same seed fails the same request ids")
		assert.NotEqual(t, firstA, failures(t, other, ids), "another seed fails other request ids")

		// The same ids again are retries: each gets a new draw, fixed too.
		retryA, retryB := failures(t, a, ids), failures(t, b, ids)
		assert.Equal(t, retryA, retryB, "retries draw the same fate under the same seed")
		assert.NotEqual(t, firstA, retryA, "a retry draws afresh rather than repeating the first attempt's fate")
		assert.InDelta(t, 300, len(retryA), 50)
	})
}

func TestRequestsWithoutAnIDDrawByArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := newRig(t, 5, "payment"), newRig(t, 5, "payment")
		var seqs [2][]int
		for i, rg := range []*rig{a, b} {
			require.NoError(t, rg.inj.Set("payment", "", faults.Fault{Status: 500, Probability: 0.5}))
			for range 40 {
				res := rg.call(t.Context(), "payment", menu, "")
				require.NoError(t, res.err)
				seqs[i] = append(seqs[i], res.status)
			}
		}
		assert.Equal(t, seqs[0], seqs[1])
		assert.Contains(t, seqs[0], 500)
		assert.Contains(t, seqs[0], 200)
	})
}

func TestErrorSendsRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1, "payment")
		require.NoError(t, rg.inj.Set("payment", "", faults.Fault{Status: http.StatusTooManyRequests, RetryAfter: "2"}))

		res := rg.call(t.Context(), "payment", charges, "req-1")
		require.NoError(t, res.err)
		assert.Equal(t, http.StatusTooManyRequests, res.status)
		assert.Equal(t, "2", res.header.Get("Retry-After"))
		assert.Equal(t, "injected", res.code())
		assert.Zero(t, res.elapsed)
		assert.Zero(t, rg.ran("payment", charges), "an injected status replaces the handler")

		require.NoError(t, rg.inj.Set("payment", "", faults.Fault{Status: http.StatusServiceUnavailable}))
		res = rg.call(t.Context(), "payment", charges, "req-2")
		require.NoError(t, res.err)
		assert.Empty(t, res.header.Values("Retry-After"), "no RetryAfter, no header")
	})
}

func TestResetDropsTheConnectionWithoutAResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1, "payment")
		require.NoError(t, rg.inj.Set("payment", charges, faults.Fault{Reset: true}))

		res := rg.call(t.Context(), "payment", charges, "req-1")
		require.Error(t, res.err, "a reset connection gives the caller an error, not a response")
		assert.ErrorIs(t, res.err, io.EOF, "the connection closed before any response byte")
		assert.Zero(t, res.status)
		assert.Zero(t, res.elapsed)
		assert.Zero(t, rg.ran("payment", charges))
	})
}

func TestLoseResponseRunsTheHandlerButTheCallerGetsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1, "payment")
		require.NoError(t, rg.inj.Set("payment", charges, faults.Fault{LoseResponse: true}))

		res := rg.call(t.Context(), "payment", charges, "req-1")
		require.Error(t, res.err, "the response is lost on the way back")
		assert.ErrorIs(t, res.err, io.EOF)
		assert.EqualValues(t, 1, rg.ran("payment", charges), "the charge was made although the caller never heard of it")

		rg.inj.Clear("payment", charges)
		res = rg.call(t.Context(), "payment", charges, "req-1")
		require.NoError(t, res.err)
		assert.Equal(t, http.StatusOK, res.status, "after Clear the route works again")
	})
}

func TestSlowBodySendsHeadersAtOnceAndTricklesTheBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1, "menu")
		require.NoError(t, rg.inj.Set("menu", menu, faults.Fault{SlowBody: 30 * time.Second}))

		start := time.Now()
		resp, err := rg.client.Get("http://menu/menu")
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Zero(t, time.Since(start), "status and headers arrive at once")
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))

		first := make([]byte, 1)
		_, err = resp.Body.Read(first)
		require.NoError(t, err)
		assert.Equal(t, 1500*time.Millisecond, time.Since(start), "the first of 20 pieces comes after 30s/20")

		rest, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, 30*time.Second, time.Since(start), "the last piece arrives after 30s")
		var body map[string]string
		require.NoError(t, json.Unmarshal(append(first, rest...), &body), "the trickled body is complete")
		assert.Equal(t, "menu GET /menu", body["served"])
	})
}

func TestSlowBodyStopsWhenTheCallerGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1, "payment")
		require.NoError(t, rg.inj.Set("payment", charges, faults.Fault{SlowBody: faults.MaxDuration}))

		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		res := rg.call(ctx, "payment", charges, "req-1")
		require.ErrorIs(t, res.err, context.DeadlineExceeded)
		assert.Equal(t, http.StatusOK, res.status)
		assert.Equal(t, 5*time.Second, res.elapsed)
		// If the trickle kept going, the bubble would end with a goroutine
		// still sleeping and synctest would report it.
		synctest.Wait()
		assert.EqualValues(t, 1, rg.ran("payment", charges))
	})
}

func TestConnectFaultsActOnTheNetwork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1, "payment")
		require.NoError(t, rg.inj.Set("payment", "", faults.Fault{Connect: memnet.Refused}))
		res := rg.call(t.Context(), "payment", charges, "req-1")
		assert.ErrorIs(t, res.err, syscall.ECONNREFUSED)
		assert.Zero(t, res.elapsed, "a refused connect fails at once")

		require.NoError(t, rg.inj.Set("payment", "", faults.Fault{Connect: memnet.BlackHoled}))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		res = rg.call(ctx, "payment", charges, "req-2")
		assert.ErrorIs(t, res.err, context.DeadlineExceeded)
		assert.Equal(t, time.Second, res.elapsed, "a black-holed connect waits for the caller's timeout")
		assert.Zero(t, rg.ran("payment", charges))

		rg.inj.Clear("payment", "")
		res = rg.call(t.Context(), "payment", charges, "req-3")
		require.NoError(t, res.err, "Clear heals the network")
		assert.EqualValues(t, 1, rg.ran("payment", charges))
	})
}

func TestConnectFaultsForAServiceReachItsInstances(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1, "menu-1", "menu-2", "menuboard")
		require.NoError(t, rg.inj.Set("menu", "", faults.Fault{Connect: memnet.Refused}))
		require.NoError(t, rg.inj.Set("menu-2", "", faults.Fault{Connect: memnet.BlackHoled}))

		assert.ErrorIs(t, rg.call(t.Context(), "menu-1", menu, "").err, syscall.ECONNREFUSED)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		assert.ErrorIs(t, rg.call(ctx, "menu-2", menu, "").err, context.DeadlineExceeded, "the instance's own rule beats its service's")
		assert.NoError(t, rg.call(t.Context(), "menuboard", menu, "").err, `"menu" matches "menu-<n>", not "menuboard"`)

		rg.inj.Clear("menu-2", "")
		assert.ErrorIs(t, rg.call(t.Context(), "menu-2", menu, "").err, syscall.ECONNREFUSED, "without its own rule menu-2 follows the service's")

		rg.inj.ClearAll()
		assert.NoError(t, rg.call(t.Context(), "menu-1", menu, "").err)
		assert.NoError(t, rg.call(t.Context(), "menu-2", menu, "").err)
	})
}

func TestRulesMatchInstancesServicesAndRoutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1, "menu-1", "menu-2", "menuboard")
		status := func(instance, route string) int {
			t.Helper()
			res := rg.call(t.Context(), instance, route, "")
			require.NoError(t, res.err)
			return res.status
		}

		require.NoError(t, rg.inj.Set("menu", "", faults.Fault{Status: 500}))
		assert.Equal(t, 500, status("menu-1", menu), `"menu" matches menu-1`)
		assert.Equal(t, 500, status("menu-2", charges), `"menu" matches menu-2, every route`)
		assert.Equal(t, 200, status("menuboard", menu), `"menu" does not match menuboard`)

		require.NoError(t, rg.inj.Set("menu-2", menu, faults.Fault{Status: 404}))
		require.NoError(t, rg.inj.Set("menu-1", "", faults.Fault{}))
		assert.Equal(t, 404, status("menu-2", menu), "instance and route beat the service")
		assert.Equal(t, 500, status("menu-2", charges))
		assert.Equal(t, 200, status("menu-1", menu), "an instance rule with a zero Fault shields it from the service rule")

		rg.inj.Clear("menu", "")
		assert.Equal(t, 200, status("menu-2", charges))
		assert.Equal(t, 404, status("menu-2", menu))
		assert.Zero(t, rg.inj.Applied("menu", ""), "a cleared rule counts nothing")
		assert.EqualValues(t, 2, rg.inj.Applied("menu-2", menu), "two requests met the menu-2 GET /menu rule")

		rg.inj.ClearAll()
		assert.Equal(t, 200, status("menu-2", menu))
	})
}

func TestSetRejectsNonsenseAndChangesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1, "payment")
		require.NoError(t, rg.inj.Set("payment", charges, faults.Fault{Latency: 50 * time.Millisecond}))

		for _, tc := range []struct {
			name           string
			service, route string
			fault          faults.Fault
			want           string
		}{
			{"negative latency", "payment", charges, faults.Fault{Latency: -time.Second}, "Latency is negative"},
			{"negative jitter", "payment", charges, faults.Fault{Jitter: -1}, "Jitter is negative"},
			{"negative hang", "payment", charges, faults.Fault{Hang: -time.Second}, "Hang is negative"},
			{"negative slow body", "payment", charges, faults.Fault{SlowBody: -time.Second}, "SlowBody is negative"},
			{"probability above one", "payment", charges, faults.Fault{Status: 503, Probability: 1.5}, "Probability is 1.5"},
			{"negative probability", "payment", charges, faults.Fault{Status: 503, Probability: -0.1}, "Probability"},
			{"probability NaN", "payment", charges, faults.Fault{Status: 503, Probability: math.NaN()}, "Probability is NaN"},
			{"tail probability above one", "payment", charges, faults.Fault{TailProbability: 2, TailLatency: time.Second}, "TailProbability"},
			{"tail latency without probability", "payment", charges, faults.Fault{TailLatency: time.Second}, "TailProbability is 0"},
			{"status below 100", "payment", charges, faults.Fault{Status: 99}, "Status 99"},
			{"informational status", "payment", charges, faults.Fault{Status: 100}, "Status 100"},
			{"status above 599", "payment", charges, faults.Fault{Status: 600}, "Status 600"},
			{"retry-after without status", "payment", charges, faults.Fault{RetryAfter: "2"}, "without a Status"},
			{"retry-after neither seconds nor date", "payment", charges, faults.Fault{Status: 503, RetryAfter: "soon"}, "HTTP-date"},
			{"two effects", "payment", charges, faults.Fault{Hang: time.Second, Reset: true}, "Hang and Reset cannot be combined"},
			{"connect fault on a route", "payment", charges, faults.Fault{Connect: memnet.Refused}, "route"},
			{"connect fault with more", "payment", "", faults.Fault{Connect: memnet.Refused, Latency: time.Second}, "cannot be combined"},
			{"unknown connect fault", "payment", "", faults.Fault{Connect: memnet.ConnectFault(9)}, "unknown connect fault"},
			{"empty service", "", charges, faults.Fault{Status: 503}, "empty service"},
			{"service with a colon", "pay:ment", "", faults.Fault{Status: 503}, "letters, digits"},
			{"route with '='", "payment", "POST /a=b", faults.Fault{Status: 503}, "route"},
		} {
			err := rg.inj.Set(tc.service, tc.route, tc.fault)
			if assert.ErrorIs(t, err, faults.ErrInvalid, tc.name) {
				assert.Contains(t, err.Error(), tc.want, tc.name)
			}
		}

		res := rg.call(t.Context(), "payment", charges, "req-1")
		require.NoError(t, res.err)
		assert.Equal(t, 50*time.Millisecond, res.elapsed, "rejected Sets leave the earlier rule in force")

		noNet := faults.New(1, nil)
		err := noNet.Set("payment", "", faults.Fault{Connect: memnet.BlackHoled})
		assert.ErrorIs(t, err, faults.ErrNoNetwork)
	})
}

type okHandler struct{}

func (*okHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }

func TestNilInjectorInjectsNothing(t *testing.T) {
	var inj *faults.Injector
	h := &okHandler{}
	assert.Same(t, h, inj.Middleware("payment", charges, h), "a nil *Injector returns the handler unchanged")
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want faults.Rule
	}{
		{"payment=latency,fixed=50ms,jitter=20ms", faults.Rule{Service: "payment", Fault: faults.Fault{Latency: 50 * time.Millisecond, Jitter: 20 * time.Millisecond}}},
		{"payment=latency,jitter=20ms,p=0.5", faults.Rule{Service: "payment", Fault: faults.Fault{Jitter: 20 * time.Millisecond, Probability: 0.5}}},
		{"menu:GET /menu=tail,p=0.01,latency=1s", faults.Rule{Service: "menu", Route: "GET /menu", Fault: faults.Fault{TailProbability: 0.01, TailLatency: time.Second}}},
		{"menu=tail,p=0.01,latency=1s,fixed=20ms", faults.Rule{Service: "menu", Fault: faults.Fault{Latency: 20 * time.Millisecond, TailProbability: 0.01, TailLatency: time.Second}}},
		{"payment=hang", faults.Rule{Service: "payment", Fault: faults.Fault{Hang: 30 * time.Second}}},
		{"payment:POST /charges=hang,max=100s", faults.Rule{Service: "payment", Route: "POST /charges", Fault: faults.Fault{Hang: 100 * time.Second}}},
		{"payment=error", faults.Rule{Service: "payment", Fault: faults.Fault{Status: 503}}},
		{"payment=error,status=503,p=0.5,retry-after=2", faults.Rule{Service: "payment", Fault: faults.Fault{Status: 503, Probability: 0.5, RetryAfter: "2"}}},
		{"payment=error,status=429,retry-after=Wed, 21 Oct 2015 07:28:00 GMT,p=1", faults.Rule{Service: "payment", Fault: faults.Fault{Status: 429, RetryAfter: "Wed, 21 Oct 2015 07:28:00 GMT", Probability: 1}}},
		{"payment=error,status=500,fixed=100ms", faults.Rule{Service: "payment", Fault: faults.Fault{Status: 500, Latency: 100 * time.Millisecond}}},
		{"payment=reset", faults.Rule{Service: "payment", Fault: faults.Fault{Reset: true}}},
		{"payment=reset,p=0.1", faults.Rule{Service: "payment", Fault: faults.Fault{Reset: true, Probability: 0.1}}},
		{"menu-1=slowbody,over=30s", faults.Rule{Service: "menu-1", Fault: faults.Fault{SlowBody: 30 * time.Second}}},
		{"payment:POST /charges=lose", faults.Rule{Service: "payment", Route: "POST /charges", Fault: faults.Fault{LoseResponse: true}}},
		{"payment=lose,p=0.25", faults.Rule{Service: "payment", Fault: faults.Fault{LoseResponse: true, Probability: 0.25}}},
		{"courier=refuse", faults.Rule{Service: "courier", Fault: faults.Fault{Connect: memnet.Refused}}},
		{"courier=blackhole", faults.Rule{Service: "courier", Fault: faults.Fault{Connect: memnet.BlackHoled}}},
		{"payment=latency,fixed=5ms,tail-p=0.2,tail-latency=1s,p=0.5", faults.Rule{Service: "payment", Fault: faults.Fault{Latency: 5 * time.Millisecond, TailProbability: 0.2, TailLatency: time.Second, Probability: 0.5}}},
		{"payment= error , status=502 ", faults.Rule{Service: "payment", Fault: faults.Fault{Status: 502}}},
		{"payment=slowclose,delay=2s", faults.Rule{Service: "payment", Fault: faults.Fault{SlowClose: 2 * time.Second}}},
		{"menu=bandwidth,rate=5,p=0.5", faults.Rule{Service: "menu", Fault: faults.Fault{Bandwidth: 5, Probability: 0.5}}},
		{"menu-2=limitdata,bytes=500", faults.Rule{Service: "menu-2", Fault: faults.Fault{LimitData: 500}}},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := faults.Parse(tc.spec)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			again, err := faults.Parse(got.String())
			require.NoError(t, err, "String gave %q", got.String())
			assert.Equal(t, got, again, "String gave %q, which must parse back to the same rule", got.String())
		})
	}
}

func TestStringRoundTripsEveryRuleSetAccepts(t *testing.T) {
	for _, r := range []faults.Rule{
		{Service: "payment"},
		{Service: "payment", Route: "POST /charges", Fault: faults.Fault{Jitter: time.Nanosecond}},
		{Service: "payment", Fault: faults.Fault{TailProbability: 0.3, TailLatency: time.Second, Probability: 0.5}},
		{Service: "payment", Fault: faults.Fault{Hang: time.Minute, Latency: time.Second, Probability: 0.75}},
		{Service: "payment", Fault: faults.Fault{Status: 429, RetryAfter: "Wed, 21 Oct 2015 07:28:00 GMT", TailProbability: 0.1, TailLatency: 2 * time.Second}},
		{Service: "menu", Fault: faults.Fault{SlowBody: 1500 * time.Millisecond, Jitter: 3 * time.Millisecond}},
	} {
		t.Run(r.String(), func(t *testing.T) {
			got, err := faults.Parse(r.String())
			require.NoError(t, err)
			assert.Equal(t, r, got)
		})
	}
}

func TestParseRejectsBadSpecsWithAnExample(t *testing.T) {
	for _, tc := range []struct {
		spec, want string
	}{
		{"payment=", "missing fault kind"},
		{"payment", "missing '='"},
		{"=hang", "missing service name"},
		{"payment:=hang", "empty route"},
		{"payment=explode", `unknown fault kind "explode"`},
		{"payment=hang,max=-1s", "max=-1s must be a positive duration"},
		{"payment=hang,max=0s", "positive duration"},
		{"payment=hang,max=soon", "positive duration"},
		{"payment=error,status=99", "status=99 must be an HTTP status"},
		{"payment=error,status=600", "status=600"},
		{"payment=error,retry-after=soon", "retry-after=soon"},
		{"payment=error,p=1.5", "p=1.5 is not a fraction"},
		{"payment=latency", "latency needs fixed= or jitter="},
		{"payment=latency,fixed=-5ms", "fixed=-5ms is negative"},
		{"payment=latency,fixed=5", "not a duration"},
		{"payment=tail,p=0.1", "tail needs p="},
		{"payment=tail,p=0,latency=1s", "p=0 would never fire"},
		{"payment=error,status=500,p=0", "p=0 would never fire"},
		{"payment=latency,fixed=2562047h,jitter=2562047h", "longer than a time.Duration can hold"},
		{"payment=slowbody", "slowbody needs over="},
		{"payment=reset,status=500", `reset takes no key "status"`},
		{"payment=refuse,p=0.5", "refuse takes no keys"},
		{"payment:POST /charges=refuse", "route"},
		{"payment=error,status=500,status=502", "given twice"},
		{"payment=error,500", "expected key=value"},
		{"pay ment=hang", "letters, digits"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			_, err := faults.Parse(tc.spec)
			require.Error(t, err)
			assert.True(t, errors.Is(err, faults.ErrInvalid), "error wraps ErrInvalid: %v", err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "example: ", "every error shows a working spec")
		})
	}
}

func TestConcurrentRequestsMeetTheSameFatesAsSequentialOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ids := make([]string, 200)
		for i := range ids {
			ids[i] = fmt.Sprintf("req-%d", i)
		}
		fault := faults.Fault{Status: 500, Probability: 0.4, Latency: 10 * time.Millisecond, Jitter: 10 * time.Millisecond}
		seq, conc := newRig(t, 11, "payment"), newRig(t, 11, "payment")
		require.NoError(t, seq.inj.Set("payment", "", fault))
		require.NoError(t, conc.inj.Set("payment", "", fault))

		want := map[string]int{}
		for _, id := range ids {
			want[id] = seq.call(t.Context(), "payment", charges, id).status
		}
		got := make([]int, len(ids))
		done := make(chan struct{})
		for i, id := range ids {
			go func() {
				defer func() { done <- struct{}{} }()
				got[i] = conc.call(t.Context(), "payment", charges, id).status
			}()
		}
		for range ids {
			<-done
		}
		for i, id := range ids {
			assert.Equal(t, want[id], got[i], "request %s", id)
		}
		assert.Equal(t, seq.inj.Applied("payment", ""), conc.inj.Applied("payment", ""))
	})
}

// Injector.Middleware plugs into fooddelivery.Instance.Faults.
var _ fooddelivery.Middleware = (*faults.Injector)(nil).Middleware

func TestSetRefusesTargetsNothingServesOnceRoutesAreKnown(t *testing.T) {
	inj := faults.New(1, nil)
	require.NoError(t, inj.Set("paymnt", "POST /charge", faults.Fault{Status: 503}),
		"before SetRoutes any name is accepted, as it always was")
	inj.ClearAll()

	inj.SetRoutes(map[string][]string{
		"payment": {"POST /charges", "GET /charges"},
		"menu-1":  {"GET /restaurants"},
		"menu-2":  {"GET /restaurants"},
	})
	for _, ok := range [][2]string{
		{"payment", "POST /charges"}, {"payment", ""}, {"menu", "GET /restaurants"}, {"menu-2", ""}, {"menu", ""},
	} {
		assert.NoError(t, inj.Check(ok[0], ok[1]), "%s %s is served", ok[0], ok[1])
	}

	err := inj.Set("payment", "POST /charge", faults.Fault{Hang: time.Second})
	require.ErrorIs(t, err, faults.ErrUnknownTarget)
	assert.Contains(t, err.Error(), `"POST /charge"`, "the message names the mistyped route")
	assert.Contains(t, err.Error(), `"GET /charges", "POST /charges"`, "and lists the real ones")
	assert.Empty(t, inj.List(), "a refused rule is not set")

	err = inj.Set("paymnt", "", faults.Fault{Status: 503})
	require.ErrorIs(t, err, faults.ErrUnknownTarget)
	assert.Contains(t, err.Error(), "menu, menu-1, menu-2, payment", "the message lists the services and instances")

	err = inj.Check("menu", "POST /charges")
	require.ErrorIs(t, err, faults.ErrUnknownTarget, "a route of another service is not the menu's")
	assert.Contains(t, err.Error(), `"GET /restaurants"`)

	inj.SetRoutes(nil)
	assert.NoError(t, inj.Check("paymnt", "POST /charge"), "a nil map turns the check off")
}

func TestListAndRemove(t *testing.T) {
	inj := faults.New(1, nil)
	require.NoError(t, inj.Set("payment", charges, faults.Fault{Hang: 5 * time.Second}))
	require.NoError(t, inj.Set("menu-2", "", faults.Fault{Latency: time.Second}))
	require.NoError(t, inj.Set("menu", menu, faults.Fault{Status: 500, Probability: 0.5}))
	assert.Equal(t, []faults.Rule{
		{Service: "menu", Route: menu, Fault: faults.Fault{Status: 500, Probability: 0.5}},
		{Service: "menu-2", Fault: faults.Fault{Latency: time.Second}},
		{Service: "payment", Route: charges, Fault: faults.Fault{Hang: 5 * time.Second}},
	}, inj.List())

	removed, ok := inj.Remove("payment", charges)
	require.True(t, ok)
	assert.Equal(t, "payment:POST /charges=hang,max=5s", removed.String())
	_, ok = inj.Remove("payment", charges)
	assert.False(t, ok, "removing it again finds nothing")
	assert.Len(t, inj.List(), 2)
}

func TestRemovingARuleChangesWhatRequestsSee(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1, "payment")
		require.NoError(t, rg.inj.Set("payment", charges, faults.Fault{Status: 502}))
		assert.Equal(t, 502, rg.call(context.Background(), "payment", charges, "r1").status)
		_, ok := rg.inj.Remove("payment", charges)
		require.True(t, ok)
		assert.Equal(t, 200, rg.call(context.Background(), "payment", charges, "r2").status)
	})
}

func TestConnectFaultOnTheGatewayIsRefused(t *testing.T) {
	inj := faults.New(1, memnet.New())
	inj.SetRoutes(map[string][]string{"gateway": {"POST /graphql"}, "payment": {"POST /charges"}})
	for _, spec := range []string{"gateway=refuse", "gateway=blackhole"} {
		r, err := faults.Parse(spec)
		require.NoError(t, err)
		err = inj.Set(r.Service, r.Route, r.Fault)
		require.Error(t, err, "%s would do nothing: nothing dials the gateway on the system's network", spec)
		assert.Contains(t, err.Error(), "fault its routes instead")
	}
	r, err := faults.Parse("payment=refuse")
	require.NoError(t, err)
	assert.NoError(t, inj.Set(r.Service, r.Route, r.Fault), "other services are dialled on the network")
}

// No fault may hold a request longer than MaxDuration, whatever adds up:
// each spec below was accepted once and injected nothing (a tail latency
// plus jitter overflowed) or held requests for centuries.
func TestFaultTimesAreBounded(t *testing.T) {
	for _, spec := range []string{
		"menu-3:GET /restaurants=tail,p=1,latency=2562047h,jitter=2562047h",
		"payment=latency,fixed=2562047h",
		"payment=hang,max=2562047h",
		"payment=hang,max=11m",
		"payment=latency,fixed=6m,jitter=5m",
		"payment=error,fixed=5m,tail-p=0.1,tail-latency=5m1s",
		"menu=slowbody,over=9m,fixed=61s",
	} {
		_, err := faults.Parse(spec)
		require.ErrorIs(t, err, faults.ErrInvalid, spec)
		assert.Contains(t, err.Error(), "over the 10m0s one request may be held", spec)
	}
	for _, spec := range []string{"payment=hang,max=10m", "payment=latency,fixed=5m,jitter=5m", "menu=tail,p=0.5,latency=9m,fixed=1m"} {
		_, err := faults.Parse(spec)
		assert.NoError(t, err, "%s is within the bound", spec)
	}
	err := faults.New(1, nil).Set("payment", "", faults.Fault{Latency: time.Duration(math.MaxInt64 - 1), Jitter: time.Duration(math.MaxInt64 - 1)})
	assert.ErrorIs(t, err, faults.ErrInvalid, "Set, the admin API's way in, has the same bound")
}

// The faults that act on TCP connections exist only where Toxiproxy
// stands between processes: one process refuses them, and a process of
// -processes (SetTCP) keeps them, and every rule TCP accepts, out of its
// requests and its dials.
func TestTCPFaultsAreLeftToToxiproxy(t *testing.T) {
	for _, spec := range []string{"payment=slowclose,delay=2s", "payment=bandwidth,rate=5", "payment=limitdata,bytes=500"} {
		r, err := faults.Parse(spec)
		require.NoError(t, err)
		err = faults.New(1, nil).Set(r.Service, r.Route, r.Fault)
		assert.ErrorIs(t, err, faults.ErrInvalid, "%s in one process", spec)
		assert.ErrorContains(t, err, "-processes")
		assert.True(t, faults.TCP(r), "%s acts on connections", spec)
	}
	for spec, tcp := range map[string]bool{
		"payment=refuse": true, "payment=blackhole": true, "payment=reset": true, "payment=reset,p=0.5": true,
		"payment=latency,fixed=50ms,jitter=10ms": true, "payment=latency,fixed=50ms,p=0.5": true,
		"payment:POST /charges=reset": false, "payment=reset,fixed=10ms": false, "payment=latency,fixed=5ms,tail-p=0.1,tail-latency=1s": false,
		"payment=error,status=503": false, "payment=hang": false, "payment=lose": false, "payment=slowbody,over=1s": false,
	} {
		r, err := faults.Parse(spec)
		require.NoError(t, err)
		assert.Equal(t, tcp, faults.TCP(r), "TCP(%s)", spec)
	}
	for _, bad := range []string{"payment:POST /charges=slowclose,delay=1s", "payment=bandwidth,rate=0", "payment=limitdata,bytes=-1", "payment=slowclose,delay=11m", "payment=bandwidth"} {
		_, err := faults.Parse(bad)
		assert.ErrorIs(t, err, faults.ErrInvalid, bad)
	}

	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1, "payment")
		rg.inj.SetTCP()
		require.NoError(t, rg.inj.Set("payment", "", faults.Fault{Reset: true}))
		res := rg.call(t.Context(), "payment", charges, "req-1")
		require.NoError(t, res.err, "with SetTCP a whole-service reset is Toxiproxy's: the request passes")
		require.NoError(t, rg.inj.Set("payment", "", faults.Fault{Connect: memnet.Refused}))
		res = rg.call(t.Context(), "payment", charges, "req-2")
		require.NoError(t, res.err, "with SetTCP a refuse is Toxiproxy's: the dial is not refused here")
		require.NoError(t, rg.inj.Set("payment", "", faults.Fault{SlowClose: time.Second}))
		require.NoError(t, rg.inj.Set("payment", charges, faults.Fault{Reset: true}))
		res = rg.call(t.Context(), "payment", charges, "req-3")
		assert.Error(t, res.err, "a reset of one route acts on requests: the injector still applies it")
		assert.EqualValues(t, 2, rg.ran("payment", charges))
	})
}

// A crash rule runs the handler, then calls the kill function before any
// answer leaves; without one (a single process) it is refused.
func TestCrashRunsTheHandlerThenKills(t *testing.T) {
	r, err := faults.Parse("payment:POST /charges=crash,p=0.5")
	require.NoError(t, err)
	assert.Equal(t, faults.Fault{Crash: true, Probability: 0.5}, r.Fault)
	err = faults.New(1, nil).Set("payment", charges, faults.Fault{Crash: true})
	assert.ErrorIs(t, err, faults.ErrInvalid)
	assert.ErrorContains(t, err, "-processes")

	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1, "payment")
		killed := 0
		rg.inj.SetCrash(func() { killed++ })
		require.NoError(t, rg.inj.Set("payment", charges, faults.Fault{Crash: true}))
		res := rg.call(t.Context(), "payment", charges, "req-1")
		assert.EqualValues(t, 1, rg.ran("payment", charges), "the handler ran: the charge happened")
		assert.Equal(t, 1, killed, "then the process was killed")
		assert.Error(t, res.err, "and no answer left")
	})
}

// CrashNext kills the process in the next request to its route, once,
// after the handler ran; it needs SetCrash and a route.
func TestCrashNextKillsOnceAfterTheHandler(t *testing.T) {
	assert.ErrorContains(t, faults.New(1, nil).CrashNext("payment", charges), "-processes")
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1, "payment")
		killed := 0
		rg.inj.SetCrash(func() { killed++ })
		assert.ErrorIs(t, rg.inj.CrashNext("payment", ""), faults.ErrInvalid)
		require.NoError(t, rg.inj.CrashNext("payment", charges))
		res := rg.call(t.Context(), "payment", charges, "req-1")
		assert.Error(t, res.err, "no answer left")
		assert.Equal(t, 1, killed)
		assert.EqualValues(t, 1, rg.ran("payment", charges), "the charge ran before the kill")
		res = rg.call(t.Context(), "payment", charges, "req-2")
		assert.NoError(t, res.err, "armed once: the next charge is answered")
		assert.Equal(t, 1, killed)
		assert.Empty(t, rg.inj.List(), "arming is not a rule")
	})
}

// The baseline (the services' usual latencies) applies where no rule
// does: a rule takes over while it stays, and the rule list, Applied and
// ClearAll never see the baseline.
func TestBaselineAppliesWhereNoRuleDoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rg := newRig(t, 1, "payment")
		require.NoError(t, rg.inj.SetBaseline([]faults.Rule{{Service: "payment", Fault: faults.Fault{Latency: 80 * time.Millisecond}}}))
		res := rg.call(t.Context(), "payment", charges, "req-1")
		require.NoError(t, res.err)
		assert.Equal(t, 80*time.Millisecond, res.elapsed, "the usual 80 ms")
		assert.Empty(t, rg.inj.List(), "the baseline is not a fault")

		require.NoError(t, rg.inj.Set("payment", charges, faults.Fault{Latency: time.Second}))
		res = rg.call(t.Context(), "payment", charges, "req-2")
		assert.Equal(t, time.Second, res.elapsed, "a fault takes over from the baseline")
		rg.inj.ClearAll()
		res = rg.call(t.Context(), "payment", charges, "req-3")
		assert.Equal(t, 80*time.Millisecond, res.elapsed, "clearing every fault leaves the usual latency")
	})
	err := faults.New(1, nil).SetBaseline([]faults.Rule{{Service: "payment", Fault: faults.Fault{Status: 503}}})
	assert.ErrorIs(t, err, faults.ErrInvalid, "a baseline is latency only")
}
