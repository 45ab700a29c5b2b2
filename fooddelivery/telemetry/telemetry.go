// Package telemetry is the home of what the food-delivery system tells
// about itself: its subpackages metrics (the counters, latency sketches
// and snapshots), tracing (OpenTelemetry spans and the ring of the latest
// traces) and logs (log/slog with the trace's ids), and this package,
// which exposes the counters of a running system (metrics.Metrics) as
// Prometheus metrics. A Collector takes one
// metrics.Snapshot per scrape and turns it into constant metrics, so
// a scrape, a test and a dashboard that reads Snapshot see the same
// numbers. Handler serves them at /metrics.
//
// Every family, with its type and labels. Route families carry the labels
// service ("menu"), instance ("menu-2") and route ("GET /restaurants");
// edge families carry edge, a caller and its dependency ("order->payment").
// Durations are in seconds.
//
//	fooddelivery_http_requests_received_total          counter    service, instance, route
//	    requests that reached the route, rejected ones included
//	fooddelivery_http_requests_total                   counter    service, instance, route, code
//	    requests answered, by HTTP status code; rejections count under 503,
//	    and code "0" counts requests that got no response (dropped connection)
//	fooddelivery_http_request_duration_seconds         histogram  service, instance, route
//	    time from arrival to answer of the requests in
//	    fooddelivery_http_requests_total; buckets 5ms to 30s; in
//	    OpenMetrics, a bucket (+Inf included) carries as its exemplar
//	    {trace_id="<32 hex digits>"} the duration and end time of the
//	    latest traced request that fell in it
//	fooddelivery_http_requests_in_flight               gauge      service, instance, route
//	    requests being handled now
//	fooddelivery_http_requests_in_flight_peak          gauge      service, instance, route
//	    the highest number of requests ever handled at once
//	fooddelivery_http_requests_completed_total         counter    service, instance, route
//	    requests whose handler returned (any status)
//	fooddelivery_http_requests_rejected_total          counter    service, instance, route
//	    requests refused at the instance's concurrency limit (overloaded)
//	fooddelivery_instance_concurrency_limit            gauge      service, instance
//	    requests the instance handles at once (0: no limit)
//	fooddelivery_http_requests_cancelled_total         counter    service, instance, route
//	    requests whose caller gave up before the handler returned
//	fooddelivery_work_after_caller_left_total          counter    service, instance, route
//	    units of work (a call, a charge) started after the caller gave up
//	fooddelivery_work_after_caller_left_seconds_total  counter    service, instance, route
//	    time spent on that work
//	fooddelivery_edge_attempts_total                   counter    edge
//	    calls sent: first attempts, retries and hedges
//	fooddelivery_edge_retries_total                    counter    edge
//	    attempts after the first that were retries
//	fooddelivery_edge_hedges_total                     counter    edge
//	    hedged copies sent
//	fooddelivery_edge_hedges_won_total                 counter    edge
//	    calls answered by a hedged copy
//	fooddelivery_edge_rejected_calls_total             counter    edge, reason
//	    calls refused by the caller itself without sending them, by
//	    reason: breaker_open (the edge's circuit breaker), bulkhead_full
//	    (its compartment), budget_spent (a retry the retry budget withheld:
//	    the call was sent, its retry was not)
//	fooddelivery_edge_timeouts_total                   counter    edge
//	    calls the caller gave up on at its timeout or deadline
//	fooddelivery_edge_overloaded_total                 counter    edge
//	    calls the dependency refused at its concurrency limit, as the
//	    caller saw them (the dependency counts its own refusals in
//	    fooddelivery_http_requests_rejected_total)
//	fooddelivery_edge_fallbacks_total                  counter    edge
//	    answers served by a fallback instead of the dependency
//	fooddelivery_edge_breaker_transitions_total        counter    edge
//	    circuit breaker state changes
//	fooddelivery_edge_idempotent_replays_total         counter    edge
//	    stored answers replayed for a repeated idempotency key
//	resilience4j_circuitbreaker_state                  gauge      name, state
//	    1 for the breaker's current state, 0 for the others (closed, open,
//	    half_open)
//	resilience4j_bulkhead_available_concurrent_calls   gauge      name
//	    free slots of the bulkhead compartment (slots in use are
//	    max_allowed minus available)
//	resilience4j_bulkhead_max_allowed_concurrent_calls gauge      name
//	    slots of the compartment in all
//	fooddelivery_retry_budget_tokens                   gauge      name
//	    tokens left in the retry budget
//	fooddelivery_orders_charged_more_than_once         gauge
//	    orders the payment ledger charged two or more times
//
// The three resilience4j_ families use the names and labels of
// resilience4j's Micrometer binding, so that dashboards made for it read
// them; their name label is the name the pattern was registered under
// (metrics.Metrics.ReportBreaker, ReportBulkhead). Families for which
// resilience4j has no equivalent (retry budgets, hedges, fallbacks, and
// retries, which resilience4j counts per call outcome rather than per
// attempt) use the fooddelivery_ prefix. A pattern that was not registered
// has no series at all, and fooddelivery_orders_charged_more_than_once is
// absent until a ledger is registered with
// metrics.Metrics.ReportChargedTwice: nothing is reported that was
// not measured.
//
// This package is the only one in the module that imports the Prometheus
// client library.
package telemetry

