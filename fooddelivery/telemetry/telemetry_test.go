package telemetry_test

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/system"
	"github.com/gophereats/resilience/fooddelivery/telemetry"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

// serve sends one GET to h directly (no network) and returns the status.
func serve(h http.Handler, path string) int {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return w.Code
}

// A route with a slow answer, a quick 404 and a rejection, an edge, one
// pattern of each kind and a ledger: the collector emits exactly these
// numbers, under the names, labels and types the package documents.
func TestCollectorEmitsTheSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := metrics.NewMetrics()
		in := fooddelivery.NewInstance("menu-2", 1, m)
		h := in.Route("GET /menus", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Has("missing") {
				http.NotFound(w, r)
				return
			}
			time.Sleep(300 * time.Millisecond)
		}))
		var wg sync.WaitGroup
		wg.Go(func() { assert.Equal(t, http.StatusOK, serve(h, "/menus")) })
		synctest.Wait()
		assert.Equal(t, http.StatusServiceUnavailable, serve(h, "/menus"), "the only slot is taken")
		wg.Wait()
		assert.Equal(t, http.StatusNotFound, serve(h, "/menus?missing"))

		late := m.Route("payment", "POST /charges")
		late.WorkAfterCallerLeft.Add(2)
		late.WastedWork.Add(int64(1500 * time.Millisecond))
		e := m.Edge("order", "payment")
		e.Attempts.Add(9)
		e.Retries.Add(4)
		e.Hedges.Add(3)
		e.HedgesWon.Add(2)
		e.BreakerOpen.Add(5)
		e.BulkheadFull.Add(11)
		e.BudgetSpent.Add(12)
		e.Timeouts.Add(13)
		e.Overloaded.Add(14)
		e.Fallbacks.Add(6)
		e.BreakerTransitions.Add(7)
		e.Replays.Add(1)
		m.ReportBreaker("order->payment", func() metrics.BreakerState { return metrics.BreakerHalfOpen })
		m.ReportBulkhead("gateway->menu", 4, func() int { return 1 })
		m.ReportRetryBudget("gateway->order", func() float64 { return 2.5 })
		m.ReportChargedTwice(func() int { return 3 })

		c := telemetry.NewCollector(m)
		const want = `
# HELP fooddelivery_http_request_duration_seconds Time from a request's arrival to its answer, in seconds.
# TYPE fooddelivery_http_request_duration_seconds histogram
fooddelivery_http_request_duration_seconds_bucket{instance="menu-2",route="GET /menus",service="menu",le="0.005"} 2
fooddelivery_http_request_duration_seconds_bucket{instance="menu-2",route="GET /menus",service="menu",le="0.01"} 2
fooddelivery_http_request_duration_seconds_bucket{instance="menu-2",route="GET /menus",service="menu",le="0.025"} 2
fooddelivery_http_request_duration_seconds_bucket{instance="menu-2",route="GET /menus",service="menu",le="0.05"} 2
fooddelivery_http_request_duration_seconds_bucket{instance="menu-2",route="GET /menus",service="menu",le="0.1"} 2
fooddelivery_http_request_duration_seconds_bucket{instance="menu-2",route="GET /menus",service="menu",le="0.25"} 2
fooddelivery_http_request_duration_seconds_bucket{instance="menu-2",route="GET /menus",service="menu",le="0.5"} 3
fooddelivery_http_request_duration_seconds_bucket{instance="menu-2",route="GET /menus",service="menu",le="1"} 3
fooddelivery_http_request_duration_seconds_bucket{instance="menu-2",route="GET /menus",service="menu",le="2"} 3
fooddelivery_http_request_duration_seconds_bucket{instance="menu-2",route="GET /menus",service="menu",le="5"} 3
fooddelivery_http_request_duration_seconds_bucket{instance="menu-2",route="GET /menus",service="menu",le="10"} 3
fooddelivery_http_request_duration_seconds_bucket{instance="menu-2",route="GET /menus",service="menu",le="30"} 3
fooddelivery_http_request_duration_seconds_bucket{instance="menu-2",route="GET /menus",service="menu",le="+Inf"} 3
fooddelivery_http_request_duration_seconds_sum{instance="menu-2",route="GET /menus",service="menu"} 0.3
fooddelivery_http_request_duration_seconds_count{instance="menu-2",route="GET /menus",service="menu"} 3
fooddelivery_http_request_duration_seconds_bucket{instance="payment",route="POST /charges",service="payment",le="0.005"} 0
fooddelivery_http_request_duration_seconds_bucket{instance="payment",route="POST /charges",service="payment",le="0.01"} 0
fooddelivery_http_request_duration_seconds_bucket{instance="payment",route="POST /charges",service="payment",le="0.025"} 0
fooddelivery_http_request_duration_seconds_bucket{instance="payment",route="POST /charges",service="payment",le="0.05"} 0
fooddelivery_http_request_duration_seconds_bucket{instance="payment",route="POST /charges",service="payment",le="0.1"} 0
fooddelivery_http_request_duration_seconds_bucket{instance="payment",route="POST /charges",service="payment",le="0.25"} 0
fooddelivery_http_request_duration_seconds_bucket{instance="payment",route="POST /charges",service="payment",le="0.5"} 0
fooddelivery_http_request_duration_seconds_bucket{instance="payment",route="POST /charges",service="payment",le="1"} 0
fooddelivery_http_request_duration_seconds_bucket{instance="payment",route="POST /charges",service="payment",le="2"} 0
fooddelivery_http_request_duration_seconds_bucket{instance="payment",route="POST /charges",service="payment",le="5"} 0
fooddelivery_http_request_duration_seconds_bucket{instance="payment",route="POST /charges",service="payment",le="10"} 0
fooddelivery_http_request_duration_seconds_bucket{instance="payment",route="POST /charges",service="payment",le="30"} 0
fooddelivery_http_request_duration_seconds_bucket{instance="payment",route="POST /charges",service="payment",le="+Inf"} 0
fooddelivery_http_request_duration_seconds_sum{instance="payment",route="POST /charges",service="payment"} 0
fooddelivery_http_request_duration_seconds_count{instance="payment",route="POST /charges",service="payment"} 0
# HELP fooddelivery_http_requests_total Requests answered, by HTTP status code (503 includes rejections; 0 means no response was sent).
# TYPE fooddelivery_http_requests_total counter
fooddelivery_http_requests_total{code="200",instance="menu-2",route="GET /menus",service="menu"} 1
fooddelivery_http_requests_total{code="404",instance="menu-2",route="GET /menus",service="menu"} 1
fooddelivery_http_requests_total{code="503",instance="menu-2",route="GET /menus",service="menu"} 1
# HELP fooddelivery_http_requests_received_total Requests that reached the route, rejected ones included.
# TYPE fooddelivery_http_requests_received_total counter
fooddelivery_http_requests_received_total{instance="menu-2",route="GET /menus",service="menu"} 3
fooddelivery_http_requests_received_total{instance="payment",route="POST /charges",service="payment"} 0
# HELP fooddelivery_http_requests_rejected_total Requests refused at the instance's concurrency limit.
# TYPE fooddelivery_http_requests_rejected_total counter
fooddelivery_http_requests_rejected_total{instance="menu-2",route="GET /menus",service="menu"} 1
fooddelivery_http_requests_rejected_total{instance="payment",route="POST /charges",service="payment"} 0
# HELP fooddelivery_http_requests_in_flight_peak Highest number of requests handled at once.
# TYPE fooddelivery_http_requests_in_flight_peak gauge
fooddelivery_http_requests_in_flight_peak{instance="menu-2",route="GET /menus",service="menu"} 1
fooddelivery_http_requests_in_flight_peak{instance="payment",route="POST /charges",service="payment"} 0
# HELP fooddelivery_work_after_caller_left_total Units of work started after the caller had given up.
# TYPE fooddelivery_work_after_caller_left_total counter
fooddelivery_work_after_caller_left_total{instance="menu-2",route="GET /menus",service="menu"} 0
fooddelivery_work_after_caller_left_total{instance="payment",route="POST /charges",service="payment"} 2
# HELP fooddelivery_work_after_caller_left_seconds_total Time spent on work nobody waited for, in seconds.
# TYPE fooddelivery_work_after_caller_left_seconds_total counter
fooddelivery_work_after_caller_left_seconds_total{instance="menu-2",route="GET /menus",service="menu"} 0
fooddelivery_work_after_caller_left_seconds_total{instance="payment",route="POST /charges",service="payment"} 1.5
# HELP fooddelivery_edge_attempts_total Calls sent along the edge: first attempts, retries and hedges.
# TYPE fooddelivery_edge_attempts_total counter
fooddelivery_edge_attempts_total{edge="order->payment"} 9
# HELP fooddelivery_edge_hedges_won_total Calls whose answer came from a hedged copy.
# TYPE fooddelivery_edge_hedges_won_total counter
fooddelivery_edge_hedges_won_total{edge="order->payment"} 2
# HELP fooddelivery_edge_idempotent_replays_total Stored answers the dependency replayed for a repeated idempotency key.
# TYPE fooddelivery_edge_idempotent_replays_total counter
fooddelivery_edge_idempotent_replays_total{edge="order->payment"} 1
# HELP resilience4j_circuitbreaker_state The states of the circuit breaker: 1 for the current one, 0 for the others.
# TYPE resilience4j_circuitbreaker_state gauge
resilience4j_circuitbreaker_state{name="order->payment",state="closed"} 0
resilience4j_circuitbreaker_state{name="order->payment",state="half_open"} 1
resilience4j_circuitbreaker_state{name="order->payment",state="open"} 0
# HELP resilience4j_bulkhead_available_concurrent_calls Free slots of the bulkhead compartment.
# TYPE resilience4j_bulkhead_available_concurrent_calls gauge
resilience4j_bulkhead_available_concurrent_calls{name="gateway->menu"} 3
# HELP resilience4j_bulkhead_max_allowed_concurrent_calls Slots of the bulkhead compartment in all.
# TYPE resilience4j_bulkhead_max_allowed_concurrent_calls gauge
resilience4j_bulkhead_max_allowed_concurrent_calls{name="gateway->menu"} 4
# HELP fooddelivery_retry_budget_tokens Tokens left in the retry budget.
# TYPE fooddelivery_retry_budget_tokens gauge
fooddelivery_retry_budget_tokens{name="gateway->order"} 2.5
# HELP fooddelivery_edge_rejected_calls_total Calls refused by the caller itself without sending them, by reason: breaker_open, bulkhead_full, budget_spent (a retry withheld).
# TYPE fooddelivery_edge_rejected_calls_total counter
fooddelivery_edge_rejected_calls_total{edge="order->payment",reason="breaker_open"} 5
fooddelivery_edge_rejected_calls_total{edge="order->payment",reason="budget_spent"} 12
fooddelivery_edge_rejected_calls_total{edge="order->payment",reason="bulkhead_full"} 11
# HELP fooddelivery_instance_concurrency_limit Requests the instance handles at once; 0 means no limit.
# TYPE fooddelivery_instance_concurrency_limit gauge
fooddelivery_instance_concurrency_limit{instance="menu-2",service="menu"} 1
# HELP fooddelivery_orders_charged_more_than_once Orders charged two or more times.
# TYPE fooddelivery_orders_charged_more_than_once gauge
fooddelivery_orders_charged_more_than_once 3
`
		require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
			"fooddelivery_http_request_duration_seconds", "fooddelivery_http_requests_total",
			"fooddelivery_http_requests_received_total", "fooddelivery_http_requests_rejected_total",
			"fooddelivery_http_requests_in_flight_peak",
			"fooddelivery_work_after_caller_left_total", "fooddelivery_work_after_caller_left_seconds_total",
			"fooddelivery_edge_attempts_total", "fooddelivery_edge_hedges_won_total", "fooddelivery_edge_idempotent_replays_total",
			"resilience4j_circuitbreaker_state",
			"resilience4j_bulkhead_available_concurrent_calls", "resilience4j_bulkhead_max_allowed_concurrent_calls",
			"fooddelivery_retry_budget_tokens", "fooddelivery_orders_charged_more_than_once",
			"fooddelivery_edge_rejected_calls_total", "fooddelivery_instance_concurrency_limit"))

		for name, want := range map[string]float64{
			"fooddelivery_edge_retries_total":             4,
			"fooddelivery_edge_hedges_total":              3,
			"fooddelivery_edge_timeouts_total":            13,
			"fooddelivery_edge_overloaded_total":          14,
			"fooddelivery_edge_fallbacks_total":           6,
			"fooddelivery_edge_breaker_transitions_total": 7,
		} {
			assert.Equal(t, 1, testutil.CollectAndCount(c, name), "%s: one series, for the one edge", name)
			assert.Equal(t, want, valueOf(t, collect(t, c), name, map[string]string{"edge": "order->payment"}), name)
		}
		fams := collect(t, c)
		for _, name := range []string{"fooddelivery_http_requests_completed_total", "fooddelivery_http_requests_cancelled_total", "fooddelivery_http_requests_in_flight"} {
			assert.Equal(t, 2, testutil.CollectAndCount(c, name), "%s: one series per route", name)
		}
		menus := map[string]string{"service": "menu", "instance": "menu-2", "route": "GET /menus"}
		assert.Equal(t, 2.0, valueOf(t, fams, "fooddelivery_http_requests_completed_total", menus), "the rejected request never ran")
		assert.Zero(t, valueOf(t, fams, "fooddelivery_http_requests_cancelled_total", menus))
		assert.Zero(t, valueOf(t, fams, "fooddelivery_http_requests_in_flight", menus))

		problems, err := testutil.CollectAndLint(c)
		require.NoError(t, err)
		assert.Empty(t, problems, "names and units follow Prometheus' conventions")
	})
}

