package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/payment"
	idempotency "github.com/gophereats/resilience/labs/08-idempotency"
)

func TestStep1OneKeyPerOrderAcrossRetries(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		const orders = 20
		spy := &keySpy{}
		sys := startKeyed(t, spy, nil)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{LoseResponse: true, Probability: 0.5}))
		placeOrders(sys, "step1", orders)

		owner := map[string]string{} // key -> the order that sent it
		retried := 0
		for _, o := range sys.Store.Orders() {
			keys := spy.keys[o.ID]
			if len(keys) > 1 {
				retried++
			}
			for i, k := range keys {
				if k == "" {
					t.Fatalf("step 1: attempt %d of %d to charge order %s reached payment without an %s header. "+
						"Without a key the payment service cannot tell a retry from a new charge. ChargeKey must return a key.",
						i+1, len(keys), o.ID, fooddelivery.HeaderIdempotencyKey)
				}
				if k != keys[0] {
					t.Fatalf("step 1: order %s reached payment %d times (its responses were lost and it was retried) "+
						"with different keys: %q on the first request, %q on request %d. "+
						"A retry must reuse the key of the first attempt; build it from what stays the same for the order, "+
						"never from the attempt number, the time or a random value.", o.ID, len(keys), keys[0], k, i+1)
				}
			}
			if len(keys) > 0 {
				if other, ok := owner[keys[0]]; ok {
					t.Fatalf("step 1: orders %s and %s (same customer, same pizza, same card) were charged with the same key %q: "+
						"the payment service would replay the first order's charge to the second, which is never paid. "+
						"The key must name the order, not its contents.", other, o.ID, keys[0])
				}
				owner[keys[0]] = o.ID
			}
		}
		require.NotZero(t, retried, "step 1: no charge was retried (%d lost responses); the scenario needs retries",
			sys.Faults.Applied("payment", "POST /charges"))
	})
}

func TestStep1KeyIgnoresAttemptAndClock(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		req := fooddelivery.ChargeRequest{OrderID: "ord-42", AmountCents: 2400, Card: "tok_visa"}
		t0 := time.Date(2025, 3, 1, 23, 59, 59, 0, time.UTC) // a second before midnight
		first := idempotency.ChargeKey(payment.ChargeAttempt{Request: req, Attempt: 1, At: t0})
		if first == "" {
			t.Fatalf("step 1: ChargeKey returned an empty key for order %s: the order service sends no %s header, "+
				"and payment cannot tell a retry from a new charge.", req.OrderID, fooddelivery.HeaderIdempotencyKey)
		}
		for _, d := range []time.Duration{time.Second, time.Minute, time.Hour, 25 * time.Hour} {
			for a := 2; a <= 4; a++ {
				if k := idempotency.ChargeKey(payment.ChargeAttempt{Request: req, Attempt: a, At: t0.Add(d)}); k != first {
					t.Fatalf("step 1: attempt 1 to charge order %s, sent at %s, got the key %q; attempt %d, sent %v later (%s), "+
						"got %q. A retry may cross a minute, an hour or midnight and must still carry the first key: "+
						"ChargeKey may use the order's identity only, never a.At or a.Attempt.",
						req.OrderID, t0.Format("15:04:05"), first, a, d, t0.Add(d).Format("Jan 2 15:04:05"), k)
				}
			}
		}
	})
}