import (
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

var (
	routeLabels = []string{"service", "instance", "route"}
	edgeLabels  = []string{"edge"}
	nameLabels  = []string{"name"}
)

// Collector is a prometheus.Collector for a metrics.Metrics. Each
// Collect takes one Snapshot and emits every family listed in the package
// documentation from it. It is safe for concurrent use.
type Collector struct {
	metrics *metrics.Metrics

	received, responses, inFlight, peak, completed, rejected, cancelled *prometheus.Desc
	latency, lateWork, lateWorkSeconds                                  *prometheus.Desc

	attempts, retries, hedges, hedgesWon, edgeRejected, timeouts, edgeOverloaded, fallbacks, transitions, replays *prometheus.Desc
	limit                                                                                                         *prometheus.Desc

	breakerState, bulkheadAvailable, bulkheadMax, budgetTokens, chargedTwice *prometheus.Desc
}

// NewCollector returns a Collector of m. A nil m collects nothing but the
// descriptions.
func NewCollector(m *metrics.Metrics) *Collector {
	route := func(name, help string, extra ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append(append([]string(nil), routeLabels...), extra...), nil)
	}
	edge := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, edgeLabels, nil) }
	named := func(name, help string, extra ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append(append([]string(nil), nameLabels...), extra...), nil)
	}
	return &Collector{
		metrics: m,

		received:        route("fooddelivery_http_requests_received_total", "Requests that reached the route, rejected ones included."),
		responses:       route("fooddelivery_http_requests_total", "Requests answered, by HTTP status code (503 includes rejections; 0 means no response was sent).", "code"),
		latency:         route("fooddelivery_http_request_duration_seconds", "Time from a request's arrival to its answer, in seconds."),
		inFlight:        route("fooddelivery_http_requests_in_flight", "Requests being handled now."),
		peak:            route("fooddelivery_http_requests_in_flight_peak", "Highest number of requests handled at once."),
		completed:       route("fooddelivery_http_requests_completed_total", "Requests whose handler returned, with any status."),
		rejected:        route("fooddelivery_http_requests_rejected_total", "Requests refused at the instance's concurrency limit."),
		cancelled:       route("fooddelivery_http_requests_cancelled_total", "Requests whose caller gave up before the handler returned."),
		lateWork:        route("fooddelivery_work_after_caller_left_total", "Units of work started after the caller had given up."),
		lateWorkSeconds: route("fooddelivery_work_after_caller_left_seconds_total", "Time spent on work nobody waited for, in seconds."),

		attempts:  edge("fooddelivery_edge_attempts_total", "Calls sent along the edge: first attempts, retries and hedges."),
		retries:   edge("fooddelivery_edge_retries_total", "Attempts after the first that were retries."),
		hedges:    edge("fooddelivery_edge_hedges_total", "Hedged copies of calls sent."),
		hedgesWon: edge("fooddelivery_edge_hedges_won_total", "Calls whose answer came from a hedged copy."),
		edgeRejected: prometheus.NewDesc("fooddelivery_edge_rejected_calls_total",
			"Calls refused by the caller itself without sending them, by reason: breaker_open, bulkhead_full, budget_spent (a retry withheld).",
			[]string{"edge", "reason"}, nil),
		timeouts:       edge("fooddelivery_edge_timeouts_total", "Calls the caller gave up on at its timeout or deadline."),
		edgeOverloaded: edge("fooddelivery_edge_overloaded_total", "Calls the dependency refused at its concurrency limit, as the caller saw them."),
		limit: prometheus.NewDesc("fooddelivery_instance_concurrency_limit", "Requests the instance handles at once; 0 means no limit.",
			[]string{"service", "instance"}, nil),
		fallbacks:   edge("fooddelivery_edge_fallbacks_total", "Answers served by a fallback instead of the dependency."),
		transitions: edge("fooddelivery_edge_breaker_transitions_total", "Circuit breaker state changes."),
		replays:     edge("fooddelivery_edge_idempotent_replays_total", "Stored answers the dependency replayed for a repeated idempotency key."),

		breakerState:      named("resilience4j_circuitbreaker_state", "The states of the circuit breaker: 1 for the current one, 0 for the others.", "state"),
		bulkheadAvailable: named("resilience4j_bulkhead_available_concurrent_calls", "Free slots of the bulkhead compartment."),
		bulkheadMax:       named("resilience4j_bulkhead_max_allowed_concurrent_calls", "Slots of the bulkhead compartment in all."),
		budgetTokens:      named("fooddelivery_retry_budget_tokens", "Tokens left in the retry budget."),
		chargedTwice:      prometheus.NewDesc("fooddelivery_orders_charged_more_than_once", "Orders charged two or more times.", nil, nil),
	}
}

