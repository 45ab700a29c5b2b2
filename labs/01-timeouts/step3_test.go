package timeouts_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	timeouts "github.com/gophereats/resilience/labs/01-timeouts"
)

func TestStep3TimeoutFromMeasuredLatencies(t *testing.T) {
	cases := []struct {
		name    string
		samples []time.Duration
		rate    float64
	}{
		{"1% of 1000 samples", latencies(1, 1000), 0.01},
		{"0.1% of 1000 samples", latencies(2, 1000), 0.001},
		{"5% of 1000 samples", latencies(3, 1000), 0.05},
		{"10% of 20 samples", latencies(4, 20), 0.10},
		{"1% of 150 samples", latencies(7, 150), 0.01},
		{"10% of 25 samples", latencies(8, 25), 0.10},
		{"all samples equal", slices.Repeat([]time.Duration{80 * time.Millisecond}, 50), 0.01},
		{"99% of 10 samples", latencies(9, 10), 0.99},
		{"a rate a hair below 1 of 1000 samples", latencies(10, 1000), 0.9999999999999},
		{"one sample", []time.Duration{80 * time.Millisecond}, 0.5},
		// rate x n a hair below a whole number in float64 (0.29 x 100 =
		// 28.999999999999996): the count allowed above is still 29.
		{"29% of 100 samples", latencies(11, 100), 0.29},
		{"14.5% of 200 samples", latencies(12, 200), 0.145},
		{"4.3% of 10000 samples", latencies(13, 10000), 0.043},
		{"57% of 100 samples", latencies(14, 100), 0.57},
		// (1 - rate) x n a hair above a whole number in float64 ((1 - 0.99)
		// x 1000 = 10.000000000000009): a rank taken from 1 - rate is one off.
		{"99% of 1000 samples", latencies(15, 1000), 0.99},
		{"70% of 10 samples", latencies(16, 10), 0.70},
		{"95% of 20 samples", latencies(17, 20), 0.95},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
				given := slices.Clone(c.samples)
				got, err, panicked := func() (got time.Duration, err error, panicked any) {
					defer func() { panicked = recover() }()
					got, err = timeouts.TimeoutFromLatencies(given, c.rate)
					return got, err, nil
				}()
				if panicked != nil {
					t.Fatalf("step 3: TimeoutFromLatencies(%d samples, %v) panicked: %v. However high the rate, below 1 it leaves at least one sample: the timeout is then the smallest.",
						len(c.samples), c.rate, panicked)
				}
				if err != nil {
					t.Fatalf("step 3: TimeoutFromLatencies(%d samples, %v) failed: %v", len(c.samples), c.rate, err)
				}
				if i := firstDifference(c.samples, given); i >= 0 {
					t.Errorf("step 3: TimeoutFromLatencies changed the caller's samples (sample %d was %v, now %v): "+
						"sort a copy, not the caller's slice", i, c.samples[i], given[i])
				}

				// Samples allowed above the timeout; a rate below 1 leaves
				// at least one sample at or below it.
				allowed := min(math.Floor(c.rate*float64(len(c.samples))+1e-9), float64(len(c.samples)-1))
				above, atOrAbove := exceeding(c.samples, got)
				if float64(above) > allowed {
					t.Errorf("step 3: with a timeout of %v, %d of %d measured requests would have timed out; "+
						"a false-timeout rate of %v allows at most %.0f. Pick a higher percentile.", got, above, len(c.samples), c.rate, allowed)
				}
				if float64(atOrAbove) <= allowed {
					t.Errorf("step 3: a timeout of %v is longer than needed: only %d of %d samples are at or above it, and a rate of %v "+
						"allows %.0f to time out, so a smaller sample would do. The timeout is the smallest sample that at most %.0f samples exceed.%s",
						got, atOrAbove, len(c.samples), c.rate, allowed, allowed, floatNote(c.rate, len(c.samples)))
				}
			})
		})
	}
}

func TestStep3RejectsBadInput(t *testing.T) {
	ok := latencies(5, 10)
	cases := []struct {
		name    string
		samples []time.Duration
		rate    float64
	}{
		{"no samples", nil, 0.01},
		{"zero rate", ok, 0},
		{"rate of one", ok, 1},
		{"negative rate", ok, -0.1},
		{"rate is not a number", ok, math.NaN()},
		{"negative sample", []time.Duration{10 * time.Millisecond, -time.Millisecond}, 0.01},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
				got, err := timeouts.TimeoutFromLatencies(c.samples, c.rate)
				assert.Error(t, err, "step 3: TimeoutFromLatencies(%v, %v) returned %v; bad input must be an error, not a guess", c.samples, c.rate, got)
			})
		})
	}
}

func TestStep3OrdinarySlowPaymentsSucceed(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		samples := latencies(6, 1000)
		timeout, err := timeouts.TimeoutFromLatencies(samples, 0.01)
		if err != nil {
			t.Fatalf("step 3: TimeoutFromLatencies(1000 samples, 1%%) failed: %v", err)
		}
		sorted := slices.Sorted(slices.Values(samples))
		ordinary := sorted[900] // the 90th percentile: slow, but normal

		sys := start(t, 3, timeout, 10)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Latency: ordinary}))
		_, err = sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		require.NoError(t, err, "step 3: payment took %v, the 90th percentile of its measured latency, and the timeout derived "+
			"for a 1%% false-timeout rate is %v, yet the order failed", ordinary, timeout)

		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Latency: 3 * sorted[len(sorted)-1]}))
		began := time.Now()
		_, err = sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		took := time.Since(began)
		if err == nil || took > timeout+slack {
			t.Fatalf("step 3: payment took %v, slower than any measured request; PlaceOrder waited %v (error: %v), "+
				"but the derived timeout is %v. NewPaymentClient must use the timeout it is given, not a constant of its own.",
				3*sorted[len(sorted)-1], took, err, timeout)
		}
	})
}

// floatNote explains, when rate x n or (1 - rate) x n is not a whole number
// in float64 although it is one in decimal, what the float arithmetic gave.
func floatNote(rate float64, n int) string {
	p, q := rate*float64(n), (1-rate)*float64(n)
	offP := p != math.Round(p) && math.Abs(p-math.Round(p)) < 1e-6
	offQ := q != math.Round(q) && math.Abs(q-math.Round(q)) < 1e-6
	switch {
	case offP && offQ:
		return fmt.Sprintf(" In float64, %v x %d = %v and (1 - %v) x %d = %v, neither the whole number it is in decimal: "+
			"whichever you compute, round off the float error before taking the floor or the ceiling.", rate, n, p, rate, n, q)
	case offP:
		return fmt.Sprintf(" In float64, %v x %d = %v, not %v: round off the float error before taking the floor.",
			rate, n, p, math.Round(p))
	case offQ:
		return fmt.Sprintf(" In float64, (1 - %v) x %d = %v, not %v: a rank computed from 1 - rate carries the float error; "+
			"count the samples allowed above (rate x n) instead, rounding off the float error.", rate, n, q, math.Round(q))
	}
	return ""
}
