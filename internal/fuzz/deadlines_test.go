// Fuzzing the deadline header (fooddelivery.HeaderTimeoutMs) as the
// reference solution of lab 02 reads it. Under plain `go test` the seeds
// below and the corpus in testdata/fuzz/FuzzDeadlineHeader run once each.
// To fuzz (one target at a time; -parallel bounds the workers):
//
//	go test -run '^$' -fuzz '^FuzzDeadlineHeader$' -fuzztime 60s -parallel 2 ./internal/fuzz/
//
// A failing input is written to testdata/fuzz/FuzzDeadlineHeader; keep it
// there as a regression case once the bug is fixed.

package fuzz_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	deadlines "github.com/gophereats/resilience/solutions/02-deadlines"
)

// wireBudget is what a deadline header value means on the wire: a plain
// decimal number of milliseconds of 1 to deadlines.MaxDigits ASCII digits;
// anything else is no budget at all.
func wireBudget(v string) (time.Duration, bool) {
	if v == "" || len(v) > deadlines.MaxDigits {
		return 0, false
	}
	var ms int64
	for _, c := range []byte(v) {
		if c < '0' || c > '9' {
			return 0, false
		}
		ms = ms*10 + int64(c-'0')
	}
	return time.Duration(ms) * time.Millisecond, true
}

// FuzzDeadlineHeader sends one request with an arbitrary deadline header
// through deadlines.Middleware(own, need) and checks the budget the handler
// gets: exactly min(header, own) for a well-formed header and own for any
// other (absent, signed, spaced, fractional, with a unit, or with more than
// MaxDigits digits), never negative and never more than own. Only a
// well-formed header below need, or "0" whatever need is, may be refused
// (504 budget_too_short, with
// the don't-retry signal); a malformed one is ignored, never a 5xx. The
// request runs in a synctest bubble, so the budget is exact.
func FuzzDeadlineHeader(f *testing.F) {
	for _, s := range []struct {
		header        string
		ownMs, needMs uint32
	}{
		{"", 10_000, 250},
		{"1500", 10_000, 250},
		{"0", 10_000, 250},
		{"0", 10_000, 0},
		{"249", 10_000, 250},
		{"250", 10_000, 250},
		{"99999999", 10_000, 250},
		{"999999999", 10_000, 250},
		{"9223372036854775807", 10_000, 250},
		{"18446744073709551616", 10_000, 250},
		{"00000001", 10_000, 0},
		{"-1", 10_000, 250},
		{"+100", 10_000, 250},
		{" 100", 10_000, 250},
		{"100 ", 10_000, 250},
		{"1e3", 10_000, 250},
		{"1.5", 10_000, 250},
		{"100ms", 10_000, 250},
		{"0x10", 10_000, 250},
		{"١٢٣", 10_000, 250}, // Arabic-Indic digits: not ASCII
		{"１２３", 10_000, 250}, // full-width digits
		{"5000", 2_000, 2_000},
	} {
		f.Add(s.header, s.ownMs, s.needMs)
	}

	f.Fuzz(func(t *testing.T, header string, ownMs, needMs uint32) {
		// own in 1ms..100h; need in 0..own.
		ownMs = max(ownMs%(100*3600*1000), 1)
		needMs %= ownMs + 1
		own, need := time.Duration(ownMs)*time.Millisecond, time.Duration(needMs)*time.Millisecond

		synctest.Test(t, func(t *testing.T) {
			ran := false
			var left time.Duration
			var hasDeadline bool
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ran = true
				var deadline time.Time
				deadline, hasDeadline = r.Context().Deadline()
				left = time.Until(deadline)
				w.WriteHeader(http.StatusNoContent)
			})
			h := deadlines.Middleware(own, need)(next)
			r := httptest.NewRequest(http.MethodGet, "/menu", nil)
			if header != "" {
				r.Header.Set(fooddelivery.HeaderTimeoutMs, header)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)

			sent, wellFormed := wireBudget(header)
			want := own
			if wellFormed {
				want = min(sent, own)
			}
			if want <= 0 || want < need {
				if ran || w.Code != http.StatusGatewayTimeout {
					t.Fatalf("header %q (own %v, need %v): a budget of %v is below need, or nothing at all: want 504 without running the handler, got %d (ran: %v)",
						header, own, need, want, w.Code, ran)
				}
				var body fooddelivery.ErrorBody
				if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Code != "budget_too_short" {
					t.Fatalf("header %q: 504 body %q, want a JSON error with code budget_too_short (%v)", header, w.Body.Bytes(), err)
				}
				if w.Header().Get(fooddelivery.HeaderDontRetry) != "1" {
					t.Fatalf("header %q: 504 budget_too_short without %s: 1", header, fooddelivery.HeaderDontRetry)
				}
				return
			}
			if !ran || w.Code != http.StatusNoContent {
				t.Fatalf("header %q (own %v, need %v): want the handler to run with a budget of %v, got %d (ran: %v) %s",
					header, own, need, want, w.Code, ran, strings.TrimSpace(w.Body.String()))
			}
			if !hasDeadline {
				t.Fatalf("header %q: the handler's context has no deadline, want %v", header, want)
			}
			if left < 0 || left > own {
				t.Fatalf("header %q (own %v): the handler got a budget of %v: never negative, never more than own", header, own, left)
			}
			if left != want {
				what := "a malformed header is ignored: the budget is own"
				if wellFormed {
					what = "the budget is min(header, own)"
				}
				t.Fatalf("header %q (own %v): the handler got a budget of %v, want %v (%s)", header, own, left, want, what)
			}
		})
	})
}
