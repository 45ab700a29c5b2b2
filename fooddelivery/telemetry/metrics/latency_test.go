package metrics_test

import (
	"io"
	"net/http"
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

// The histogram has one cumulative bucket per LatencyBuckets bound, and a
// request slower than the last bound counts only in the total.
func TestLatencyHistogramBuckets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := metrics.NewMetrics()
		in := fooddelivery.NewInstance("courier", 0, m)
		h := in.Route("GET /x", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d, err := time.ParseDuration(r.URL.Query().Get("d"))
			require.NoError(t, err)
			time.Sleep(d)
		}))
		_, hc := servetest.Serve(t, "courier", h)
		for _, d := range []string{"0s", "5ms", "6ms", "2s", "30s", "31s"} {
			resp, err := hc.Get(memnet.ServiceURL("courier") + "/x?d=" + d)
			require.NoError(t, err)
			resp.Body.Close()
		}
		synctest.Wait()

		bounds := metrics.LatencyBuckets()
		require.Len(t, bounds, 12)
		assert.Equal(t, 5*time.Millisecond, bounds[0])
		assert.Equal(t, 30*time.Second, bounds[len(bounds)-1])

		got := m.Route("courier", "GET /x").Latency()
		require.Len(t, got.Buckets, len(bounds))
		want := map[float64]int64{0.005: 2, 0.01: 3, 1: 3, 2: 4, 10: 4, 30: 5}
		for _, b := range got.Buckets {
			if n, ok := want[b.UpperBoundSeconds]; ok {
				assert.Equal(t, n, b.Count, "le=%v", b.UpperBoundSeconds)
			}
		}
		assert.Equal(t, int64(6), got.Count, "31s is above every bound but counted")
		assert.InDelta(t, 63.011, got.SumSeconds, 1e-9)
	})
}

// Handlers behind a route can still stream: the wrapped writer is an
// http.Flusher, and the header arrives before the handler finishes.
func TestRouteKeepsFlushing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := metrics.NewMetrics()
		in := fooddelivery.NewInstance("gateway", 0, m)
		h := in.Route("GET /stream", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f, ok := w.(http.Flusher)
			if !assert.True(t, ok, "the writer is an http.Flusher") {
				return
			}
			io.WriteString(w, "first\n")
			f.Flush()
			time.Sleep(time.Second)
			io.WriteString(w, "second\n")
			assert.NoError(t, http.NewResponseController(w).Flush(), "a ResponseController flushes too")
		}))
		_, hc := servetest.Serve(t, "gateway", h)
		start := time.Now()
		resp, err := hc.Get(memnet.ServiceURL("gateway") + "/stream")
		require.NoError(t, err)
		assert.Zero(t, time.Since(start), "the header came before the handler slept")
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, "first\nsecond\n", string(body))
		synctest.Wait()
		assert.Equal(t, int64(1), m.Route("gateway", "GET /stream").Responses(200))
	})
}
