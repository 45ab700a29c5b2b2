package main

import (
	"bufio"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery/dashboard"
)

// metricFamilies are the families /metrics must list once the system has
// run with every lab's solution under load: per service and route, per
// client edge, the patterns' state, and orders charged twice.
var metricFamilies = []string{
	"fooddelivery_http_requests_total",
	"fooddelivery_http_request_duration_seconds",
	"fooddelivery_http_requests_in_flight",
	"fooddelivery_http_requests_rejected_total",
	"fooddelivery_http_requests_cancelled_total",
	"fooddelivery_work_after_caller_left_total",
	"fooddelivery_edge_attempts_total",
	"fooddelivery_edge_retries_total",
	"fooddelivery_edge_hedges_total",
	"fooddelivery_edge_hedges_won_total",
	"fooddelivery_edge_fallbacks_total",
	"fooddelivery_edge_rejected_calls_total",
	"fooddelivery_edge_breaker_transitions_total",
	"fooddelivery_edge_idempotent_replays_total",
	"resilience4j_circuitbreaker_state",
	"resilience4j_bulkhead_available_concurrent_calls",
	"resilience4j_bulkhead_max_allowed_concurrent_calls",
	"fooddelivery_retry_budget_tokens",
	"fooddelivery_orders_charged_more_than_once",
}

// exposition is a scrape of /metrics: the families it declares and the
// value of each sample line, keyed by the line's name and labels.
type exposition struct {
	families map[string]bool
	samples  map[string]float64
}

func (r *running) scrape(t *testing.T) exposition {
	t.Helper()
	resp, err := r.client.Get(strings.TrimSuffix(r.url, "/graphql") + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: HTTP %d: %s", resp.StatusCode, b)
	}
	e := exposition{families: map[string]bool{}, samples: map[string]float64{}}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			e.families[strings.Fields(rest)[0]] = true
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			e.samples[line[:i]] = v
		}
	}
	return e
}

// sum adds the samples whose key starts with prefix and contains every
// one of labels.
func (e exposition) sum(prefix string, labels ...string) float64 {
	var n float64
	for k, v := range e.samples {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		all := true
		for _, l := range labels {
			all = all && strings.Contains(k, l)
		}
		if all {
			n += v
		}
	}
	return n
}

