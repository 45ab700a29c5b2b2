// Fuzzing the Retry-After values a fault may send. Under plain `go test`
// the seeds below and the corpus in testdata/fuzz/FuzzValidRetryAfter run
// once each. To fuzz (one target at a time; -parallel bounds the workers):
//
//	go test -run '^$' -fuzz '^FuzzValidRetryAfter$' -fuzztime 60s -parallel 2 ./fooddelivery/faults/
//
// A failing input is written to testdata/fuzz/FuzzValidRetryAfter; keep it
// there as a regression case once the bug is fixed.

package faults

import (
	"net/http"
	"testing"
)

// FuzzValidRetryAfter checks validRetryAfter against RFC 9110, section
// 10.2.3 (delta-seconds, ASCII digits only, or an HTTP-date), and that a
// rule carrying an accepted value survives the flag syntax: Parse of its
// String gives it back.
func FuzzValidRetryAfter(f *testing.F) {
	for _, v := range []string{
		"2", "0", "007", "120", "4294967296", "99999999999999999999999999",
		"Wed, 21 Oct 2015 07:28:00 GMT", "Wednesday, 21-Oct-15 07:28:00 GMT", "Wed Oct 21 07:28:00 2015",
		"Wed Oct  1 07:28:00 2015",
		"", "-1", "-0", "+5", " 5", "5 ", "1.5", "1e3", "0x10", "٣", "soon",
		"Wed, 21 Oct 2015 07:28:00 UTC", "Wed, 21 Oct 2015 07:28:00 GMT,p=0.5", "2,status=200",
	} {
		f.Add(v)
	}

	f.Fuzz(func(t *testing.T, v string) {
		digits := v != ""
		for _, c := range []byte(v) {
			digits = digits && c >= '0' && c <= '9'
		}
		_, dateErr := http.ParseTime(v)
		if got, want := validRetryAfter(v), digits || dateErr == nil; got != want {
			t.Fatalf("validRetryAfter(%q) = %v, want %v: Retry-After is delta-seconds (ASCII digits, no sign) or an HTTP-date", v, got, want)
		}

		r := Rule{Service: "payment", Route: "POST /charges", Fault: Fault{Status: http.StatusServiceUnavailable, RetryAfter: v}}
		if validate(r.Service, r.Route, r.Fault) != nil {
			return
		}
		back, err := Parse(r.String())
		if err != nil {
			t.Fatalf("Parse(%q), the String of an accepted rule: %v", r.String(), err)
		}
		if back != r {
			t.Fatalf("Parse(%q) = %+v, want the rule back: %+v", r.String(), back, r)
		}
	})
}
