package telemetry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/system"
	"github.com/gophereats/resilience/fooddelivery/telemetry"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

// openMetricsExemplar is one exemplar of a latency bucket in OpenMetrics'
// text: the bucket's labels, then "# {trace_id=...} value timestamp".
var openMetricsExemplar = regexp.MustCompile(`^fooddelivery_http_request_duration_seconds_bucket\{(.*)\} \S+ # \{trace_id="([^"]*)"\} (\S+)(?: \S+)?$`)

type scrapedExemplar struct {
	labels  string // the bucket's labels, as written
	le      float64
	traceID string
	value   float64
}

// scrapeOpenMetrics asks h for OpenMetrics, as Prometheus does, and
// returns the body and the latency buckets' exemplars.
func scrapeOpenMetrics(t *testing.T, h http.Handler) (string, []scrapedExemplar) {
	t.Helper()
	w := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
	h.ServeHTTP(w, req)
	body := w.Body.String()
	require.Equal(t, http.StatusOK, w.Code, "the scrape's status; body %s", body)
	require.True(t, strings.HasPrefix(w.Header().Get("Content-Type"), "application/openmetrics-text"),
		"asked for OpenMetrics, got Content-Type %q", w.Header().Get("Content-Type"))
	require.True(t, strings.HasSuffix(body, "# EOF\n"), "an OpenMetrics body ends with # EOF; the last 200 bytes: %q", body[max(0, len(body)-200):])
	var out []scrapedExemplar
	for line := range strings.Lines(body) {
		m := openMetricsExemplar.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
		if m == nil {
			continue
		}
		le := regexp.MustCompile(`le="([^"]*)"`).FindStringSubmatch(m[1])
		require.NotNil(t, le, "a bucket without le: %s", line)
		ex := scrapedExemplar{labels: m[1], traceID: m[2]}
		var err error
		ex.le, err = strconv.ParseFloat(le[1], 64)
		require.NoError(t, err, "le of %s", line)
		ex.value, err = strconv.ParseFloat(m[3], 64)
		require.NoError(t, err, "the exemplar's value in %s", line)
		out = append(out, ex)
	}
	return body, out
}

// A traced request is its latency bucket's exemplar in OpenMetrics, with
// the trace id of its server span, until a later traced request of the
// same bucket replaces it; the text format carries no exemplars and still
// parses.
func TestExemplarsCarryTheTraceOfARequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := metrics.NewMetrics()
		in := fooddelivery.NewInstance("menu-2", 0, m)
		in.Tracer = tracing.New(tracing.NewRing(10, 10))
		var seen []string // the trace id of each request, as its handler saw it
		h := in.Route("GET /menus", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen = append(seen, trace.SpanContextFromContext(r.Context()).TraceID().String())
			if r.URL.Query().Has("slow") {
				time.Sleep(300 * time.Millisecond)
			}
		}))
		for _, path := range []string{"/menus?slow", "/menus?slow", "/menus"} {
			assert.Equal(t, http.StatusOK, serve(h, path), "GET %s", path)
		}
		require.Len(t, seen, 3, "requests the handler saw")
		slow, quick := seen[1], seen[2]
		require.NotEqual(t, seen[0], seen[1], "two requests, two traces")

		body, exs := scrapeOpenMetrics(t, telemetry.Handler(m))
		byLe := map[float64]scrapedExemplar{}
		for _, e := range exs {
			require.Contains(t, e.labels, `instance="menu-2"`, "an exemplar of a route nobody served: %+v", e)
			byLe[e.le] = e
		}
		require.Len(t, exs, 2, "exemplars: one for the 300ms bucket, one for the quick one; found %+v in\n%s", exs, body)
		if e := byLe[0.5]; e.traceID != slow || e.value != 0.3 {
			t.Errorf("the le=0.5 bucket's exemplar is trace %q with value %v; want the later slow request's trace %s, 0.3s", e.traceID, e.value, slow)
		}
		if e := byLe[0.005]; e.traceID != quick || e.value != 0 {
			t.Errorf("the le=0.005 bucket's exemplar is trace %q with value %v; want the quick request's trace %s, 0s in fake time", e.traceID, e.value, quick)
		}

		// The Prometheus text format has no exemplars, and parses.
		w := httptest.NewRecorder()
		telemetry.Handler(m).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		assert.NotContains(t, w.Body.String(), "trace_id", "the text format carries no exemplars")
		parser := expfmt.NewTextParser(model.UTF8Validation)
		_, err := parser.TextToMetricFamilies(w.Body)
		require.NoError(t, err, "the text format of a traced system")
	})
}

// Without a Tracer there is nothing to point at: the OpenMetrics scrape
// succeeds with the histograms and no exemplar at all.
func TestNoExemplarsWithoutTracing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := metrics.NewMetrics()
		in := fooddelivery.NewInstance("menu-2", 0, m)
		h := in.Route("GET /menus", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { time.Sleep(300 * time.Millisecond) }))
		assert.Equal(t, http.StatusOK, serve(h, "/menus"))

		body, exs := scrapeOpenMetrics(t, telemetry.Handler(m))
		assert.Empty(t, exs, "exemplars of an untraced system")
		assert.NotContains(t, body, "# {", "an exemplar of an untraced system in\n%s", body)
		assert.Contains(t, body, `fooddelivery_http_request_duration_seconds_count{instance="menu-2",route="GET /menus",service="menu"} 1`,
			"the histogram is served all the same:\n%s", body)
		assert.Nil(t, m.Snapshot().Routes[0].Latency.Exemplars, "the snapshot's exemplars")
	})
}

// In a traced system, one browse is one trace through the gateway and a
// menu replica: the exemplars of both routes name it, and the Tracer's
// ring holds it, so a bucket on a dashboard leads to its trace.
func TestExemplarsOfARunningSystemLeadToItsTraces(t *testing.T) {
	labtest.Run(t, labtest.Options{}, func(t *testing.T) {
		tr := tracing.New(tracing.NewRing(100, tracing.DefaultSpansPerTrace))
		sys := labtest.StartSystem(t, system.Config{Tracer: tr})
		_, status, err := sys.GraphQL(context.Background(), "", `{ restaurants { id } }`, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status)
		synctest.Wait()

		var browse string
		for _, trc := range tr.Ring().Traces() {
			for _, sp := range trc.Spans {
				if sp.Name == "gateway POST /graphql" {
					browse = trc.TraceID
				}
			}
		}
		require.NotEmpty(t, browse, "no trace with the span \"gateway POST /graphql\" among %d", tr.Ring().Len())

		body, exs := scrapeOpenMetrics(t, telemetry.Handler(sys.Metrics))
		routes := map[string]bool{}
		for _, e := range exs {
			if e.traceID != browse {
				t.Errorf("an exemplar with trace %s, not the browse's %s: %+v", e.traceID, browse, e)
			}
			if e.value > e.le {
				t.Errorf("an exemplar's value %v is above its bucket's bound %v: %+v", e.value, e.le, e)
			}
			routes[regexp.MustCompile(`instance="([^"]*)",route="([^"]*)"`).FindString(e.labels)] = true
		}
		if !routes[`instance="gateway",route="POST /graphql"`] || len(routes) < 2 {
			t.Errorf("exemplars on the routes %v; want the gateway's POST /graphql and a menu replica's; the scrape:\n%s", routes, body)
		}
	})
}
