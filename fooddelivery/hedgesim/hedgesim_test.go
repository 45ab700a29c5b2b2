package hedgesim

import (
	"testing"
	"time"
)

// fixed hedges after a constant delay and records nothing.
type fixed time.Duration

func (fixed) Observe(time.Duration)  {}
func (f fixed) Delay() time.Duration { return time.Duration(f) }

func TestRunIsDeterministicAndHedgingCutsTheTail(t *testing.T) {
	m := Default()
	m.Pages, m.StallEvery = 1500, 50*time.Second
	a, b := Run(m, nil), Run(m, nil)
	if a != b {
		t.Fatalf("two runs of the same model differ: %+v and %+v", a, b)
	}
	if a.Reads != m.Pages*m.FanOut || a.Hedges != 0 {
		t.Fatalf("without a policy: %d reads and %d hedges, want %d and 0", a.Reads, a.Hedges, m.Pages*m.FanOut)
	}
	if a.P999 < 500*time.Millisecond || a.P50 > 50*time.Millisecond {
		t.Fatalf("without hedging: p50 %v, p99.9 %v; the 1s stalls should reach the p99.9 and not the median", a.P50, a.P999)
	}
	h := Run(m, &Policy{Tracker: fixed(30 * time.Millisecond)})
	if h.P999 > 100*time.Millisecond || h.Extra() > 0.1 {
		t.Fatalf("hedging after 30ms: p99.9 %v with %.1f%% extra requests, want under 100ms and 10%%", h.P999, 100*h.Extra())
	}
}
