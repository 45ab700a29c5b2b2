package retries_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	retries "github.com/gophereats/resilience/labs/03-retries"
)

// maxSeconds is the longest whole number of seconds a time.Duration holds
// (about 292 years).
const maxSeconds = time.Duration(math.MaxInt64/int64(time.Second)) * time.Second

func TestStep4ParseRetryAfter(t *testing.T) {
	now := time.Date(2026, time.March, 14, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		header string
		want   time.Duration
		ok     bool
	}{
		{"120", 2 * time.Minute, true},
		{"0", 0, true},
		{"Sat, 14 Mar 2026 12:01:30 GMT", 90 * time.Second, true},    // IMF-fixdate
		{"Saturday, 14-Mar-26 12:01:30 GMT", 90 * time.Second, true}, // RFC 850 (obsolete)
		{"Sat Mar 14 12:01:30 2026", 90 * time.Second, true},         // asctime (obsolete)
		{"Sat, 14 Mar 2026 11:59:00 GMT", 0, true},                   // already past: no wait
		{"", 0, false},
		{"-5", 0, false},
		{"+5", 0, false},   // a sign, even a plus, is not delta-seconds (digits only)
		{"+120", 0, false}, // the same
		// Seconds too many for a Duration (over about 292 years) mean the
		// longest wait one holds, never a product that wrapped around.
		{"9223372037", maxSeconds, true},
		{"10000000000", maxSeconds, true},
		{"99999999999999999999", maxSeconds, true}, // beyond uint64 too
		{"1.5", 0, false},
		{"soon", 0, false},
	}
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		for _, c := range cases {
			h := http.Header{}
			if c.header != "" {
				h.Set("Retry-After", c.header)
			}
			got, ok := retries.RetryAfter(h, now)
			if c.want == maxSeconds {
				// The longest wait, whether truncated to whole seconds or not.
				if !ok || got < maxSeconds {
					why := "Multiplying that many seconds by time.Second overflows and wraps around to a shorter (here " +
						"negative) wait, after which the retry goes out: cap the seconds before multiplying."
					if !ok {
						why = "It is delta-seconds (digits only) and well formed however long: even a number too large " +
							"for strconv.ParseUint (beyond uint64) is the longest wait, not a malformed header."
					} else if got > 0 {
						why = "Multiplying that many seconds by time.Second overflows and wraps around to a shorter wait: " +
							"cap the seconds before multiplying."
					}
					t.Errorf("step 4: RetryAfter(%q) at %s = (%v, %v); %s seconds is more than a time.Duration holds, so it "+
						"must be the longest wait one holds, (%v, true) or more, which is beyond any MaxDelay. %s",
						c.header, now.Format(time.DateTime), got, ok, c.header, maxSeconds, why)
				}
				continue
			}
			if got != c.want || ok != c.ok {
				why := ""
				if c.header != "" && (c.header[0] == '+' || c.header[0] == '-') {
					why = ": delta-seconds are digits only, so a signed number (plus or minus) is malformed " +
						"(strconv.Atoi and ParseInt accept a sign)"
				}
				t.Errorf("step 4: RetryAfter(%q) at %s = (%v, %v), want (%v, %v)%s",
					c.header, now.Format(time.DateTime), got, ok, c.want, c.ok, why)
			}
		}
	})
}

