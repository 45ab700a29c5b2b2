// Package labtest runs a lab's scenario inside a testing/synctest bubble and
// turns the two ways a bubble can go wrong into failures a learner can act
// on, instead of a panic that aborts the whole test binary:
//
//   - goroutines still blocked when the scenario ends (a request never
//     cancelled, a response body never closed, a timer never stopped) are
//     reported with where they are stuck;
//   - a scenario that runs past a fake-time watchdog (a retry loop that
//     never gives up, a call with no timeout) is stopped and reported.
//
// Usage, in a lab test:
//
//	func TestStep1HangingPayment(t *testing.T) {
//		labtest.Run(t, labtest.Options{Step: 1, Stuck: "PlaceOrder was still waiting for payment"},
//			func(t *testing.T) {
//				sys := labtest.StartSystem(t, system.Config{...})
//				...
//			})
//	}
//
// Beside Run and StartSystem, the package holds the fixtures several labs
// share, so that each lab's rig_test.go only has what is its own: the
// standard test order (PizzaOrder, PizzaOrderJSON), request counters per
// service route (Received, Charges, OrderCalls, MenuCalls) and a spy
// transport that records each attempt below the code under test (Spy).
package labtest

import (
	"bytes"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gophereats/resilience/fooddelivery/system"
)

// DefaultWatchdog is how much virtual time a scenario may take when
// Options.Watchdog is zero: far more than any lab scenario needs, little
// enough that a stuck scenario ends in milliseconds of real time.
const DefaultWatchdog = 10 * time.Minute

// Options describe a scenario for the failure messages.
type Options struct {
	// Step is the README step the test belongs to; messages point to it.
	// Zero leaves the step out of the messages.
	Step int
	// Watchdog is the virtual time after which the scenario counts as
	// stuck. Zero means DefaultWatchdog.
	Watchdog time.Duration
	// Stuck says, in the system's words, what was probably still going on
	// when the watchdog fired, for example "PlaceOrder was still retrying".
	Stuck string
	// Leak says what to check when goroutines are left behind, for example
	// "the losing hedge request was never cancelled".
	Leak string
}

// Run runs scenario inside synctest.Test under a fake-time watchdog. The
// scenario runs on its own goroutine inside the bubble, so require and
// t.FailNow work as usual. Cleanups the scenario registers with t.Cleanup
// (StartSystem registers the system's shutdown) run inside the bubble when
// the scenario ends or the watchdog fires.
func Run(t *testing.T, o Options, scenario func(t *testing.T)) {
	t.Helper()
	watchdog := o.Watchdog
	if watchdog <= 0 {
		watchdog = DefaultWatchdog
	}
	fired := false
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		err, ok := r.(error)
		if !ok || !strings.HasPrefix(err.Error(), "deadlock:") {
			panic(r)
		}
		stuck := stuckGoroutines()
		if fired {
			// The watchdog already said what happened; add where it was.
			t.Error(stepPrefix(o.Step) + "goroutines still stuck when the watchdog fired:\n  - " + strings.Join(stuck, "\n  - "))
			return
		}
		t.Error(leakFailure(o, stuck))
	}()
	synctest.Test(t, func(t *testing.T) {
		done := make(chan struct{})
		start := time.Now()
		go func() {
			defer close(done)
			defer func() {
				// A panic in the code under test fails this test, not the
				// whole test binary (which would hide every other step).
				if r := recover(); r != nil {
					t.Errorf("%sthe code under test panicked: %v\n%s", stepPrefix(o.Step), r, panicSite())
				}
			}()
			scenario(t)
		}()
		timer := time.NewTimer(watchdog)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
			fired = true
			what := o.Stuck
			if what == "" {
				what = "something in the system was still waiting or looping"
			}
			t.Errorf("%sthe scenario was still running after %v of virtual time: %s. "+
				"A call without a timeout, or a loop that never gives up, keeps the system busy forever.",
				stepPrefix(o.Step), time.Since(start).Round(time.Second), what)
		}
	})
}

// panicSite returns the innermost frames of the panicking goroutine that
// are not runtime or harness plumbing, so a learner sees their own line.
func panicSite() string {
	buf := make([]byte, 64<<10)
	lines := strings.Split(string(buf[:runtime.Stack(buf, false)]), "\n")
	var out []string
	for i := 1; i+1 < len(lines) && len(out) < 3; i += 2 {
		fn := strings.TrimSpace(lines[i])
		if isPlumbing(fn) || strings.Contains(fn, "/labtest.") || strings.HasPrefix(fn, "panic(") {
			continue
		}
		out = append(out, "  at "+fn+" "+strings.Fields(strings.TrimSpace(lines[i+1]))[0])
	}
	return strings.Join(out, "\n")
}

func stepPrefix(step int) string {
	if step == 0 {
		return ""
	}
	return fmt.Sprintf("step %d: ", step)
}

// leakFailure explains goroutines left blocked after the scenario ended.
// (The watchdog's timer keeps the bubble from ever being fully blocked, so
// a deadlock shows up as the watchdog firing instead.)
func leakFailure(o Options, stuck []string) string {
	var b strings.Builder
	b.WriteString(stepPrefix(o.Step))
	b.WriteString("the scenario finished but goroutines it started were still blocked (a leak)")
	if o.Leak != "" {
		b.WriteString(": " + o.Leak)
	}
	b.WriteString(". Cancel every request you start, close every response body, stop every timer.")
	if len(stuck) > 0 {
		b.WriteString("\nwhere they were stuck:")
		for _, s := range stuck {
			b.WriteString("\n  - " + s)
		}
	}
	return b.String()
}

var goroutineHeader = regexp.MustCompile(`^goroutine \d+ \[([^\]]*)\]:$`)

// stuckGoroutines summarises the goroutines left in synctest bubbles: one
// line each with what they wait on and the innermost frame that is not in
// the runtime or the standard library's sync internals.
func stuckGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, block := range bytes.Split(buf, []byte("\n\n")) {
		lines := strings.Split(strings.TrimSpace(string(block)), "\n")
		m := goroutineHeader.FindStringSubmatch(lines[0])
		if m == nil || !strings.Contains(m[1], "synctest bubble") {
			continue
		}
		state := strings.TrimSpace(strings.Split(m[1], ",")[0])
		frame := ""
		for i := 1; i < len(lines); i += 2 {
			fn := strings.TrimSpace(lines[i])
			if strings.HasPrefix(fn, "created by ") {
				break
			}
			if isPlumbing(fn) {
				continue
			}
			frame = fn
			if i+1 < len(lines) {
				frame += " at " + strings.Fields(strings.TrimSpace(lines[i+1]))[0]
			}
			break
		}
		out = append(out, state+" in "+frame)
		if len(out) == 8 {
			out = append(out, "...")
			break
		}
	}
	return out
}

func isPlumbing(fn string) bool {
	for _, p := range []string{"runtime.", "sync.", "internal/", "time.Sleep", "testing."} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// StartSystem starts the food-delivery system with cfg inside the current
// bubble and stops it when the test ends. It fails the test if the system
// cannot start.
func StartSystem(t *testing.T, cfg system.Config) *system.System {
	t.Helper()
	sys, err := system.Start(cfg)
	if err != nil {
		t.Fatalf("starting the food-delivery system: %v", err)
	}
	t.Cleanup(func() { sys.Close() })
	return sys
}