// A pattern that was not registered has no series; registering one kind
// brings exactly its families.
func TestUnregisteredPatternsAreAbsent(t *testing.T) {
	m := metrics.NewMetrics()
	m.Route("order", "POST /orders").Received.Add(1)
	c := telemetry.NewCollector(m)
	patterns := []string{
		"resilience4j_circuitbreaker_state",
		"resilience4j_bulkhead_available_concurrent_calls", "resilience4j_bulkhead_max_allowed_concurrent_calls",
		"fooddelivery_retry_budget_tokens", "fooddelivery_orders_charged_more_than_once",
	}
	for _, name := range patterns {
		assert.Zero(t, testutil.CollectAndCount(c, name), "%s: nothing registered, nothing reported", name)
	}
	assert.Zero(t, testutil.CollectAndCount(c, "fooddelivery_edge_attempts_total"), "no edge has counters")
	assert.Equal(t, 1, testutil.CollectAndCount(c, "fooddelivery_http_requests_received_total"))

	m.ReportBreaker("gateway->order", func() metrics.BreakerState { return metrics.BreakerOpen })
	assert.Equal(t, 3, testutil.CollectAndCount(c, "resilience4j_circuitbreaker_state"), "one series per state")
	assert.Equal(t, 1.0, valueOf(t, collect(t, c), "resilience4j_circuitbreaker_state", map[string]string{"name": "gateway->order", "state": "open"}))
	for _, name := range patterns[1:] {
		assert.Zero(t, testutil.CollectAndCount(c, name), "%s: still not registered", name)
	}

	m.ReportChargedTwice(func() int { return 0 })
	assert.Equal(t, 1, testutil.CollectAndCount(c, "fooddelivery_orders_charged_more_than_once"), "a registered ledger shows, even at 0")

	m.ReportBreaker("order->payment", func() metrics.BreakerState { return "forced_open" })
	assert.Equal(t, 1.0, valueOf(t, collect(t, c), "resilience4j_circuitbreaker_state", map[string]string{"name": "order->payment", "state": "forced_open"}),
		"a state outside the three is still shown as current")

	assert.Zero(t, testutil.CollectAndCount(telemetry.NewCollector(nil)), "a nil Metrics collects nothing")
}