func TestStep4RetryAfterIsHonoured(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		header func(now time.Time) string
	}{
		{"503 with Retry-After in seconds", http.StatusServiceUnavailable, func(time.Time) string { return "2" }},
		{"429 with Retry-After as an HTTP-date", http.StatusTooManyRequests, func(now time.Time) string {
			return now.Add(2 * time.Second).UTC().Format(http.TimeFormat) // 2s: no more than the 2s MaxDelay
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
				r := newRig(t, options{})
				header := c.header(time.Now())
				require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: c.status, RetryAfter: header}))
				r.spy.Before = func(n int) {
					if n == 2 {
						r.sys.Faults.Clear("payment", listing)
					}
				}
				_, err := r.payments.Charges(context.Background(), "")
				gaps := r.spy.Gaps()
				require.NotEmpty(t, gaps, "step 4: payment answered %d with Retry-After %q; your Transport did not retry (error: %v)",
					c.status, header, err)
				first := r.spy.Attempts()[0]
				// What the header asks, worked out here (not with your
				// RetryAfter), from the moment the answer arrived.
				asked := time.Duration(0)
				if secs, err := strconv.Atoi(header); err == nil {
					asked = time.Duration(secs) * time.Second
				} else if when, err := http.ParseTime(header); err == nil {
					asked = when.Sub(first.End)
				}
				// The longest first backoff with the documented defaults (100ms
				// base, 2s cap): min(cap, base x 2^1).
				ceiling := min(2*time.Second, 2*100*time.Millisecond)
				if longest := max(asked, ceiling); gaps[0] < asked-tolerance || gaps[0] > longest+tolerance {
					want := fmt.Sprintf("between %v and %v", asked, longest)
					if longest == asked {
						want = asked.String()
					}
					t.Fatalf("step 4: payment answered %d with Retry-After %q (%v from then); your Transport retried after %v, "+
						"want %s. Wait max(Retry-After, your backoff): never less than the server asked (a retry sooner "+
						"only meets the same answer), and longer only when your own backoff is (at most %v here).",
						c.status, header, asked, gaps[0], want, ceiling)
				}
				require.NoError(t, err, "step 4: the retry after the wait payment asked for should have succeeded")
			})
		})
	}
}

func TestStep4RetryAfterZeroKeepsTheJitter(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		const clients = 20
		r := newRig(t, options{configure: func(tr *retries.Transport) { tr.Attempts = 2 }})
		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "0"}))

		began := time.Now()
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() { r.payments.Charges(context.Background(), "") })
		}
		wg.Wait()

		instants := map[time.Time]bool{}
		for _, a := range r.spy.Attempts() {
			if a.Start.After(began) {
				instants[a.Start] = true
			}
		}
		if len(instants) == 0 {
			t.Fatalf("step 4: %d reads met payment's 503 with Retry-After: 0 at the same moment, and all of them retried "+
				"at that very instant. Retry-After is the least the server asks, not a replacement for your backoff: "+
				"wait max(Retry-After, backoff), so the jitter still spreads the clients.", clients)
		}
		if len(instants) < clients*3/4 {
			t.Fatalf("step 4: %d reads met payment's 503 with Retry-After: 0 at the same moment; their retries went out at "+
				"%d distinct instants (want at least %d). Retry-After is the least the server asks, not a replacement for "+
				"your backoff: wait max(Retry-After, backoff), so the jitter still spreads the clients.",
				clients, len(instants), clients*3/4)
		}
	})
}

func TestStep4RetryAfterBeyondTheDeadline(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		const budget = 2 * time.Second
		// MaxDelay a minute: 30s is a wait this Transport would take, were it
		// not for the caller's deadline.
		r := newRig(t, options{configure: func(tr *retries.Transport) { tr.MaxDelay = time.Minute }})
		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "30"}))

		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		began := time.Now()
		_, err := r.payments.Charges(ctx, "")
		took := time.Since(began)

		if r.spy.Count() != 1 || took > 10*tolerance || !errors.Is(err, fooddelivery.ErrUnavailable) {
			t.Fatalf("step 4: payment answered 503 with Retry-After: 30 (within the Transport's 1m MaxDelay) and the "+
				"caller's deadline was %v away; your Transport made %d attempts and returned after %v with %q. A retry sooner than the server asked only "+
				"meets the same answer, and one after the deadline reaches nobody: return payment's 503 at once.",
				budget, r.spy.Count(), took, err)
		}
	})
}

