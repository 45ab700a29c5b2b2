package metrics_test

import (
	"encoding/binary"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

// traceOf is a trace id that says which request it was: n in both halves.
func traceOf(n uint64) [16]byte {
	var id [16]byte
	binary.BigEndian.PutUint64(id[:8], n)
	binary.BigEndian.PutUint64(id[8:], n)
	return id
}

func hexOf(id [16]byte) string { return hex.EncodeToString(id[:]) }

// Each bucket keeps the latest traced request that fell in it, with its
// duration and end; an untraced one (Observe, or a zero trace id) changes
// no exemplar; the exemplars survive the trip to another process.
func TestExemplarsKeepTheLatestTracedRequestPerBucket(t *testing.T) {
	m := metrics.NewMetrics()
	s := m.Route("menu-2", "GET /menus")
	at := time.Date(2026, 12, 8, 10, 0, 0, 0, time.UTC)
	s.ObserveTraced(200, 300*time.Millisecond, traceOf(1), at)
	s.ObserveTraced(200, 400*time.Millisecond, traceOf(2), at.Add(time.Second))
	s.Observe(200, 450*time.Millisecond)
	s.ObserveTraced(200, 480*time.Millisecond, [16]byte{}, at.Add(2*time.Second))
	s.ObserveTraced(500, 3*time.Millisecond, traceOf(3), at.Add(3*time.Second))
	s.ObserveTraced(200, time.Minute, traceOf(4), at.Add(4*time.Second)) // above every bound

	h := s.Latency()
	assert.Equal(t, int64(6), h.Count, "every observation counts")
	want := []metrics.Exemplar{
		{TraceID: hexOf(traceOf(3)), ValueSeconds: 0.003, Time: at.Add(3 * time.Second)},
		{TraceID: hexOf(traceOf(2)), ValueSeconds: 0.4, Time: at.Add(time.Second)},
		{TraceID: hexOf(traceOf(4)), ValueSeconds: 60, Time: at.Add(4 * time.Second)},
	}
	require.Len(t, h.Exemplars, len(want), "exemplars: %+v", h.Exemplars)
	for i, w := range want {
		got := h.Exemplars[i]
		if got.TraceID != w.TraceID || got.ValueSeconds != w.ValueSeconds || !got.Time.Equal(w.Time) {
			t.Errorf("exemplar %d is %+v, want %+v", i, got, w)
		}
	}

	snap := m.Snapshot()
	wire, err := snap.MarshalWire()
	require.NoError(t, err)
	back, err := metrics.UnmarshalWire(wire)
	require.NoError(t, err)
	require.Len(t, back.Routes, 1)
	require.Len(t, back.Routes[0].Latency.Exemplars, len(want), "exemplars from another process: %+v", back.Routes[0].Latency.Exemplars)
	for i, w := range want {
		got := back.Routes[0].Latency.Exemplars[i]
		if got.TraceID != w.TraceID || got.ValueSeconds != w.ValueSeconds || !got.Time.Equal(w.Time) {
			t.Errorf("exemplar %d from another process is %+v, want %+v", i, got, w)
		}
	}

	untraced := metrics.NewMetrics().Route("menu-1", "GET /menus")
	untraced.Observe(200, time.Millisecond)
	assert.Nil(t, untraced.Latency().Exemplars, "an untraced route's exemplars")
}

// Writers and readers at once (run it under -race): every exemplar read
// is one that was written whole, its trace and its duration from the same
// request, never a mix of two.
func TestExemplarsAreNeverTorn(t *testing.T) {
	s := metrics.NewMetrics().Route("menu-2", "GET /menus")
	at := time.Unix(1_700_000_000, 0)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 100_000 {
				n := uint64(w*10000 + i + 1)
				// 260ms to 500ms: all in the le=0.5 bucket.
				d := 260*time.Millisecond + time.Duration(n%240)*time.Millisecond
				s.ObserveTraced(200, d, traceOf(n), at.Add(time.Duration(n)))
			}
		})
	}
	reads := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for stop := false; !stop; {
		select {
		case <-done:
			stop = true
		default:
		}
		for _, e := range s.Latency().Exemplars {
			reads++
			id, err := hex.DecodeString(e.TraceID)
			require.NoError(t, err, "trace id %q", e.TraceID)
			hi, lo := binary.BigEndian.Uint64(id[:8]), binary.BigEndian.Uint64(id[8:])
			d := 260*time.Millisecond + time.Duration(lo%240)*time.Millisecond
			if hi != lo || e.ValueSeconds != d.Seconds() || !e.Time.Equal(at.Add(time.Duration(lo))) {
				t.Fatalf("a torn exemplar after %d reads: trace %s, value %v, time %v", reads, e.TraceID, e.ValueSeconds, e.Time)
			}
		}
	}
	assert.Len(t, s.Latency().Exemplars, 1, "one bucket was observed")
}

// The cost of a request's observation, untraced and traced: run with
// -bench Observe -benchmem; the traced one allocates nothing either.
func BenchmarkObserve(b *testing.B) {
	s := metrics.NewMetrics().Route("menu-2", "GET /menus")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Observe(200, time.Duration(i%1000)*time.Millisecond)
	}
}

func BenchmarkObserveTraced(b *testing.B) {
	s := metrics.NewMetrics().Route("menu-2", "GET /menus")
	id, at := traceOf(7), time.Now()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.ObserveTraced(200, time.Duration(i%1000)*time.Millisecond, id, at)
	}
}

func BenchmarkObserveTracedParallel(b *testing.B) {
	s := metrics.NewMetrics().Route("menu-2", "GET /menus")
	id, at := traceOf(7), time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			s.ObserveTraced(200, time.Duration(i%1000)*time.Millisecond, id, at)
		}
	})
}