// The whole system runs on memnet with a slow payment; a scrape of
// Handler's /metrics shows the latency in the right buckets, the status
// codes, the ledger's count, the Go runtime, and the same numbers as a
// Snapshot taken at the same time.
func TestHandlerScrapesARunningSystem(t *testing.T) {
	labtest.Run(t, labtest.Options{}, func(t *testing.T) {
		sys := labtest.StartSystem(t, system.Config{})
		sys.Metrics.ReportChargedTwice(sys.Ledger.OrdersChargedMoreThanOnce)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Latency: 300 * time.Millisecond}))
		ctx := context.Background()
		for range 2 {
			resp, status, err := sys.GraphQL(ctx, system.SampleToken,
				`mutation($in: PlaceOrderInput!) { placeOrder(input: $in) { id status } }`,
				map[string]any{"in": map[string]any{
					"restaurantId": system.SampleRestaurant,
					"items":        []any{map[string]any{"dishId": system.SampleDish, "quantity": 1}},
					"card":         "tok_visa",
				}})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, status)
			require.Empty(t, resp.Errors)
		}
		_, status, err := sys.GraphQL(ctx, "", `{ restaurants { id } }`, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
		synctest.Wait()

		w := httptest.NewRecorder()
		telemetry.Handler(sys.Metrics).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		snap := sys.Metrics.Snapshot()
		require.Equal(t, http.StatusOK, w.Code)
		assert.True(t, strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain"), "the text format by default, got %q", w.Header().Get("Content-Type"))
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(w.Body)
		require.NoError(t, err)

		charges := map[string]string{"service": "payment", "instance": "payment", "route": "POST /charges"}
		hist := metricOf(t, fams, "fooddelivery_http_request_duration_seconds", dto.MetricType_HISTOGRAM, charges).GetHistogram()
		assert.Equal(t, uint64(2), hist.GetSampleCount(), "two charges")
		assert.InDelta(t, 0.6, hist.GetSampleSum(), 1e-9, "300ms each, in virtual time")
		for _, b := range hist.GetBucket() {
			want := uint64(0)
			if b.GetUpperBound() >= 0.5 {
				want = 2
			}
			assert.Equal(t, want, b.GetCumulativeCount(), "payment charges within %vs", b.GetUpperBound())
		}
		assert.Equal(t, 2.0, valueOf(t, fams, "fooddelivery_http_requests_total", withLabel(charges, "code", "201")), "both charged")
		orders := map[string]string{"service": "order", "instance": "order", "route": "POST /orders"}
		assert.Equal(t, uint64(2), metricOf(t, fams, "fooddelivery_http_request_duration_seconds", dto.MetricType_HISTOGRAM, orders).GetHistogram().GetSampleCount())
		graphql := map[string]string{"service": "gateway", "instance": "gateway", "route": "POST /graphql"}
		assert.Equal(t, 3.0, valueOf(t, fams, "fooddelivery_http_requests_total", withLabel(graphql, "code", "200")))
		assert.Equal(t, 0.0, valueOf(t, fams, "fooddelivery_orders_charged_more_than_once", nil), "each order charged once")
		for _, name := range []string{"resilience4j_circuitbreaker_state", "resilience4j_bulkhead_available_concurrent_calls", "fooddelivery_retry_budget_tokens"} {
			assert.NotContains(t, fams, name, "the plain system registers no %s", name)
		}
		assert.Contains(t, fams, "go_goroutines", "the Go runtime collector")

		// The scrape and the snapshot agree, route by route.
		require.NotEmpty(t, snap.Routes)
		for _, r := range snap.Routes {
			l := map[string]string{"service": r.Service, "instance": r.Instance, "route": r.Route}
			assert.Equal(t, float64(r.Received), valueOf(t, fams, "fooddelivery_http_requests_received_total", l), "%s %s", r.Instance, r.Route)
			assert.Equal(t, uint64(r.Latency.Count),
				metricOf(t, fams, "fooddelivery_http_request_duration_seconds", dto.MetricType_HISTOGRAM, l).GetHistogram().GetSampleCount())
			for code, n := range r.Responses {
				assert.Equal(t, float64(n), valueOf(t, fams, "fooddelivery_http_requests_total", withLabel(l, "code", strconv.Itoa(code))))
			}
		}
		menu1 := metricOf(t, fams, "fooddelivery_http_requests_received_total", dto.MetricType_COUNTER,
			map[string]string{"service": "menu", "instance": "menu-1", "route": "GET /restaurants"})
		assert.NotNil(t, menu1, "replicas are labelled with their service")
	})
}

