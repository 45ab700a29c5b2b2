package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/payment"
	idempotency "github.com/gophereats/resilience/labs/08-idempotency"
)

func TestStep2LostResponseIsReplayed(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		store := idempotency.NewKeyStore()
		sys := startKeyed(t, store, nil)
		pay := payer(sys)
		req := fooddelivery.ChargeRequest{OrderID: "ord-lost", AmountCents: 2400, Card: "tok_visa"}
		const key = "test/charge/ord-lost"

		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{LoseResponse: true}))
		_, lostErr := pay.ChargeWithKey(context.Background(), req, key, 1)
		sys.Faults.Clear("payment", "POST /charges")
		require.Error(t, lostErr, "step 2: the response to the first charge was to be lost, yet it arrived")

		ch, err := pay.ChargeWithKey(context.Background(), req, key, 2)
		charges := sys.Ledger.ChargesFor(req.OrderID)
		received := labtest.Charges(sys)
		if err != nil || charges != 1 {
			t.Fatalf("step 2: payment charged the card and the response was lost; the retry with the same key got "+
				"%s, and payment has now executed %s for the order (%s received). "+
				"The first charge must be stored under its key in Finish, and Begin must hand it back to the retry: "+
				"one charge, and the retry gets its answer.", answer(err), count(charges, "charge", "charges"),
				count(int(received), "request", "requests"))
		}
		first := sys.Ledger.Charges()[0]
		require.Equal(t, first.ID, ch.ID, "step 2: the retry must receive the charge that was executed (a replay), not a new one")
	})
}

func TestStep2OrdersChargedOnceDespiteLostResponses(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		const orders = 20
		keys := &keyRecorder{KeyStore: idempotency.NewKeyStore()}
		sys := startKeyed(t, keys, nil)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{LoseResponse: true, Probability: 0.3}))
		failed := placeOrders(sys, "step2", orders)

		lost := sys.Faults.Applied("payment", "POST /charges")
		double, uncharged, example, why := 0, 0, "", ""
		for _, o := range sys.Store.Orders() {
			switch n := sys.Ledger.ChargesFor(o.ID); {
			case n > 1:
				double++
				if example == "" {
					distinct, requests := keys.spy.distinct(o.ID)
					example = fmt.Sprintf("%s was charged %d times; its %d requests to payment carried %s",
						o.ID, n, requests, count(distinct, "key", "different keys"))
					why = " One key for every attempt is step 1; with it, Finish must store the outcome and Begin replay it."
					if distinct > 1 {
						why = " Keys that differ between the attempts of one order are a step 1 bug: ChargeKey must depend on the order only."
					}
				}
			case n == 0 && o.Status == fooddelivery.OrderPlaced:
				uncharged++
			}
		}
		if double > 0 || uncharged > 0 {
			t.Fatalf("step 2: payment lost %d responses after charging, and the order service retried; "+
				"%d of %d orders were charged more than once (%s) and %s never charged. "+
				"Every order must be charged exactly once.%s", lost, double, orders, example,
				count(uncharged, "placed order was", "placed orders were"), why)
		}
		require.NotZero(t, lost, "step 2: no response was lost; the scenario needs lost responses")
		require.LessOrEqual(t, failed, 1, "step 2: %d of %d orders failed; with 4 attempts and 30%% lost responses almost all succeed", failed, orders)
	})
}

func TestStep2DeclineIsReplayedNotRetried(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		proc := &payment.Processor{}
		sys := startKeyed(t, idempotency.NewKeyStore(), proc)
		req := fooddelivery.ChargeRequest{OrderID: "ord-declined", AmountCents: 2400, Card: payment.DeclinedCard}
		const key = "test/charge/ord-declined"

		_, first := payer(sys).ChargeWithKey(context.Background(), req, key, 1)
		require.Equal(t, http.StatusPaymentRequired, status(first), "step 2: the card is declined: payment answers 402 (got %v)", first)
		_, again := payer(sys).ChargeWithKey(context.Background(), req, key, 2)
		if calls := proc.Calls(); calls != 1 || status(again) != http.StatusPaymentRequired {
			t.Fatalf("step 2: a declined charge (402) was sent again with the same key: the card processor was asked %d times "+
				"and the repeat got %s. A decline is a final outcome: store it and replay it, success or error "+
				"(the IETF draft; card networks also limit and charge for re-attempts of declined cards).", calls, answer(again))
		}
	})
}

