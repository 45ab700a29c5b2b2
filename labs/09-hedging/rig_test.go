package hedging_test

import (
	"fmt"
	"net/http"
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
	leak       = "the losing hedge request was never cancelled, or its response body never closed"
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
	return s, &http.Client{Transport: h}
}

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
