package metrics_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/internal/servetest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

// routeOf finds the snapshot of instance's route, failing the test if it
// is missing.
func routeOf(t *testing.T, snap metrics.Snapshot, instance, route string) metrics.RouteSnapshot {
	t.Helper()
	for _, r := range snap.Routes {
		if r.Instance == instance && r.Route == route {
			return r
		}
	}
	require.Failf(t, "route missing from the snapshot", "%s %s", instance, route)
	return metrics.RouteSnapshot{}
}

// bucketCounts returns the cumulative count of each bucket, keyed by its
// bound in seconds.
func bucketCounts(h metrics.Histogram) map[float64]int64 {
	out := map[float64]int64{}
	for _, b := range h.Buckets {
		out[b.UpperBoundSeconds] = b.Count
	}
	return out
}

// A replica with a concurrency limit of 1 serves a few requests over
// memnet in virtual time; the snapshot has each route's counters, status
// codes and latencies, exactly.
func TestSnapshotCountsStatusesAndLatencies(t *testing.T) {
	// One P: under the race detector and a loaded machine, a bubble whose
	// timers run on two threads at once now and then wakes the handler of
	// /wait before its caller's deadline (1 run in 30 beside two busy
	// loops); on one P it never did in 120.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	synctest.Test(t, func(t *testing.T) {
		m := metrics.NewMetrics()
		in := fooddelivery.NewInstance("menu-2", 1, m)
		mux := http.NewServeMux()
		mux.Handle("GET /fast", in.Route("GET /fast", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "ok")
		})))
		mux.Handle("GET /slow", in.Route("GET /slow", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(3 * time.Second)
			w.WriteHeader(http.StatusNoContent)
		})))
		mux.Handle("GET /teapot", in.Route("GET /teapot", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fooddelivery.WriteError(w, http.StatusTeapot, "teapot", "short and stout")
		})))
		// POST, so that net/http's Transport does not resend the request
		// when its connection drops.
		mux.Handle("POST /drop", in.Route("POST /drop", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		})))
		mux.Handle("GET /wait", in.Route("GET /wait", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
			w.WriteHeader(http.StatusGatewayTimeout)
		})))
		_, hc := servetest.Serve(t, "menu-2", mux)
		do := func(ctx context.Context, method, path string) (int, error) {
			req, err := http.NewRequestWithContext(ctx, method, memnet.ServiceURL("menu-2")+path, nil)
			require.NoError(t, err)
			resp, err := hc.Do(req)
			if err != nil {
				return 0, err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode, nil
		}
		get := func(ctx context.Context, path string) (int, error) { return do(ctx, http.MethodGet, path) }

		// The slow request holds the instance's only slot for 3s; a fast
		// one meanwhile is rejected at once.
		var wg sync.WaitGroup
		wg.Go(func() {
			code, err := get(t.Context(), "/slow")
			assert.NoError(t, err)
			assert.Equal(t, http.StatusNoContent, code)
		})
		synctest.Wait()
		code, err := get(t.Context(), "/fast")
		require.NoError(t, err)
		assert.Equal(t, http.StatusServiceUnavailable, code, "the slot is taken")
		wg.Wait()

		code, err = get(t.Context(), "/fast")
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, code)
		code, err = get(t.Context(), "/teapot")
		require.NoError(t, err)
		assert.Equal(t, http.StatusTeapot, code)
		_, err = do(t.Context(), http.MethodPost, "/drop")
		assert.Error(t, err, "the connection was closed without a response")
		ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
		_, err = get(ctx, "/wait")
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		synctest.Wait() // the handlers finish after their callers are answered

		start := time.Now()
		snap := m.Snapshot()
		assert.Equal(t, start, snap.Time, "taken on the fake clock")
		var names []string
		for _, r := range snap.Routes {
			names = append(names, r.Instance+" "+r.Route)
			assert.Equal(t, "menu", r.Service, "menu-2 is a replica of menu")
		}
		assert.Equal(t, []string{"menu-2 GET /fast", "menu-2 GET /slow", "menu-2 GET /teapot", "menu-2 GET /wait", "menu-2 POST /drop"},
			names, "every route, sorted")

		slow := routeOf(t, snap, "menu-2", "GET /slow")
		assert.Equal(t, int64(1), slow.Received)
		assert.Equal(t, int64(1), slow.Completed)
		assert.Equal(t, int64(1), slow.PeakInFlight)
		assert.Zero(t, slow.InFlight)
		assert.Equal(t, map[int]int64{204: 1}, slow.Responses)
		assert.Equal(t, int64(1), slow.Latency.Count)
		assert.Equal(t, 3.0, slow.Latency.SumSeconds, "3s of virtual time")
		assert.Equal(t, int64(0), bucketCounts(slow.Latency)[2], "not within 2s")
		assert.Equal(t, int64(1), bucketCounts(slow.Latency)[5], "within 5s")

		fast := routeOf(t, snap, "menu-2", "GET /fast")
		assert.Equal(t, int64(2), fast.Received, "rejected requests are received too")
		assert.Equal(t, int64(1), fast.Rejected)
		assert.Equal(t, int64(1), fast.Completed)
		assert.Equal(t, map[int]int64{200: 1, 503: 1}, fast.Responses, "the rejection is answered 503")
		assert.Equal(t, int64(2), fast.Latency.Count, "rejections are timed too")
		assert.Equal(t, int64(2), bucketCounts(fast.Latency)[0.005], "no virtual time passed")
		assert.Zero(t, fast.Latency.SumSeconds)

		assert.Equal(t, map[int]int64{418: 1}, routeOf(t, snap, "menu-2", "GET /teapot").Responses)
		assert.Equal(t, map[int]int64{fooddelivery.StatusNoResponse: 1}, routeOf(t, snap, "menu-2", "POST /drop").Responses,
			"a hijacked connection got no response")

		wait := routeOf(t, snap, "menu-2", "GET /wait")
		assert.Equal(t, int64(1), wait.Cancelled, "the caller gave up")
		assert.Equal(t, map[int]int64{504: 1}, wait.Responses, "the status the handler wrote, though nobody read it")
		assert.Equal(t, 1.5, wait.Latency.SumSeconds, "the handler ended when its caller left")
		assert.Equal(t, int64(0), bucketCounts(wait.Latency)[1])
		assert.Equal(t, int64(1), bucketCounts(wait.Latency)[2])

		for _, r := range snap.Routes {
			var answered int64
			for _, n := range r.Responses {
				answered += n
			}
			assert.Equal(t, r.Completed+r.Rejected, answered, "%s: every request ended is counted once by code", r.Route)
			assert.Equal(t, answered, r.Latency.Count, "%s: and once in the histogram", r.Route)
			assert.Equal(t, answered, m.Route(r.Instance, r.Route).Latency().Count, "%s: RouteStats.Latency agrees", r.Route)
		}
		assert.Equal(t, int64(1), m.Route("menu-2", "GET /fast").Responses(503))
		assert.Zero(t, m.Route("menu-2", "GET /fast").Responses(500))
	})
}