func TestStep2ServerErrorIsNotReplayedForever(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		proc := &payment.Processor{}
		sys := startKeyed(t, idempotency.NewKeyStore(), proc)
		req := fooddelivery.ChargeRequest{OrderID: "ord-blip", AmountCents: 2400, Card: "tok_visa"}
		const key = "test/charge/ord-blip"

		proc.FailNext(1)
		_, first := payer(sys).ChargeWithKey(context.Background(), req, key, 1)
		require.Equal(t, http.StatusServiceUnavailable, status(first), "step 2: the processor is down for one call: 503 (got %v)", first)
		time.Sleep(time.Second)
		_, err := payer(sys).ChargeWithKey(context.Background(), req, key, 2)
		if charges := sys.Ledger.ChargesFor(req.OrderID); err != nil || charges != 1 {
			why := fmt.Sprintf("A stored 5xx replayed for %v means this order can never be paid.", idempotency.KeyTTL)
			if status(err) == http.StatusConflict {
				why = "409 means the key is still reserved, as if the failed charge were running: Finish must delete the key on a 5xx, not leave it in flight."
			}
			t.Fatalf("step 2: the card processor failed once (503, nothing charged) and was healthy again a second later; "+
				"the retry with the same key got %s and %s executed. %s The reference keeps no 5xx: payment answers 5xx only when nothing "+
				"was charged, so Finish releases the key (see the README for Stripe's different choice).",
				answer(err), count(int(charges), "charge was", "charges were"), why)
		}
	})
}

func TestStep2ReplayIsACopy(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		store := idempotency.NewKeyStore()
		const key = "test/charge/ord-copy"
		req := fooddelivery.ChargeRequest{OrderID: "ord-copy", AmountCents: 2400, Card: "tok_visa"}
		const want = `{"id":"ch_1","order_id":"ord-copy","amount_cents":2400}`
		if o, err := store.Begin(key, req); o != nil || err != nil {
			t.Fatalf("step 2: Begin with the fresh key %q returned %s; nil, nil lets the charge run", key, begun(o, err))
		}
		// The caller's buffer: it may be reused once Finish returns.
		body := []byte(want)
		store.Finish(key, payment.Outcome{Status: http.StatusCreated, Body: body})
		copy(body, "XXXXXXXX")

		replay := func(after string) {
			o, err := store.Begin(key, req)
			switch {
			case o == nil:
				got := "nil, nil (run the charge)"
				if err != nil {
					got = "the error " + err.Error()
				}
				t.Fatalf("step 2: Finish stored a 201 for key %q, and the next Begin with the same key and request "+
					"returned %s instead of the stored outcome: the payment service would charge again.", key, got)
			case len(o.Body) == 0:
				t.Fatalf("step 2: Finish stored a 201 with a %d-byte body for key %q, and the next Begin replayed status %d "+
					"with an empty body: the body was not stored, so the retry gets no charge. Keep a copy of o.Body in Finish.",
					len(want), key, o.Status)
			case string(o.Body) != want:
				t.Fatalf("step 2: %s, the next Begin for key %q replayed the body `%s` instead of `%s`: "+
					"the store shares its bytes with its callers. Keep a copy in Finish and hand out a copy in Begin.",
					after, key, o.Body, want)
			}
			copy(o.Body, "YYYYYYYY")
		}
		replay("after the caller of Finish reused its buffer")
		replay("after the caller of Begin wrote over the body it got")
		replay("after the caller of Begin wrote over the body it got")
	})
}