// Describe sends the description of every family.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.received, c.responses, c.latency, c.inFlight, c.peak, c.completed, c.rejected, c.cancelled, c.lateWork, c.lateWorkSeconds,
		c.attempts, c.retries, c.hedges, c.hedgesWon, c.edgeRejected, c.timeouts, c.edgeOverloaded, c.fallbacks, c.transitions, c.replays, c.limit,
		c.breakerState, c.bulkheadAvailable, c.bulkheadMax, c.budgetTokens, c.chargedTwice,
	} {
		ch <- d
	}
}

// breakerStates are the states resilience4j_circuitbreaker_state always
// has a series for.
var breakerStates = []metrics.BreakerState{metrics.BreakerClosed, metrics.BreakerOpen, metrics.BreakerHalfOpen}

// Collect takes one snapshot of the metrics and sends it as constant
// metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if c.metrics == nil {
		return
	}
	c.collect(c.metrics.Snapshot(), ch)
}

func (c *Collector) collect(snap metrics.Snapshot, ch chan<- prometheus.Metric) {
	send := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		m, err := prometheus.NewConstMetric(d, t, v, labels...)
		if err != nil {
			m = prometheus.NewInvalidMetric(d, err)
		}
		ch <- m
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		send(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) { send(d, prometheus.GaugeValue, v, labels...) }

	for _, r := range snap.Routes {
		l := []string{r.Service, r.Instance, r.Route}
		counter(c.received, r.Received, l...)
		for code, n := range r.Responses {
			counter(c.responses, n, append(l, strconv.Itoa(code))...)
		}
		buckets := make(map[float64]uint64, len(r.Latency.Buckets))
		for _, b := range r.Latency.Buckets {
			buckets[b.UpperBoundSeconds] = uint64(b.Count)
		}
		ch <- c.histogram(r.Latency, buckets, l)
		gauge(c.inFlight, float64(r.InFlight), l...)
		gauge(c.peak, float64(r.PeakInFlight), l...)
		counter(c.completed, r.Completed, l...)
		counter(c.rejected, r.Rejected, l...)
		counter(c.cancelled, r.Cancelled, l...)
		counter(c.lateWork, r.WorkAfterCallerLeft, l...)
		send(c.lateWorkSeconds, prometheus.CounterValue, r.WorkAfterCallerLeftSeconds, l...)
	}
	for _, in := range slices.Sorted(maps.Keys(snap.Limits)) {
		gauge(c.limit, float64(snap.Limits[in]), metrics.ServiceOf(in), in)
	}
	for _, e := range snap.Edges {
		counter(c.attempts, e.Attempts, e.Edge)
		counter(c.retries, e.Retries, e.Edge)
		counter(c.hedges, e.Hedges, e.Edge)
		counter(c.hedgesWon, e.HedgesWon, e.Edge)
		counter(c.edgeRejected, e.BreakerOpen, e.Edge, "breaker_open")
		counter(c.edgeRejected, e.BulkheadFull, e.Edge, "bulkhead_full")
		counter(c.edgeRejected, e.BudgetSpent, e.Edge, "budget_spent")
		counter(c.timeouts, e.Timeouts, e.Edge)
		counter(c.edgeOverloaded, e.Overloaded, e.Edge)
		counter(c.fallbacks, e.Fallbacks, e.Edge)
		counter(c.transitions, e.BreakerTransitions, e.Edge)
		counter(c.replays, e.Replays, e.Edge)
	}
	for _, b := range snap.Breakers {
		known := false
		for _, s := range breakerStates {
			v := 0.0
			if b.State == s {
				v, known = 1, true
			}
			gauge(c.breakerState, v, b.Name, string(s))
		}
		if !known && b.State != "" {
			// A state this package does not list (resilience4j also has
			// forced_open and disabled) is still shown as current.
			gauge(c.breakerState, 1, b.Name, string(b.State))
		}
	}
	for _, b := range snap.Bulkheads {
		gauge(c.bulkheadAvailable, float64(b.Capacity-b.InUse), b.Compartment)
		gauge(c.bulkheadMax, float64(b.Capacity), b.Compartment)
	}
	for _, b := range snap.RetryBudgets {
		gauge(c.budgetTokens, b.Tokens, b.Name)
	}
	if snap.OrdersChargedMoreThanOnce != nil {
		gauge(c.chargedTwice, float64(*snap.OrdersChargedMoreThanOnce))
	}
}

