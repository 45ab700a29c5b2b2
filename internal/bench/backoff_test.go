package bench

import (
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/retry"
	retries "github.com/gophereats/resilience/solutions/03-retries"
)

// The backoff's hot path: one wait before a retry, with its jitter. Lab
// 03's Transport draws the jitter from fooddelivery.Draw keyed by the
// request's number and the attempt, so that its tests repeat exactly;
// cenkalti/backoff draws it from math/rand/v2. The waits cycle through
// retries 1 to backoffRetries of each request, far enough that the last
// one reaches the cap.
const (
	backoffBase    = 100 * time.Millisecond // lab 03's DefaultBaseDelay
	backoffCap     = 2 * time.Second        // lab 03's DefaultMaxDelay
	backoffRetries = 5                      // 100ms<<5 = 3.2s: the fifth wait is capped
	backoffSeed    = 1
)

// labDraw is the jitter draw of lab 03's reference, (*retries.Transport).draw,
// for the n-th request's retry attempt: the key "request-<n>" hashed in two
// parts, n's digits written on the stack. The draw is unexported, so this
// is a copy, and the benchmarks time the copy: TestLabDrawIsTheReferences
// fails when the two give different waits (copy any change made there).
func labDraw(seed, n int64, attempt int) float64 {
	var digits [20]byte
	return fooddelivery.DrawConcat(seed, "request-", string(strconv.AppendInt(digits[:0], n, 10)), attempt)
}

// newExponential returns cenkalti/backoff set to lab 03's waits: a
// randomization factor of 1 turns its interval i into a uniform wait in
// [0, 2i], so an initial interval of half the base, doubling up to half
// the cap, gives full jitter under min(cap, base<<attempt), as Backoff
// does (cenkalti's interval includes its upper end; Backoff's does not).
func newExponential() *backoff.ExponentialBackOff {
	e := backoff.NewExponentialBackOff()
	e.InitialInterval = backoffBase / 2
	e.RandomizationFactor = 1
	e.Multiplier = 2
	e.MaxInterval = backoffCap / 2
	e.Reset()
	return e
}

// ceiling is the longest wait before retry attempt (1, 2, ...) of lab 03.
func ceiling(attempt int) time.Duration { return min(backoffCap, backoffBase<<attempt) }

func BenchmarkBackoff(b *testing.B) {
	pair(b, "cenkalti-backoff", func(b *testing.B) {
		e := newExponential()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			attempt := i%backoffRetries + 1
			if attempt == 1 {
				e.Reset() // a new request starts over
			}
			checkWait(b, "cenkalti/backoff", e.NextBackOff(), attempt, true)
			i++
		}
	}, func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			n, attempt := int64(i/backoffRetries+1), i%backoffRetries+1
			wait := retries.Backoff(attempt, backoffBase, backoffCap, labDraw(backoffSeed, n, attempt))
			checkWait(b, "lab 03's Backoff", wait, attempt, false)
			i++
		}
	})
}

func BenchmarkBackoffParallel(b *testing.B) {
	pair(b, "cenkalti-backoff", func(b *testing.B) {
		n := parallel(b, func(_ int, pb *testing.PB) int {
			e := newExponential() // not safe for concurrent use: one per goroutine, as one per request
			i := 0
			for ; pb.Next(); i++ {
				attempt := i%backoffRetries + 1
				if attempt == 1 {
					e.Reset()
				}
				if !waitOK(e.NextBackOff(), attempt, true) {
					b.Errorf("cenkalti/backoff: wait before retry %d outside [0, %v]", attempt, ceiling(attempt))
					break
				}
			}
			return i
		})
		ran(b, "cenkalti/backoff: a wait was drawn", n)
	}, func(b *testing.B) {
		n := parallel(b, func(g int, pb *testing.PB) int {
			i := 0
			for ; pb.Next(); i++ {
				n, attempt := int64(g)<<32+int64(i/backoffRetries+1), i%backoffRetries+1
				wait := retries.Backoff(attempt, backoffBase, backoffCap, labDraw(backoffSeed, n, attempt))
				if !waitOK(wait, attempt, false) {
					b.Errorf("lab 03's Backoff: wait %v before retry %d outside [0, %v)", wait, attempt, ceiling(attempt))
					break
				}
			}
			return i
		})
		ran(b, "lab 03's Backoff: a wait was drawn", n)
	})
}

// BenchmarkBackoffPolicy is lab 04's path: fooddelivery/retry.Policy, the
// retry loop the system uses where a lab is not about retries, keyed by a
// call's name. Its retry n waits under min(cap, base<<(n-1)).
func BenchmarkBackoffPolicy(b *testing.B) {
	alone(b, func(b *testing.B) {
		p := retry.Policy{Base: backoffBase, Cap: backoffCap, Seed: backoffSeed}
		keys := make([]string, 1024)
		for i := range keys {
			keys[i] = "place req-" + strconv.Itoa(i)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			n := i%backoffRetries + 1
			wait := p.Backoff(keys[(i/backoffRetries)%len(keys)], n)
			checkWait(b, "retry.Policy.Backoff", wait, n-1, false)
			i++
		}
	})
}

// waitOK reports whether wait is in [0, ceiling(attempt)), or in
// [0, ceiling(attempt)] when inclusive.
func waitOK(wait time.Duration, attempt int, inclusive bool) bool {
	c := ceiling(attempt)
	return wait >= 0 && (wait < c || inclusive && wait == c)
}

func checkWait(b *testing.B, name string, wait time.Duration, attempt int, inclusive bool) {
	if !waitOK(wait, attempt, inclusive) {
		end := ")"
		if inclusive {
			end = "]"
		}
		b.Fatalf("%s: wait %v before retry %d, want it in [0, %v%s", name, wait, attempt, ceiling(attempt), end)
	}
}

// TestLabDrawIsTheReferences keeps labDraw, which the backoff benchmarks
// time, the same function as the reference Transport's own draw: in fake
// time, the reference's waits before each retry of its first requests
// must be exactly Backoff of labDraw's numbers.
func TestLabDrawIsTheReferences(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sent []time.Time
		down := roundTripper(func(*http.Request) (*http.Response, error) {
			sent = append(sent, time.Now())
			return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{}, Body: http.NoBody}, nil
		})
		tr := &retries.Transport{Base: down, Attempts: backoffRetries + 1, BaseDelay: backoffBase, MaxDelay: backoffCap, Seed: backoffSeed}
		for n := int64(1); n <= 20; n++ {
			sent = sent[:0]
			req, err := http.NewRequest(http.MethodGet, "http://menu/menus", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatalf("request %d: %v", n, err)
			}
			resp.Body.Close()
			if len(sent) != backoffRetries+1 {
				t.Fatalf("request %d: the reference made %d attempts, want %d", n, len(sent), backoffRetries+1)
			}
			for attempt := 1; attempt <= backoffRetries; attempt++ {
				got := sent[attempt].Sub(sent[attempt-1])
				want := retries.Backoff(attempt, backoffBase, backoffCap, labDraw(backoffSeed, n, attempt))
				if got != want {
					t.Fatalf("request %d waited %v before retry %d; labDraw gives %v: copy the reference's draw into labDraw", n, got, attempt, want)
				}
			}
		}
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
