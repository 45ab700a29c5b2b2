package bulkhead_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/gophereats/resilience/fooddelivery/labtest"
	bulkhead "github.com/gophereats/resilience/labs/06-bulkhead"
)

func TestStep4PoolSizeFromLittlesLaw(t *testing.T) {
	cases := []struct {
		name     string
		rate     float64
		latency  time.Duration
		headroom float64
		want     int
	}{
		{"Hystrix's example: 30 rps x 0.2s p99", 30, 200 * time.Millisecond, 0, 6},
		{"the same with 50% headroom", 30, 200 * time.Millisecond, 0.5, 9},
		{"a fraction rounds up: 25 rps x 130ms = 3.25", 25, 130 * time.Millisecond, 0, 4},
		{"a whole number stays whole: 50 rps x 140ms = 7", 50, 140 * time.Millisecond, 0, 7},
		{"checkouts: 12 rps x 1.5s p99, 25% headroom", 12, 1500 * time.Millisecond, 0.25, 23},
		{"a quiet dependency still gets one slot", 0.5, 100 * time.Millisecond, 0, 1},
		{"1000 rps x 1ms, 20% headroom", 1000, time.Millisecond, 0.2, 2},
		{"a small fraction still rounds up: 41 rps x 50ms = 2.05", 41, 50 * time.Millisecond, 0, 3},
		{"a tiny fraction still rounds up: 2 rps x 1.001s = 2.002", 2, 1001 * time.Millisecond, 0, 3},
		{"a latency below a millisecond counts: 1000 rps x 1.5ms = 1.5", 1000, 1500 * time.Microsecond, 0, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
				got, err := bulkhead.PoolSize(c.rate, c.latency, c.headroom)
				if err != nil || got != c.want {
					inFlight := c.rate * c.latency.Seconds()
					careful := ""
					switch {
					case err != nil:
						careful = " A valid input must give a size and a nil error."
					case got == c.want+1:
						careful = " One too many: in floating point 50 x 0.14 is 7.000000000000001, which rounds up to 8."
					case got == c.want-1:
						careful = " One too few: round up any real fraction (a tolerance for floating point must be tiny, like 1e-9 calls in flight), " +
							"and keep the latency's full precision (latency.Seconds(), not whole milliseconds)."
					}
					t.Fatalf("step 4: PoolSize(%v calls/s, %v, headroom %v) = (%d, %v); want (%d, <nil>).\n"+
						"Little's law: %v calls/s x %v = %.4g calls in flight; with %.0f%% headroom that is %.4g, rounded up to %d.%s",
						c.rate, c.latency, c.headroom, got, err, c.want,
						c.rate, c.latency, inFlight, 100*c.headroom, inFlight*(1+c.headroom), c.want, careful)
				}
			})
		})
	}
}

func TestStep4RejectsBadInput(t *testing.T) {
	cases := []struct {
		name     string
		rate     float64
		latency  time.Duration
		headroom float64
	}{
		{"zero rate", 0, time.Second, 0},
		{"negative rate", -5, time.Second, 0},
		{"rate NaN", math.NaN(), time.Second, 0},
		{"infinite rate", math.Inf(1), time.Second, 0},
		{"zero latency", 10, 0, 0},
		{"negative latency", 10, -time.Second, 0},
		{"negative headroom", 10, time.Second, -0.5},
		{"headroom NaN", 10, time.Second, math.NaN()},
		{"infinite headroom", 10, time.Second, math.Inf(1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
				got, err := bulkhead.PoolSize(c.rate, c.latency, c.headroom)
				assert.Error(t, err, "step 4: PoolSize(%v, %v, %v) returned %d; bad input must be an error, not a guess",
					c.rate, c.latency, c.headroom, got)
			})
		})
	}
}
