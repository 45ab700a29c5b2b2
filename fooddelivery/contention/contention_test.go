package contention_test

import (
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery/contention"
)

func TestOneClientWritesOnce(t *testing.T) {
	r := contention.Run(1, 1, contention.NoBackoff)
	if r.Calls != 1 {
		t.Fatalf("a lone client made %v write calls, want 1", r.Calls)
	}
	// read there and back, write there and back: four hops of about 10ms
	if r.Completion < 20*time.Millisecond || r.Completion > 60*time.Millisecond {
		t.Fatalf("a lone client finished after %v, want about 40ms (four hops)", r.Completion)
	}
}

func TestRunsAreDeterministic(t *testing.T) {
	for _, p := range []contention.Policy{contention.Exponential, contention.Decorrelated, contention.EqualJitter} {
		a, b := contention.Run(30, 7, p), contention.Run(30, 7, p)
		if a != b {
			t.Fatalf("the same seed gave %+v and %+v", a, b)
		}
	}
}

func TestEveryClientSucceedsOnce(t *testing.T) {
	// Each write that succeeds bumps the version once; every client stops
	// after its success, so there are at least as many calls as clients.
	for _, clients := range []int{2, 10, 50} {
		r := contention.Run(clients, 3, contention.EqualJitter)
		if r.Calls < float64(clients) {
			t.Fatalf("%d clients made only %v write calls", clients, r.Calls)
		}
	}
}

func TestCompareRowsInOrder(t *testing.T) {
	full := func(attempt int, _ time.Duration, r float64) time.Duration {
		return time.Duration(r * float64(min(contention.Cap, contention.Base<<min(attempt, 20))))
	}
	rows := contention.Compare(20, 2, full)
	want := []string{"no backoff", "exponential", "decorrelated jitter", "equal jitter", "full jitter"}
	if len(rows) != len(want) {
		t.Fatalf("Compare returned %d rows, want %d", len(rows), len(want))
	}
	for i, r := range rows {
		if r.Name != want[i] || r.Measured.Calls <= 0 {
			t.Fatalf("row %d is %q with %v calls, want %q with some calls", i, r.Name, r.Measured.Calls, want[i])
		}
	}
	if _, ok := contention.Find(rows, "equal jitter"); !ok {
		t.Fatal("Find did not find the equal jitter row")
	}
}
