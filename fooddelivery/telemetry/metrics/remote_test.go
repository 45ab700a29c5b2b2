package metrics

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A snapshot sent to another process comes back with every number, its
// latency sketches included, and a source's snapshot is merged into its
// reader's.
func TestSnapshotOfAnotherProcess(t *testing.T) {
	payment := NewMetrics()
	payment.ReportLimit("payment", 60)
	st := payment.Route("payment", "POST /charges")
	for _, d := range []time.Duration{80 * time.Millisecond, 120 * time.Millisecond, 700 * time.Millisecond} {
		st.Received.Add(1)
		st.Observe(201, d)
	}
	payment.Edge("payment", "processor").Attempts.Add(3)
	payment.ReportChargedTwice(func() int { return 2 })
	sent := payment.Snapshot()
	raw, err := sent.MarshalWire()
	require.NoError(t, err)
	got, err := UnmarshalWire(raw)
	require.NoError(t, err)
	require.Len(t, got.Routes, 1)
	assert.True(t, sent.Routes[0].Sketch.Equal(got.Routes[0].Sketch), "the sketch crosses the wire")
	p99, ok := got.Routes[0].Sketch.Quantile(0.99)
	assert.True(t, ok)
	assert.InDelta(t, 0.7, p99.Seconds(), 0.7*SketchAccuracy*2, "p99 read from the received sketch")
	assert.Equal(t, sent.Routes[0].Responses, got.Routes[0].Responses)
	assert.Equal(t, 60, got.Limits["payment"])

	gateway := NewMetrics()
	gateway.ReportLimit("gateway", 200)
	gateway.Route("gateway", "POST /graphql").Received.Add(5)
	gateway.ReportChargedTwice(func() int { return 0 })
	gateway.Edge("payment", "processor") // every process wires every edge; only its caller's counts
	gateway.Edge("gateway", "menu").Hedges.Add(2)
	down := false
	gateway.AddSource(func() (Snapshot, bool) { return got, !down })
	merged := gateway.Snapshot()
	var instances []string
	for _, r := range merged.Routes {
		instances = append(instances, r.Instance)
	}
	assert.Equal(t, []string{"gateway", "payment"}, instances, "both processes' routes, sorted")
	assert.Equal(t, map[string]int{"gateway": 200, "payment": 60}, merged.Limits)
	require.NotNil(t, merged.OrdersChargedMoreThanOnce)
	assert.Equal(t, int64(2), *merged.OrdersChargedMoreThanOnce, "orders charged twice are summed over processes")
	require.Len(t, merged.Edges, 2, "one edge per caller and dependency, however many processes wire it: %+v", merged.Edges)
	assert.Equal(t, "gateway->menu", merged.Edges[0].Edge)
	assert.Equal(t, int64(2), merged.Edges[0].Hedges)
	assert.Equal(t, int64(3), merged.Edges[1].Attempts, "the payment process's attempts, summed with the gateway's zero")

	down = true
	alone := gateway.Snapshot()
	assert.Len(t, alone.Routes, 1, "a source that cannot be read is left out")

	for _, bad := range []string{`{`, `{"routes":[{"instance":"a"}],"sketches":[]}`,
		`{"routes":[{"instance":"a"}],"sketches":[{"index":[3,2],"count":[1,1]}]}`,
		`{"routes":[{"instance":"a"}],"sketches":[{"index":[3],"count":[-1]}]}`} {
		_, err := UnmarshalWire([]byte(bad))
		assert.Error(t, err, "%s", bad)
	}
}