func TestStep4RetryAfterBeyondMaxDelay(t *testing.T) {
	farFuture := "Fri, 31 Dec 9999 23:59:59 GMT" // as a Duration, about 292 years (the most one holds)
	cases := []struct {
		name     string
		maxDelay time.Duration // the Transport's MaxDelay; 0 is the documented default, 2s
		header   func(now time.Time) string
		waits    time.Duration // 0: the answer must come back at once
	}{
		{"Retry-After: 3, 1s past the 2s MaxDelay", 0, func(time.Time) string { return "3" }, 0},
		{"Retry-After: 3600", 0, func(time.Time) string { return "3600" }, 0},
		{"Retry-After as an HTTP-date 3s away", 0, func(now time.Time) string {
			return now.Add(3 * time.Second).UTC().Format(http.TimeFormat)
		}, 0},
		{"Retry-After as an HTTP-date in year 9999", 0, func(time.Time) string { return farFuture }, 0},
		{"Retry-After: 10000000000, more seconds than a Duration holds", 0, func(time.Time) string { return "10000000000" }, 0},
		{"Retry-After: 9223372037, one second more than a Duration holds", 0, func(time.Time) string { return "9223372037" }, 0},
		{"Retry-After: 5 with MaxDelay 10s", 10 * time.Second, func(time.Time) string { return "5" }, 5 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
				const patience = 30 * time.Second // far more than any wait this test allows
				r := newRig(t, options{configure: func(tr *retries.Transport) { tr.MaxDelay = c.maxDelay }})
				header := c.header(time.Now())
				require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable, RetryAfter: header}))
				if c.waits > 0 {
					r.spy.Before = func(n int) {
						if n == 2 {
							r.sys.Faults.Clear("payment", listing)
						}
					}
				}
				maxDelay := cmp.Or(c.maxDelay, 2*time.Second)
				limit := fmt.Sprintf("the Transport's MaxDelay of %v", maxDelay)
				if c.maxDelay == 0 {
					limit = fmt.Sprintf("the documented default MaxDelay of %v (the Transport's MaxDelay is zero)", maxDelay)
				}

				// The caller sets no deadline: only the Transport's own rule
				// can stop it waiting out whatever the server asks.
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				type result struct {
					err  error
					took time.Duration
				}
				done := make(chan result, 1)
				began := time.Now()
				go func() {
					_, err := r.payments.Charges(ctx, "")
					done <- result{err, time.Since(began)}
				}()
				var res result
				select {
				case res = <-done:
				case <-time.After(patience):
					cancel()
					<-done
					t.Fatalf("step 4: payment answered 503 with Retry-After %q and the caller set no deadline; %v later your "+
						"Transport, whose limit is %s, had made %d attempt(s) and was still waiting. A server may ask for any "+
						"wait (an hour, a date centuries away): never wait longer than MaxDelay between attempts; when the "+
						"server asks for more, return its answer at once.", header, patience, limit, r.spy.Count())
				}
				if c.waits > 0 {
					gaps := r.spy.Gaps()
					if res.err != nil || len(gaps) != 1 || gaps[0] < c.waits-tolerance || gaps[0] > c.waits+tolerance {
						t.Fatalf("step 4: payment answered 503 with Retry-After %q, within the Transport's MaxDelay of %v, then "+
							"was healthy; your Transport made %d attempt(s), waiting %v, and returned %v after %v. It must "+
							"wait the %v asked and retry: the limit is the Transport's MaxDelay, not the default's 2s.",
							header, maxDelay, r.spy.Count(), gaps, res.err, res.took, c.waits)
					}
					return
				}
				if n := r.spy.Count(); n != 1 || res.took > tolerance || !errors.Is(res.err, fooddelivery.ErrUnavailable) {
					t.Fatalf("step 4: payment answered 503 with Retry-After %q, more than %s, and the caller set no "+
						"deadline; your Transport made %d attempt(s) and returned after %v with %v. A retry sooner than the "+
						"server asked only meets the same answer, and waiting longer than MaxDelay holds the caller for as "+
						"long as the server likes: return payment's 503 at once.",
						header, limit, n, res.took, res.err)
				}
				if ce := callError(res.err); ce == nil || ce.Message == "" {
					t.Fatalf("step 4: your Transport rightly gave up at once on Retry-After %q (more than %s), but "+
						"payment's 503 had already been read: the caller got no explanation (error: %v). Return the "+
						"answer unread.", header, limit, res.err)
				}
			})
		})
	}
}
