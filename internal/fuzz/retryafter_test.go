// Fuzzing Retry-After as the reference solution of lab 03 reads it, and
// as the fault injector sends it. Under plain `go test` the seeds below
// and the corpus in testdata/fuzz/FuzzRetryAfter run once each. To fuzz
// (one target at a time; -parallel bounds the workers):
//
//	go test -run '^$' -fuzz '^FuzzRetryAfter$' -fuzztime 60s -parallel 2 ./internal/fuzz/
//
// A failing input is written to testdata/fuzz/FuzzRetryAfter; keep it
// there as a regression case once the bug is fixed.

package fuzz_test

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	retries "github.com/gophereats/resilience/solutions/03-retries"
)

// longestWait is the longest whole number of seconds a time.Duration
// holds (about 292 years).
const longestWait = math.MaxInt64 / int64(time.Second) * int64(time.Second)

// deltaSeconds reports whether v is delta-seconds (RFC 9110, section
// 1.2: 1*DIGIT, ASCII digits only, no sign, any length).
func deltaSeconds(v string) bool {
	if v == "" {
		return false
	}
	for _, c := range []byte(v) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// FuzzRetryAfter checks retries.RetryAfter against RFC 9110, section
// 10.2.3, for any header value and any clock: delta-seconds (any number of
// digits) is exactly that many seconds, up to the longest wait a Duration
// holds; an HTTP-date is the time left until it, 0 when it is past;
// anything else is refused (false, 0); and the wait is never negative.
// Then, when the fault injector accepts the value as a Fault's RetryAfter,
// it must send it unchanged, a service passing the failure on
// (fooddelivery.ReadError, WriteDependencyError) must carry it through
// unchanged, and RetryAfter must read it at every hop.
func FuzzRetryAfter(f *testing.F) {
	now := time.Date(2026, time.March, 14, 12, 0, 0, 0, time.UTC).Unix()
	for _, s := range []struct {
		v   string
		now int64
	}{
		{"120", now},
		{"0", now},
		{"000000000000000000000000000000000000007", now},
		{"4294967295", now},
		{"4294967296", now},
		{"9223372036", now},
		{"9223372037", now},
		{"18446744073709551616", now},
		{"Sat, 14 Mar 2026 12:01:30 GMT", now},
		{"Saturday, 14-Mar-26 12:01:30 GMT", now},
		{"Sat Mar 14 12:01:30 2026", now},
		{"Sat, 14 Mar 2026 11:59:00 GMT", now},
		{"Fri, 31 Dec 9999 23:59:59 GMT", math.MinInt64},
		{"Mon, 01 Jan 0001 00:00:00 GMT", math.MaxInt64},
		{"", now},
		{"-5", now},
		{"+5", now},
		{"-0", now},
		{" 5", now},
		{"5 ", now},
		{"1.5", now},
		{"1e3", now},
		{"0x10", now},
		{"soon", now},
		{"٣", now},
		{"Sat, 14 Mar 2026 12:01:30 UTC", now},
	} {
		f.Add(s.v, s.now)
	}

	f.Fuzz(func(t *testing.T, v string, nowUnix int64) {
		now := time.Unix(nowUnix, 0).UTC()
		h := http.Header{}
		if v != "" {
			h.Set("Retry-After", v)
		}
		got, ok := retries.RetryAfter(h, now)
		if got < 0 {
			t.Fatalf("RetryAfter(%q) at %v = %v: never a negative wait", v, now, got)
		}
		switch {
		case deltaSeconds(v):
			want := time.Duration(longestWait)
			if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs <= longestWait/int64(time.Second) {
				want = time.Duration(secs) * time.Second
			}
			if !ok || got < want || (want < time.Duration(longestWait) && got != want) {
				t.Fatalf("RetryAfter(%q) = (%v, %v), want (%v, true): delta-seconds is that many seconds, and a number too large for a Duration is the longest wait there is, never malformed",
					v, got, ok, want)
			}
		default:
			when, err := http.ParseTime(v)
			if err != nil {
				if ok || got != 0 {
					t.Fatalf("RetryAfter(%q) = (%v, %v), want (0, false): neither delta-seconds nor an HTTP-date", v, got, ok)
				}
				break
			}
			if want := max(when.Sub(now), 0); !ok || got != want {
				t.Fatalf("RetryAfter(%q) at %v = (%v, %v), want (%v, true): the time left until the date, 0 when past", v, now, got, ok, want)
			}
		}

		// The same value sent by an injected fault, then passed on by a
		// service that got it from its dependency.
		if v == "" {
			return // no header to send
		}
		in := faults.New(1, nil)
		if err := in.Set("payment", "", faults.Fault{Status: http.StatusServiceUnavailable, RetryAfter: v}); err != nil {
			return // refused: never sent
		}
		w := httptest.NewRecorder()
		in.Middleware("payment", "POST /charges", http.NotFoundHandler()).ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/charges", nil))
		sent := w.Header().Get("Retry-After")
		if sent != v {
			t.Fatalf("the fault injector accepted RetryAfter %q and sent Retry-After %q; it must pass it through unchanged", v, sent)
		}
		if _, ok := retries.RetryAfter(w.Header(), now); !ok {
			t.Fatalf("the fault injector accepted and sent Retry-After %q, which a client cannot read: it must refuse it", v)
		}
		err := fooddelivery.ReadError("payment", w.Result())
		passed := httptest.NewRecorder()
		fooddelivery.WriteDependencyError(passed, httptest.NewRequest(http.MethodPost, "/orders", nil), "payment", err)
		if again := passed.Header().Get("Retry-After"); again != v {
			t.Fatalf("payment answered Retry-After %q; passing the failure on sent %q, want it unchanged", v, again)
		}
	})
}