func TestStep2EveryServerErrorReleasesTheKey(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		store := idempotency.NewKeyStore()
		req := fooddelivery.ChargeRequest{OrderID: "ord-5xx", AmountCents: 2400, Card: "tok_visa"}
		// 500 is what the payment service records when its handler panics;
		// 502, 503 and 504 when the card processor failed.
		for _, code := range []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout} {
			key := fmt.Sprint("test/charge/ord-5xx-", code)
			if o, err := store.Begin(key, req); o != nil || err != nil {
				t.Fatalf("step 2: Begin with the fresh key %q returned %s; nil, nil lets the charge run", key, begun(o, err))
			}
			store.Finish(key, payment.Outcome{Status: code, Body: []byte(`{"error":"unavailable"}`)})
			if o, err := store.Begin(key, req); o != nil || err != nil {
				t.Fatalf("step 2: Finish got a %d for key %q (payment answers 5xx only when nothing was charged: 500 after "+
					"a handler panic, 502, 503 or 504 when the processor failed), and the retry's Begin returned %s instead of "+
					"nil, nil. Every 5xx (status 500 and above) must release the key, so the retry charges.", code, key, begun(o, err))
			}
		}
	})
}

// TestStep2StoredOutcomeIsFinal sends a key's Finish twice: the answer the
// charge produced first is the one its client may have seen, so a late
// second Finish must not replace it (nor, with a 5xx, release the key and
// let a retry charge again). A Finish for a key no Begin reserved stores
// nothing either.
func TestStep2StoredOutcomeIsFinal(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		store := idempotency.NewKeyStore()
		req := fooddelivery.ChargeRequest{OrderID: "ord-final", AmountCents: 2400, Card: "tok_visa"}
		const firstBody = `{"id":"ch_1","order_id":"ord-final","amount_cents":2400}`
		late := []struct {
			what   string
			status int
			body   string
		}{
			{"a decline", http.StatusPaymentRequired, `{"code":"card_declined"}`},
			{"another success", http.StatusCreated, `{"id":"ch_2","order_id":"ord-final","amount_cents":2400}`},
			{"a server error", http.StatusServiceUnavailable, `{"error":"unavailable"}`},
		}
		for _, l := range late {
			key := fmt.Sprint("test/charge/ord-final-", l.status, "-", len(l.body))
			if o, err := store.Begin(key, req); o != nil || err != nil {
				t.Fatalf("step 2: Begin with the fresh key %q returned %s; nil, nil lets the charge run", key, begun(o, err))
			}
			store.Finish(key, payment.Outcome{Status: http.StatusCreated, Body: []byte(firstBody)})
			store.Finish(key, payment.Outcome{Status: l.status, Body: []byte(l.body)})
			o, err := store.Begin(key, req)
			if err != nil || o == nil || o.Status != http.StatusCreated || string(o.Body) != firstBody {
				got := begun(o, err)
				if o != nil {
					got += fmt.Sprintf(" with the body `%s`", o.Body)
				}
				t.Fatalf("step 2: Finish stored a %d for key %q, then a late second Finish for the same key came with %s "+
					"(%d); the retry's Begin returned %s, where the first outcome was %d `%s`. The first outcome is "+
					"what the charge did and what its client may have seen: once stored it is final, and Finish for a "+
					"key that already has an outcome does nothing.", http.StatusCreated, key, l.what, l.status, got,
					http.StatusCreated, firstBody)
			}
		}
		const never = "test/charge/ord-never-begun"
		store.Finish(never, payment.Outcome{Status: http.StatusCreated, Body: []byte(firstBody)})
		if o, err := store.Begin(never, req); o != nil || err != nil {
			t.Fatalf("step 2: Finish came with a %d for key %q, which no Begin had reserved; then the first Begin with "+
				"that key returned %s instead of nil, nil. Finish stores an outcome only for a key in flight: a key "+
				"nobody reserved ran no charge, so there is nothing to replay.", http.StatusCreated, never, begun(o, err))
		}
	})
}
