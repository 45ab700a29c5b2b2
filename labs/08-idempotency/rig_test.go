package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/dispatch"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/payment"
	"github.com/gophereats/resilience/fooddelivery/retry"
	"github.com/gophereats/resilience/fooddelivery/system"
	idempotency "github.com/gophereats/resilience/labs/08-idempotency"
)

// The rig (the system with your ChargeKey and a key store, startKeyed; the
// dispatch queue and fleet, consume) and the helpers the tests share.
// The step tests are in stepN_test.go, one file per README step; the
// experiment, the last step, is in step6_experiment_test.go (go test runs
// the files in name order, so it runs after the other steps).

var pizza = labtest.PizzaOrder()

// chargeRetries is the order service's retry policy for charges in this
// lab: 4 attempts, 100ms base backoff with full jitter (fooddelivery/retry).
func chargeRetries() *retry.Policy { return &retry.Policy{Attempts: 4, Seed: 8} }

// startKeyed runs the system with your ChargeKey on the order side, the
// given key store in the payment service and retries on the charge.
func startKeyed(t *testing.T, keys payment.KeyStore, proc *payment.Processor) *system.System {
	return labtest.StartSystem(t, system.Config{
		Seed:             8,
		PaymentKeys:      keys,
		PaymentProcessor: proc,
		ChargeKey:        idempotency.ChargeKey,
		ChargeRetry:      chargeRetries(),
	})
}

// payer calls the payment service directly, as the order service does.
func payer(sys *system.System) *payment.Client {
	return payment.NewClient(sys.HTTPClient(), memnet.ServiceURL("payment"))
}

// placeOrders places n pizza orders for alice one after the other, each
// under its own request id (so fault draws are fixed per order), and
// returns how many failed.
func placeOrders(sys *system.System, prefix string, n int) (failed int) {
	for i := range n {
		ctx := fooddelivery.WithRequestID(context.Background(), fmt.Sprintf("%s-%d", prefix, i+1))
		if _, err := sys.Orders().PlaceOrder(ctx, "alice", pizza); err != nil {
			failed++
		}
	}
	return failed
}

// status returns the HTTP status a payment call failed with (0 for none).
func status(err error) int {
	var ce *fooddelivery.CallError
	if errors.As(err, &ce) {
		return ce.Status
	}
	return 0
}

// answer describes what a payment call got: a success or its error.
func answer(err error) string {
	if err == nil {
		return "a success (201 Created)"
	}
	return "an error (" + err.Error() + ")"
}

// begun describes what a KeyStore's Begin returned.
func begun(o *payment.Outcome, err error) string {
	switch {
	case err != nil:
		return "the error " + err.Error()
	case o != nil:
		return fmt.Sprintf("a stored outcome to replay (status %d)", o.Status)
	}
	return "nil, nil"
}

// count returns "1 charge", "2 charges" and so on.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// keySpy is a payment.KeyStore that only records which keys reached the
// payment service for which order, and lets every request run.
type keySpy struct {
	mu   sync.Mutex
	keys map[string][]string // order id -> key of each request, in arrival order
}

func (s *keySpy) Begin(key string, req fooddelivery.ChargeRequest) (*payment.Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = map[string][]string{}
	}
	s.keys[req.OrderID] = append(s.keys[req.OrderID], key)
	return nil, nil
}

func (s *keySpy) Finish(string, payment.Outcome) {}

// distinct returns how many different keys orderID's requests carried, and
// how many requests there were.
func (s *keySpy) distinct(orderID string) (keys, requests int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for _, k := range s.keys[orderID] {
		seen[k] = true
	}
	return len(seen), len(s.keys[orderID])
}

// keyRecorder is the key store under test with a keySpy in front: it
// records the key of every request, then passes it on.
type keyRecorder struct {
	payment.KeyStore
	spy keySpy
}

func (r *keyRecorder) Begin(key string, req fooddelivery.ChargeRequest) (*payment.Outcome, error) {
	r.spy.Begin(key, req)
	return r.KeyStore.Begin(key, req)
}

// heapAlloc returns the bytes of live heap objects after a full garbage
// collection.
func heapAlloc() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// publish puts n "order placed" messages (orders ord-1 ... ord-n) on q.
func publish(q *dispatch.Queue, n int) {
	for i := range n {
		q.Publish(fmt.Sprint("ord-", i+1), system.SampleRestaurant)
	}
}

// doubleDispatched returns how many of orders ord-1 ... ord-n had more than
// one courier sent, and a description of the first.
func doubleDispatched(f *dispatch.Fleet, n int) (count int, example string) {
	for i := range n {
		id := fmt.Sprint("ord-", i+1)
		if cs := f.Couriers(id); len(cs) > 1 {
			count++
			if example == "" {
				example = fmt.Sprintf("%s: %s drove to %s", id, strings.Join(cs, " and "), system.SampleRestaurant)
			}
		}
	}
	return count, example
}

// unserved returns how many of orders ord-1 ... ord-n got no courier.
func unserved(f *dispatch.Fleet, n int) int {
	count := 0
	for i := range n {
		if len(f.Couriers(fmt.Sprint("ord-", i+1))) == 0 {
			count++
		}
	}
	return count
}

func consume(t *testing.T, q *dispatch.Queue, workers int, fleet *dispatch.Fleet) {
	t.Helper()
	err := q.Consume(context.Background(), workers, func(ctx context.Context, m dispatch.Message) error {
		return idempotency.AssignCourier(ctx, fleet, m)
	})
	require.NoError(t, err, "step 5: consuming the queue")
}
