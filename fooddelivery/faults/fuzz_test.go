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
	"errors"
	"net/http"
	"strings"
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

// FuzzParse checks the fault parser on any spec: it never panics; what it
// accepts is a rule Set accepts too, within MaxDuration, that survives the
// flag syntax (Parse of its String gives it back); what it refuses wraps
// ErrInvalid with an example. To fuzz:
//
//	go test -run '^$' -fuzz '^FuzzParse$' -fuzztime 60s -parallel 2 ./fooddelivery/faults/
func FuzzParse(f *testing.F) {
	for _, k := range kinds {
		f.Add(k.example)
	}
	for _, spec := range []string{
		"menu-3:GET /restaurants=tail,p=1,latency=2562047h,jitter=2562047h", "payment=hang,max=2562047h",
		"payment=latency,fixed=9223372036854775807ns", "payment=error,retry-after=Wed, 21 Oct 2015 07:28:00 GMT,p=0.5",
		"payment=error,status=0", "payment=latency,p=NaN,fixed=1s", "payment=latency,p=1e-320,fixed=1s", "=", ":=", "a:=b",
		"payment=latency,fixed=-1s", "payment=reset,p=0", "payment=lose,jitter=1h,fixed=1h", "payment:POST /charges=hang,max=30s,p=0.5",
	} {
		f.Add(spec)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		r, err := Parse(spec)
		if err != nil {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "example: ") {
				t.Fatalf("Parse(%q) refused it with %q: want an error wrapping ErrInvalid that shows an example", spec, err)
			}
			return
		}
		if err := validate(r.Service, r.Route, r.Fault); err != nil {
			t.Fatalf("Parse(%q) accepted %+v, which Set refuses: %v", spec, r, err)
		}
		ft := r.Fault
		if total := ft.Latency + ft.Jitter + ft.TailLatency + ft.Hang + ft.SlowBody; total < 0 || total > MaxDuration {
			t.Fatalf("Parse(%q) accepted times adding up to %v, over MaxDuration %v", spec, total, MaxDuration)
		}
		back, err := Parse(r.String())
		if err != nil || back != r {
			t.Fatalf("Parse(%q) = %+v, written %q, read back %+v, %v", spec, r, r.String(), back, err)
		}
	})
}
