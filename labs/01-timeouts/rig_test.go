package timeouts_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/system"
	timeouts "github.com/gophereats/resilience/labs/01-timeouts"
)

// The rig (the system with your payment client, start) and the helpers the
// tests share.
// The step tests are in stepN_test.go, one file per README step; the
// experiment, the last step, is in step5_experiment_test.go (go test runs
// the files in name order, so it runs after the other steps).

const (
	budget = 2 * time.Second       // the order service's budget for one payment call
	slack  = 10 * time.Millisecond // what the tests forgive on top of a timeout (fake time is exact)
	hang   = 30 * time.Second      // a hanging payment answers 503 after this, so the starter ends too
)

var pizza = labtest.PizzaOrder()

// reachesMemnet checks, once and outside any synctest bubble, that the
// learner's client dials the system's network. A client that dials the real
// network (http.DefaultClient, a nil Transport) would try a real DNS lookup
// of "payment", which crashes a synctest bubble instead of failing a test.
var reachesMemnet = sync.OnceValue(func() error {
	n := memnet.New()
	defer n.Close()
	l, err := n.Listen("payment")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	go srv.Serve(l)
	defer srv.Close()
	client := timeouts.NewPaymentClient(n, budget)
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://payment/ping", nil)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
})

// start runs the whole system with the learner's payment client, built with
// the given timeout, and an order service that handles at most orderLimit
// requests at once. step is the README step of the calling test, which a
// failure names.
func start(t *testing.T, step int, timeout time.Duration, orderLimit int) *system.System {
	if err := reachesMemnet(); err != nil {
		t.Fatalf("step %d: the client from NewPaymentClient(network, %v) could not reach the payment service on the system's network: %v.\n"+
			"Build its transport on a memnet.Dialer for the network you are given (http.DefaultClient and a nil "+
			"Transport dial the real network, where no payment service exists).", step, budget, err)
	}
	return labtest.StartSystem(t, system.Config{
		Limits: map[string]int{"order": orderLimit},
		PaymentClient: func(n *memnet.Network) *http.Client {
			return timeouts.NewPaymentClient(n, timeout)
		},
	})
}

// latencies returns n made-up payment latencies: most between 40ms and
// 240ms, 4% between 400ms and 1.4s. They are a pure function of seed.
func latencies(seed int64, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		key := fmt.Sprint("sample-", i)
		ms := 40 + 200*fooddelivery.Draw(seed, key, 0)
		if fooddelivery.Draw(seed, key, 1) < 0.04 {
			ms = 400 + 1000*fooddelivery.Draw(seed, key, 2)
		}
		out[i] = time.Duration(ms * float64(time.Millisecond)).Round(time.Microsecond)
	}
	return out
}

// firstDifference returns the first index where a and b differ, or -1.
func firstDifference(a, b []time.Duration) int {
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}

// exceeding counts the samples strictly above (and at or above) d.
func exceeding(samples []time.Duration, d time.Duration) (above, atOrAbove int) {
	for _, s := range samples {
		if s > d {
			above++
		}
		if s >= d {
			atOrAbove++
		}
	}
	return above, atOrAbove
}
