package hedging_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/menu"
	"github.com/gophereats/resilience/fooddelivery/system"
	hedging "github.com/gophereats/resilience/labs/09-hedging"
)

// The rig (a Hedger over the system's menu replicas through a spy, hedged)
// and the helpers the tests share.
// The step tests are in stepN_test.go, one file per README step; the
// experiment, the last step, is in step6_experiment_test.go (go test runs
// the files in name order, so it runs after the other steps).

const (
	stall      = time.Second           // a stalled replica answers after this
	hedgeAfter = 50 * time.Millisecond // the fixed hedge delay of steps 1, 3, 4 and 5
	slack      = 10 * time.Millisecond // what the tests forgive on top of a delay (fake time is exact)
	menuRoute  = "GET /restaurants/{id}/menu"
	// leak is what labtest adds when goroutines outlive a scenario: it
	// points at the list of where each one was blocked instead of guessing
	// which of them it was.
	leak = "where each one was blocked is listed below (frames in hedging.go are goroutines of the Hedger; " +
		"net/http frames are connections of requests it sent)"
)

var replicas = []string{"menu-1", "menu-2", "menu-3"}

// hedged wires h (the learner's Hedger, with Delay, Latencies and Budget
// set by the test) over the system's network through a spy that records
// every attempt (host, method, context) and whether each response body it
// hands out gets closed (a labtest.Spy), and returns the spy and an
// http.Client using h.
func hedged(t *testing.T, sys *system.System, h *hedging.Hedger) (*labtest.Spy, *http.Client) {
	transport := (&memnet.Dialer{Network: sys.Network}).Transport()
	t.Cleanup(transport.CloseIdleConnections)
	s := &labtest.Spy{Base: transport}
	h.Base = s
	if h.Replicas == nil {
		h.Replicas = replicas
	}
	// Runs before the connections and the system are closed (cleanups run
	// last first), so it sees what the test's requests left behind.
	t.Cleanup(func() { leftBehind(t, s) })
	return s, &http.Client{Transport: h}
}

var stepOfTest = regexp.MustCompile(`^TestStep(\d+)`)

// leftBehind fails the test when, slack after its last request ended, an
// attempt the Hedger handed to Base is still waiting for its answer or a
// response body Base returned was never closed: what the spy saw, attempt
// by attempt.
func leftBehind(t *testing.T, s *labtest.Spy) {
	time.Sleep(slack) // let cancellations and closes that are on their way land
	var waiting, open []string
	for _, a := range s.Attempts() {
		switch {
		case a.End.IsZero():
			waiting = append(waiting, fmt.Sprintf("%s %s, sent %v earlier", a.Method, a.Host, time.Since(a.Start).Round(time.Millisecond)))
		case a.Body != nil && !a.Body.Closed():
			open = append(open, fmt.Sprintf("%s's %d", a.Host, a.Status))
		}
	}
	if len(waiting) == 0 && len(open) == 0 {
		return
	}
	step := "step ?"
	if m := stepOfTest.FindStringSubmatch(t.Name()); m != nil {
		step = "step " + m[1]
	}
	t.Errorf("%s: %v after the test's last request had ended, of the %d attempts the Hedger handed to Base, %d still "+
		"waited for their answer (%s) and %d had a response whose body nobody closed (%s). A request "+
		"whose read is over must not keep a replica busy: cancel every attempt that did not win, and close "+
		"every response that is not returned.", step, slack, s.Count(), len(waiting), orNone(waiting), len(open), orNone(open))
}

func orNone(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	return strings.Join(items, "; ")
}

// contexts says, attempt by attempt, whether its request's context was
// done: "menu-1 cancelled, menu-2 still live".
func contexts(attempts []labtest.Attempt) string {
	var parts []string
	for _, a := range attempts {
		state := "still live"
		if a.Ctx.Err() != nil {
			state = "cancelled"
		}
		parts = append(parts, a.Host+" "+state)
	}
	return orNone(parts)
}

// live returns the attempts whose request context is not done.
func live(attempts []labtest.Attempt) []labtest.Attempt {
	var out []labtest.Attempt
	for _, a := range attempts {
		if a.Ctx.Err() == nil {
			out = append(out, a)
		}
	}
	return out
}

// inFlight counts the menu reads each replica is still handling.
func inFlight(sys *system.System) (total int64, by string) {
	var parts []string
	for _, r := range replicas {
		n := sys.Metrics.Route(r, menuRoute).InFlight.Load()
		total += n
		parts = append(parts, fmt.Sprintf("%s %d", r, n))
	}
	return total, strings.Join(parts, ", ")
}

// get sends a GET for path to host through hc with ctx, reads the whole
// body and closes it; it returns the status (0 without a response).
func get(ctx context.Context, hc *http.Client, host, path string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, memnet.ServiceURL(host)+path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	return resp.StatusCode, err
}

// menuPath is the path of the sample restaurant's menu.
const menuPath = "/restaurants/" + system.SampleRestaurant + "/menu"

// menuAt returns a menu client whose calls all go first to replica.
func menuAt(hc *http.Client, replica string) *menu.Client {
	return menu.NewClient(hc, memnet.ServiceURL(replica))
}

// received counts the requests route received on every replica.
func received(sys *system.System, route string) (total int64, by string) {
	var parts []string
	for _, r := range replicas {
		n := sys.Metrics.Route(r, route).Received.Load()
		total += n
		parts = append(parts, fmt.Sprintf("%s %d", r, n))
	}
	return total, strings.Join(parts, ", ")
}

// ms returns whole milliseconds from..to, in an order drawn from seed.
func ms(seed int64, from, to int) []time.Duration {
	var out []time.Duration
	for i := from; i <= to; i++ {
		out = append(out, time.Duration(i)*time.Millisecond)
	}
	slices.SortFunc(out, func(a, b time.Duration) int {
		da, db := fooddelivery.Draw(seed, fmt.Sprint(a), 0), fooddelivery.Draw(seed, fmt.Sprint(b), 0)
		switch {
		case da < db:
			return -1
		case da > db:
			return 1
		}
		return 0
	})
	return out
}

// down returns whole milliseconds from, from-1, ..., to.
func down(from, to int) []time.Duration {
	var out []time.Duration
	for i := from; i >= to; i-- {
		out = append(out, time.Duration(i)*time.Millisecond)
	}
	return out
}
