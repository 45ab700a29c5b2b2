package breaker_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gophereats/resilience/fooddelivery/labtest"
	breaker "github.com/gophereats/resilience/labs/05-breaker"
)

func TestStep2OpensWhenHalfOfTheLastTwentyFailed(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		sys, cb := start(t, window())
		pattern := strings.Repeat("S", 15) + strings.Repeat("F", 10)
		opened := runPattern(t, sys, cb, pattern)
		if opened != 25 {
			what := "never opened"
			if opened > 0 {
				what = fmt.Sprintf("opened after order %d (%d successes and %d failures so far)", opened,
					strings.Count(pattern[:opened], "S"), strings.Count(pattern[:opened], "F"))
			}
			t.Fatalf("step 2: 15 payments succeeded, then 10 failed; the breaker %s. With Window 20 and FailureRate 0.5 "+
				"(zero means 0.5) it opens after order 25, when the last 20 calls hold 10 failures: not before (order 24: "+
				"9 of the last 20 failed), not later (a window that starts over every 20 calls sees only 5 calls).", what)
		}
		before := labtest.Charges(sys)
		place(sys)
		if n := labtest.Charges(sys) - before; n != 0 {
			t.Fatalf("step 2: the breaker opened after order 25, yet the next order reached payment (%d charges): "+
				"an open breaker refuses without calling (step 1)", n)
		}
	})
}

func TestStep2NeverOpensBeforeTheMinimumNumberOfCalls(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		sys, cb := start(t, window())
		opened := runPattern(t, sys, cb, strings.Repeat("F", 9))
		if opened != 0 || labtest.Charges(sys) != 9 {
			t.Fatalf("step 2: a new breaker saw its first payments fail and opened after failure %d (%d of 9 charges reached "+
				"payment). With MinCalls 10 the failure rate is not trusted before the window holds 10 calls: "+
				"one failure out of one call is 100%%, and it says almost nothing.", opened, labtest.Charges(sys))
		}
		if opened = runPattern(t, sys, cb, "F"); opened == 0 {
			t.Fatalf("step 2: the first 10 payments all failed and the breaker is %v; with MinCalls 10 and 10 of 10 calls "+
				"failed it must open", cb.State())
		}
	})
}

func TestStep2AFewUnluckyCallsDoNotOpen(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		sys, cb := start(t, window())
		pattern := strings.Repeat("SSSSSSSSFF", 6)
		if opened := runPattern(t, sys, cb, pattern); opened != 0 {
			t.Fatalf("step 2: 20%% of payments failed, two in a row every tenth order; the breaker opened after order %d. "+
				"The last 20 calls never held more than 4 failures: only a window of a few calls sees 2 failures as a "+
				"majority. Keep the outcomes of the last Window calls, not a fixed handful.", opened)
		}
		if n := labtest.Charges(sys); n != int64(len(pattern)) {
			t.Fatalf("step 2: the breaker never opened, yet %d of %d charges reached payment: a closed breaker makes every call", n, len(pattern))
		}
	})
}

func TestStep2TheSettingsDecide(t *testing.T) {
	cases := []struct {
		s       breaker.Settings
		pattern string // one call per letter: S succeeds, F fails
		want    int    // the call after which the breaker opens; 0: never
		why     string
	}{
		{breaker.Settings{Window: 8, FailureRate: 0.25}, "SSSSSSFF", 8,
			"at call 8 the window is full (MinCalls 0 means Window) and 2 of its 8 calls failed: 0.25 reaches FailureRate 0.25 (only a zero FailureRate means 0.5)"},
		{breaker.Settings{Window: 8, FailureRate: 0.75}, "SSSFFFFF", 0,
			"5 of the 8 calls failed: 0.625 stays below FailureRate 0.75 (only a zero FailureRate means 0.5)"},
		{breaker.Settings{Window: 10}, "FFFFFFFFF", 0,
			"MinCalls 0 means a full window, and 9 calls do not fill a window of 10"},
		{breaker.Settings{Window: 10, MinCalls: 30}, "SSSSSFFFFF", 10,
			"a MinCalls larger than Window means Window (a window of 10 never holds 30 calls); at call 10 the window is full and 5 of its 10 calls failed"},
		{breaker.Settings{Window: 20, MinCalls: 10}, "SSSSSFFFFF", 10,
			"at call 10 the window holds MinCalls calls, 5 of them failed: MinCalls counts calls, not failures, and the rate is over the calls held, not over Window"},
	}
	for _, c := range cases {
		labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
			c.s.Name, c.s.Logger = "test", quiet
			cb := breaker.New(c.s)
			got := 0
			for i, o := range c.pattern {
				if o == 'F' {
					fail(cb, 1)
				} else {
					succeed(cb)
				}
				if cb.State() == breaker.Open {
					got = i + 1
					break
				}
			}
			if got != c.want {
				when := func(n int) string {
					if n == 0 {
						return "never opened"
					}
					return fmt.Sprintf("opened after call %d", n)
				}
				t.Fatalf("step 2: with Window %d, FailureRate %v, MinCalls %d, after the calls %s (S succeeded, F failed) "+
					"the breaker %s; want: %s, because %s.", c.s.Window, c.s.FailureRate, c.s.MinCalls, c.pattern, when(got), when(c.want), c.why)
			}
		})
	}
}

func TestStep2TheWindowStartsOverAfterClosing(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		s := window()
		s.Name, s.Logger = "test", quiet
		cb := breaker.New(s)
		fail(cb, 10)
		if st := cb.State(); st != breaker.Open {
			t.Fatalf("step 2: the first 10 calls all failed and the breaker (Window 20, MinCalls 10) is %v; it must open", st)
		}
		halfOpenAfter(t, 2, cb, openFor, "10 failures opened the breaker (Window 20, MinCalls 10)")
		called, err := succeed(cb)
		if st := cb.State(); !called || err != nil || st != breaker.Closed {
			t.Fatalf("step 2: 10 failures opened the breaker (Window 20, MinCalls 10) and %v later it was half-open; "+
				"a trial call that succeeds was made: %v; Do returned %v and the breaker is %v. A successful trial "+
				"closes it (step 1).", openFor, called, err, st)
		}
		fail(cb, 1)
		if st := cb.State(); st != breaker.Closed {
			t.Fatalf("step 2: the breaker (Window 20, MinCalls 10) closed after a successful trial; one failure later it is %v. "+
				"Every state change starts the window over: the 10 failures that opened it are history, and the new "+
				"window holds 1 call, fewer than MinCalls.", st)
		}
	})
}