// Registered patterns and the charged-twice reader show in the snapshot
// with the values their readers give; unregistered ones are absent, in Go
// and in JSON.
func TestSnapshotReportsRegisteredPatternsOnly(t *testing.T) {
	empty := metrics.NewMetrics().Snapshot()
	assert.Empty(t, empty.Breakers)
	assert.Empty(t, empty.Bulkheads)
	assert.Empty(t, empty.RetryBudgets)
	assert.Nil(t, empty.OrdersChargedMoreThanOnce, "no ledger registered")
	js, err := json.Marshal(empty)
	require.NoError(t, err)
	assert.NotContains(t, string(js), "ordersChargedMoreThanOnce")
	assert.Contains(t, string(js), `"breakers":[]`, "empty lists encode as [] for a dashboard")

	var nilMetrics *metrics.Metrics
	assert.Empty(t, nilMetrics.Snapshot().Routes, "a nil Metrics has nothing to report")

	m := metrics.NewMetrics()
	state := metrics.BreakerClosed
	m.ReportBreaker("order->payment", func() metrics.BreakerState { return state })
	inUse := 3
	m.ReportBulkhead("gateway->menu", 4, func() int { return inUse })
	m.ReportRetryBudget("gateway->order", func() float64 { return 7.5 })
	twice := 2
	m.ReportChargedTwice(func() int { return twice })
	e := m.Edge("order", "payment")
	e.Attempts.Add(5)
	e.Retries.Add(2)
	e.Hedges.Add(3)
	e.HedgesWon.Add(1)
	e.Fallbacks.Add(6)
	e.BreakerTransitions.Add(7)
	e.Replays.Add(8)
	e.Timeouts.Add(9)
	e.BreakerOpen.Add(10)
	e.BulkheadFull.Add(11)
	e.BudgetSpent.Add(12)
	e.Overloaded.Add(13)
	fooddelivery.NewInstance("order", 20, m)
	fooddelivery.NewInstance("menu-1", 0, m)
	m.Edge("gateway", "menu")

	snap := m.Snapshot()
	assert.Equal(t, []metrics.BreakerSnapshot{{Name: "order->payment", State: metrics.BreakerClosed}}, snap.Breakers)
	assert.Equal(t, []metrics.BulkheadSnapshot{{Compartment: "gateway->menu", InUse: 3, Capacity: 4}}, snap.Bulkheads)
	assert.Equal(t, []metrics.RetryBudgetSnapshot{{Name: "gateway->order", Tokens: 7.5}}, snap.RetryBudgets)
	require.NotNil(t, snap.OrdersChargedMoreThanOnce)
	assert.Equal(t, int64(2), *snap.OrdersChargedMoreThanOnce)
	assert.Equal(t, []metrics.EdgeSnapshot{
		{Edge: "gateway->menu", Caller: "gateway", Dependency: "menu"},
		{Edge: "order->payment", Caller: "order", Dependency: "payment",
			Attempts: 5, Retries: 2, Hedges: 3, HedgesWon: 1, Fallbacks: 6, BreakerTransitions: 7, Replays: 8,
			Timeouts: 9, BreakerOpen: 10, BulkheadFull: 11, BudgetSpent: 12, Overloaded: 13},
	}, snap.Edges, "every edge, sorted, every counter")
	assert.Equal(t, map[string]int{"order": 20, "menu-1": 0}, snap.Limits, "every instance's concurrency limit, 0 for none")

	state, inUse, twice = metrics.BreakerOpen, 4, 3
	snap = m.Snapshot()
	assert.Equal(t, metrics.BreakerOpen, snap.Breakers[0].State, "readers are called on every snapshot")
	assert.Equal(t, 4, snap.Bulkheads[0].InUse)
	assert.Equal(t, int64(3), *snap.OrdersChargedMoreThanOnce)

	js, err = json.Marshal(snap)
	require.NoError(t, err)
	for _, want := range []string{`"ordersChargedMoreThanOnce":3`, `"state":"open"`, `"capacity":4`, `"tokens":7.5`, `"replays":8`} {
		assert.True(t, strings.Contains(string(js), want), "JSON has %s: %s", want, js)
	}
}

func TestServiceOf(t *testing.T) {
	for instance, service := range map[string]string{
		"menu-1": "menu", "menu-12": "menu", "payment": "payment", "menu-": "menu-", "-1": "-1", "menu-a": "menu-a", "a-b-3": "a-b",
	} {
		assert.Equal(t, service, metrics.ServiceOf(instance), "ServiceOf(%q)", instance)
	}
}
