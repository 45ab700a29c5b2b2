// Fuzzing how a failed call's response becomes a *CallError and is passed
// on to the caller's own client, Retry-After included. Under plain `go
// test` the seeds below and the corpus in testdata/fuzz/FuzzDependencyError
// run once each. To fuzz (one target at a time; -parallel bounds the
// workers):
//
//	go test -run '^$' -fuzz '^FuzzDependencyError$' -fuzztime 60s -parallel 2 ./fooddelivery/
//
// A failing input is written to testdata/fuzz/FuzzDependencyError; keep it
// there as a regression case once the bug is fixed.

package fooddelivery_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gophereats/resilience/fooddelivery"
)

// FuzzDependencyError feeds ReadError an arbitrary error response (status,
// Retry-After, the don't-retry header, body) and passes the error on with
// WriteDependencyError, checking both against their documentation: the
// sentinel follows the status, the ErrorBody is read when it is JSON, and
// the answer's status and code follow the sentinel, with Retry-After
// carried through unchanged and the don't-retry signal kept.
func FuzzDependencyError(f *testing.F) {
	for _, s := range []struct {
		status     uint16
		retryAfter string
		dontRetry  string
		body       string
		callerLeft bool
	}{
		{503, "2", "", `{"code":"injected","message":"payment answers 503"}`, false},
		{503, "", "1", `{"code":"overloaded","message":"payment is at its concurrency limit of 10 requests"}`, false},
		{429, "Wed, 21 Oct 2015 07:28:00 GMT", "", `{"code":"slow_down"}`, false},
		{504, "", "", `{"code":"budget_too_short"}`, false},
		{500, "+5", "yes", `not json`, false},
		{502, "1", "1", ``, true},
		{404, "", "", `{"code":"not_found","message":"no order o1"}`, false},
		{401, "", "", `{"code":"unauthorized"}`, false},
		{403, "", "", `null`, false},
		{409, "1", "", `{"code":"idempotency_key_in_use"}`, false},
		{422, "", "", `{"code":["not","a","string"]}`, false},
		{302, "", "", ``, false},
		{200, "", "", `{}`, false},
		{999, "\r\nSet-Cookie: x=1", "", `{"code":"\u0000"}`, true},
	} {
		f.Add(s.status, s.retryAfter, s.dontRetry, []byte(s.body), s.callerLeft)
	}

	f.Fuzz(func(t *testing.T, status uint16, retryAfter, dontRetry string, body []byte, callerLeft bool) {
		code := int(status)
		resp := &http.Response{StatusCode: code, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body))}
		if retryAfter != "" {
			resp.Header.Set("Retry-After", retryAfter)
		}
		if dontRetry != "" {
			resp.Header.Set(fooddelivery.HeaderDontRetry, dontRetry)
		}
		err := fooddelivery.ReadError("payment", resp)

		var ce *fooddelivery.CallError
		if !errors.As(err, &ce) {
			t.Fatalf("ReadError returned %T, want a *CallError", err)
		}
		if ce.Status != code || ce.RetryAfter != retryAfter || ce.DontRetry != (dontRetry == "1") {
			t.Fatalf("ReadError kept status %d, Retry-After %q, don't-retry %v; the response had %d, %q, %q",
				ce.Status, ce.RetryAfter, ce.DontRetry, code, retryAfter, dontRetry)
		}
		var eb fooddelivery.ErrorBody
		if len(body) <= 64<<10 && json.Unmarshal(body, &eb) == nil && (ce.Code != eb.Code || ce.Message != eb.Message) {
			t.Fatalf("ReadError read code %q, message %q from the ErrorBody %q", ce.Code, ce.Message, body)
		}
		want := fooddelivery.ErrUnavailable
		switch {
		case code == http.StatusServiceUnavailable && dontRetry == "1":
			want = fooddelivery.ErrOverloaded
		case code == http.StatusGatewayTimeout:
			want = fooddelivery.ErrTimeout
		case code == http.StatusTooManyRequests || code >= 500:
		case code == http.StatusUnauthorized || code == http.StatusForbidden:
			want = fooddelivery.ErrUnauthorized
		case code == http.StatusNotFound:
			want = fooddelivery.ErrNotFound
		case code >= 400:
			want = fooddelivery.ErrRejected
		}
		if ce.Err != want || !errors.Is(err, want) {
			t.Fatalf("status %d (don't-retry %q) gave the sentinel %v, want %v", code, dontRetry, ce.Err, want)
		}
		if !strings.HasPrefix(err.Error(), "payment: ") {
			t.Fatalf("the error's text %q does not name the dependency", err.Error())
		}

		// The service that made the call passes the failure on.
		r := httptest.NewRequest(http.MethodPost, "/orders", nil)
		if callerLeft {
			ctx, cancel := context.WithCancel(r.Context())
			cancel()
			r = r.WithContext(ctx)
		}
		w := httptest.NewRecorder()
		fooddelivery.WriteDependencyError(w, r, "payment", err)
		wantStatus, what := http.StatusBadGateway, "unavailable"
		switch {
		case want == fooddelivery.ErrTimeout:
			wantStatus, what = http.StatusGatewayTimeout, "timeout"
		case want == fooddelivery.ErrOverloaded:
			wantStatus, what = http.StatusServiceUnavailable, "overloaded"
		case callerLeft:
			wantStatus, what = 499, "cancelled"
		case want == fooddelivery.ErrNotFound:
			wantStatus, what = http.StatusNotFound, "not_found"
		case want == fooddelivery.ErrRejected:
			wantStatus, what = http.StatusUnprocessableEntity, "rejected"
		case want == fooddelivery.ErrUnauthorized:
			what = "unauthorized"
		}
		var out fooddelivery.ErrorBody
		if jerr := json.Unmarshal(w.Body.Bytes(), &out); jerr != nil || w.Code != wantStatus || out.Code != "payment_"+what {
			t.Fatalf("passing on %v answered %d %q (%v), want %d with code %q", err, w.Code, w.Body.Bytes(), jerr, wantStatus, "payment_"+what)
		}
		if got := w.Header().Get("Retry-After"); got != retryAfter {
			t.Fatalf("the dependency sent Retry-After %q; passing the failure on sent %q, want it unchanged", retryAfter, got)
		}
		if got, wantDR := w.Header().Get(fooddelivery.HeaderDontRetry) == "1", wantStatus == http.StatusServiceUnavailable || dontRetry == "1"; got != wantDR {
			t.Fatalf("status %d passed on as %d: %s is set %v, want %v", code, w.Code, fooddelivery.HeaderDontRetry, got, wantDR)
		}
	})
}