// collect gathers c's metrics into families by name, through a registry
// that checks them against c's descriptions.
func collect(t *testing.T, c *telemetry.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	list, err := reg.Gather()
	require.NoError(t, err)
	fams := map[string]*dto.MetricFamily{}
	for _, f := range list {
		fams[f.GetName()] = f
	}
	return fams
}

// metricOf returns the series of family name whose labels are exactly
// labels, checking the family's type; it fails the test if there is none.
func metricOf(t *testing.T, fams map[string]*dto.MetricFamily, name string, typ dto.MetricType, labels map[string]string) *dto.Metric {
	t.Helper()
	fam, ok := fams[name]
	require.True(t, ok, "family %s is missing", name)
	require.Equal(t, typ, fam.GetType(), "type of %s", name)
	for _, m := range fam.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			if labels[l.GetName()] != l.GetValue() {
				match = false
			}
		}
		if match {
			return m
		}
	}
	require.Failf(t, "series missing", "%s%v", name, labels)
	return nil
}

// valueOf returns the value of a counter or gauge series.
func valueOf(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	fam, ok := fams[name]
	require.True(t, ok, "family %s is missing", name)
	m := metricOf(t, fams, name, fam.GetType(), labels)
	switch fam.GetType() {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	}
	require.Failf(t, "not a counter or gauge", "%s is a %s", name, fam.GetType())
	return 0
}

func withLabel(labels map[string]string, name, value string) map[string]string {
	out := maps.Clone(labels)
	out[name] = value
	return out
}