// histogram is the latency histogram h of the route labelled l, with its
// exemplars; buckets is h.Buckets as client_golang takes them.
func (c *Collector) histogram(h metrics.Histogram, buckets map[float64]uint64, l []string) prometheus.Metric {
	m, err := prometheus.NewConstHistogram(c.latency, uint64(h.Count), h.SumSeconds, buckets, l...)
	if err != nil {
		return prometheus.NewInvalidMetric(c.latency, err)
	}
	if len(h.Exemplars) == 0 {
		return m
	}
	exs := make([]prometheus.Exemplar, len(h.Exemplars))
	for i, e := range h.Exemplars {
		exs[i] = prometheus.Exemplar{Value: e.ValueSeconds, Labels: prometheus.Labels{"trace_id": e.TraceID}, Timestamp: e.Time}
	}
	// Each exemplar lands in the bucket its value falls in.
	withExs, err := prometheus.NewMetricWithExemplars(m, exs...)
	if err != nil {
		return m // the numbers matter more than the links to traces
	}
	return withExs
}

// NewRegistry returns a registry holding a Collector of m and the Go
// runtime and process collectors of client_golang (go_*, process_*:
// goroutines, memory, garbage collection, CPU and open files, read from
// runtime/metrics and /proc without stopping the world).
func NewRegistry(m *metrics.Metrics) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		NewCollector(m),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// Handler serves the metrics of m and of the process in Prometheus' text
// exposition format, or in OpenMetrics, with the latency histograms'
// exemplars, when the scraper asks for it (Accept:
// application/openmetrics-text, as Prometheus does), from a
// registry of its own (NewRegistry): mount it at /metrics. A collector
// that fails does not stop the others from being served.
func Handler(m *metrics.Metrics) http.Handler {
	reg := NewRegistry(m)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
		Registry:          reg,
	})
}