// A smoke test of the running system under load: with every lab's
// solution and 20 simulated customers a second, /metrics soon lists every
// family and has traffic in the request and latency families; the admin
// API answers beside it.
func TestRunUnderLoadExportsMetricsAndAnswersTheAdminAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("real TCP and real time")
	}
	r := startRun(t, "-lab", "all=solution", "-load", "20", "-fast")
	if !strings.Contains(r.out.String(), "customers:        20 requests a second") {
		t.Errorf("the banner should say the customers' rate:\n%s", r.out)
	}
	var e exposition
	deadline := time.Now().Add(60 * time.Second) // generous: a slow machine must not fail this
	for {
		e = r.scrape(t)
		var missing []string
		for _, f := range metricFamilies {
			if !e.families[f] {
				missing = append(missing, f)
			}
		}
		gatewayRequests := e.sum("fooddelivery_http_requests_total{", `service="gateway"`)
		latencies := e.sum("fooddelivery_http_request_duration_seconds_count{", `service="menu"`)
		if len(missing) == 0 && gatewayRequests >= 10 && latencies > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60s of load /metrics still lacks %v; gateway requests %v, menu latencies observed %v", missing, gatewayRequests, latencies)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if v := e.sum("resilience4j_bulkhead_max_allowed_concurrent_calls{", `name="gateway->menu"`); v != 10 {
		t.Errorf("lab 06's menu compartment has 10 slots; /metrics says %v", v)
	}
	if v := e.sum("resilience4j_circuitbreaker_state{", `name="order->payment"`, `state="closed"`); v != 1 {
		t.Errorf("the order->payment breaker of a healthy system is closed; /metrics says closed=%v", v)
	}

	base := strings.TrimSuffix(r.url, "/graphql")
	admin := func(method, path, contentType, body string, header ...string) (int, string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		for i := 0; i+1 < len(header); i += 2 {
			if header[i] == "Host" {
				req.Host = header[i+1]
				continue
			}
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := r.client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := admin(http.MethodGet, "/admin/faults", "", ""); status != http.StatusOK || !strings.Contains(body, "POST /charges") {
		t.Errorf("GET /admin/faults: HTTP %d, want 200 listing the routes faults may target: %s", status, body)
	}
	if status, body := admin(http.MethodPost, "/admin/faults", "application/json", `{"spec": "payment:POST /charge=hang"}`); status < 400 || !strings.Contains(body, "POST /charges") {
		t.Errorf("a fault on a route no service serves: HTTP %d, want a refusal that lists the real routes: %s", status, body)
	}
	if status, body := admin(http.MethodPost, "/admin/faults", "application/json", `{"spec": "payment=error,status=503,p=0.5"}`); status != http.StatusCreated {
		t.Errorf("adding a fault: HTTP %d, want 201: %s", status, body)
	}
	for _, tc := range []struct {
		name        string
		contentType string
		header      []string
		want        int
	}{
		{"a foreign Host", "application/json", []string{"Host", "attacker.example"}, http.StatusForbidden},
		{"a cross-origin page", "application/json", []string{"Origin", "http://attacker.example"}, http.StatusForbidden},
		{"a change that is not JSON", "text/plain", nil, http.StatusUnsupportedMediaType},
	} {
		if status, body := admin(http.MethodPost, "/admin/faults", tc.contentType, `{"spec": "payment=hang"}`, tc.header...); status != tc.want {
			t.Errorf("%s: HTTP %d, want %d: %s", tc.name, status, tc.want, body)
		}
	}
	for _, path := range []string{"/", "/dashboard/state", "/graphql", "/graphql/ide/ide.js"} {
		if status, body := admin(http.MethodGet, path, "", "", "Accept", "text/html", "Host", "attacker.example"); status != http.StatusForbidden {
			t.Errorf("%s for a foreign Host: HTTP %d, want 403: %.200s", path, status, body)
		}
		if status, body := admin(http.MethodGet, path, "", "", "Accept", "text/html", "Origin", "http://attacker.example"); status != http.StatusForbidden {
			t.Errorf("%s for another site's page: HTTP %d, want 403: %.200s", path, status, body)
		}
		if status, body := admin(http.MethodGet, path, "", "", "Accept", "text/html"); status != http.StatusOK {
			t.Errorf("%s for the system's own address: HTTP %d, want 200: %.200s", path, status, body)
		}
	}
	if status, body := admin(http.MethodGet, "/metrics", "", "", "Host", "attacker.example"); status != http.StatusForbidden {
		t.Errorf("/metrics for a foreign Host: HTTP %d, want 403: %.200s", status, body)
	}
	if status, body := admin(http.MethodGet, "/admin/changes", "", ""); status != http.StatusOK || !strings.Contains(body, "payment=error") {
		t.Errorf("the change log should list the fault added: HTTP %d: %s", status, body)
	}
}

// Event streams past the dashboard's cap are refused with 503, and a
// query's latency while the cap's worth of streams is open stays within
// twice its idle value. The clock is real: each latency is the median of
// 25 queries, and a comparison that misses is measured again (up to 5
// times), so a machine busy for a moment does not fail the test.
func TestEventStreamsPastTheCapAreRefusedAndTheGatewayUnaffected(t *testing.T) {
	if testing.Short() {
		t.Skip("real TCP and real time")
	}
	r := startRun(t, "-lab", "all=solution")
	base := strings.TrimSuffix(r.url, "/graphql")
	median := func() time.Duration {
		var took []time.Duration
		for range 25 {
			start := time.Now()
			status, resp := r.post(t, "", `{"query":"{ restaurants { id name } }"}`)
			took = append(took, time.Since(start))
			if status != http.StatusOK || len(resp.Errors) > 0 {
				t.Fatalf("an ordinary query: HTTP %d, errors %+v", status, resp.Errors)
			}
		}
		slices.Sort(took)
		return took[len(took)/2]
	}
	idle := median()

	streams := &http.Client{Transport: &http.Transport{}}
	defer streams.CloseIdleConnections()
	open := func() (*http.Response, error) {
		req, err := http.NewRequest(http.MethodGet, base+"/dashboard/events", nil)
		if err != nil {
			return nil, err
		}
		return streams.Do(req)
	}
	for i := range dashboard.DefaultMaxStreams {
		resp, err := open()
		if err != nil {
			t.Fatalf("stream %d of the cap of %d: %v", i+1, dashboard.DefaultMaxStreams, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d of the cap of %d: HTTP %d", i+1, dashboard.DefaultMaxStreams, resp.StatusCode)
		}
		go io.Copy(io.Discard, resp.Body) // a screen that reads its events
	}
	for i := range 50 {
		resp, err := open()
		if err != nil {
			t.Fatalf("stream %d past the cap: %v", i+1, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("stream %d past the cap of %d: want 503 with Retry-After, got HTTP %d (Retry-After %q): %s",
				i+1, dashboard.DefaultMaxStreams, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}

	var busy time.Duration
	for try := 1; ; try++ {
		busy = median()
		if busy <= 2*idle {
			break
		}
		if try == 5 {
			t.Fatalf("a query's median latency is %v with %d event streams open and 50 refused, against %v idle: more than twice (5 tries)",
				busy, dashboard.DefaultMaxStreams, idle)
		}
		idle = median() // the machine may have been busy: measure both again
	}
	t.Logf("a query's median latency: %v idle, %v with %d event streams open and 50 refused", idle, busy, dashboard.DefaultMaxStreams)
}
