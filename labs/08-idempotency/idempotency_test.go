package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync"
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
		sys := startKeyed(t, idempotency.NewKeyStore(), nil)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{LoseResponse: true, Probability: 0.3}))
		failed := placeOrders(sys, "step2", orders)

		lost := sys.Faults.Applied("payment", "POST /charges")
		double, uncharged, example := 0, 0, ""
		for _, o := range sys.Store.Orders() {
			switch n := sys.Ledger.ChargesFor(o.ID); {
			case n > 1:
				double++
				if example == "" {
					example = fmt.Sprintf("%s was charged %d times", o.ID, n)
				}
			case n == 0 && o.Status == fooddelivery.OrderPlaced:
				uncharged++
			}
		}
		if double > 0 || uncharged > 0 {
			t.Fatalf("step 2: payment lost %d responses after charging, and the order service retried with the same key; "+
				"%d of %d orders were charged more than once (%s) and %s never charged. "+
				"Every order must be charged exactly once.", lost, double, orders, example,
				count(uncharged, "placed order was", "placed orders were"))
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

func TestStep3SameKeyDifferentPayloadIsRejected(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		sys := startKeyed(t, idempotency.NewKeyStore(), nil)
		const key = "test/charge/ord-422"
		req := fooddelivery.ChargeRequest{OrderID: "ord-422", AmountCents: 2400, Card: "tok_visa"}
		_, err := payer(sys).ChargeWithKey(context.Background(), req, key, 1)
		require.NoError(t, err, "step 3: the first charge with a fresh key must succeed")

		bigger := req
		bigger.AmountCents = 9900
		_, err = payer(sys).ChargeWithKey(context.Background(), bigger, key, 1)
		if status(err) != http.StatusUnprocessableEntity {
			t.Fatalf("step 3: key %q was used for a charge of %d cents, then sent with a charge of %d cents; payment answered %s "+
				"and has %s for the order. The same key with a different request is a client bug: "+
				"Begin must return payment.ErrKeyMismatch (422) and charge nothing.",
				key, req.AmountCents, bigger.AmountCents, answer(err), count(sys.Ledger.ChargesFor(req.OrderID), "charge", "charges"))
		}
		require.Equal(t, 1, sys.Ledger.ChargesFor(req.OrderID), "step 3: only the first request may charge")
	})
}

func TestStep3KeyReusedForAnyOtherRequestIsRejected(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		store := idempotency.NewKeyStore()
		req := fooddelivery.ChargeRequest{OrderID: "ord-reuse", AmountCents: 2400, Card: "tok_visa"}
		others := []struct {
			what string
			req  fooddelivery.ChargeRequest
		}{
			{"another order", fooddelivery.ChargeRequest{OrderID: "ord-other", AmountCents: 2400, Card: "tok_visa"}},
			{"another card", fooddelivery.ChargeRequest{OrderID: "ord-reuse", AmountCents: 2400, Card: "tok_mastercard"}},
			{"another amount", fooddelivery.ChargeRequest{OrderID: "ord-reuse", AmountCents: 9900, Card: "tok_visa"}},
		}
		for _, code := range []int{http.StatusCreated, http.StatusPaymentRequired} {
			key := fmt.Sprint("test/charge/ord-reuse-", code)
			if o, err := store.Begin(key, req); o != nil || err != nil {
				t.Fatalf("step 3: Begin with the fresh key %q returned %s; nil, nil lets the charge run", key, begun(o, err))
			}
			store.Finish(key, payment.Outcome{Status: code, Body: []byte(`{}`)})
			for _, other := range others {
				if o, err := store.Begin(key, other.req); !errors.Is(err, payment.ErrKeyMismatch) {
					t.Fatalf("step 3: key %q charged order %s, %d cents on %s and got a %d; then Begin got the same key "+
						"for %s (order %s, %d cents on %s) and returned %s. Any difference in the request, "+
						"whatever the first outcome, is a mismatch: compare the whole request (!=) before replaying, "+
						"and return payment.ErrKeyMismatch (422).", key, req.OrderID, req.AmountCents, req.Card, code,
						other.what, other.req.OrderID, other.req.AmountCents, other.req.Card, begun(o, err))
				}
			}
		}
	})
}

func TestStep3MissingKeyIsRejected(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		sys := startKeyed(t, idempotency.NewKeyStore(), nil)
		req := fooddelivery.ChargeRequest{OrderID: "ord-nokey", AmountCents: 2400, Card: "tok_visa"}
		_, err := payer(sys).ChargeWithKey(context.Background(), req, "", 1)
		if status(err) != http.StatusBadRequest {
			t.Fatalf("step 3: a charge without an %s header: payment answered %s and %s executed. "+
				"A request that can never be retried safely is refused: Begin must return payment.ErrKeyMissing (400).",
				fooddelivery.HeaderIdempotencyKey, answer(err), count(sys.Ledger.ChargesFor(req.OrderID), "charge was", "charges were"))
		}
		require.Zero(t, sys.Ledger.Total(), "step 3: a refused request charges nothing")
	})
}

func TestStep3ConcurrentDuplicatesChargeOnce(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		const copies, latency = 5, 2 * time.Second
		proc := &payment.Processor{Latency: latency}
		sys := startKeyed(t, idempotency.NewKeyStore(), proc)
		req := fooddelivery.ChargeRequest{OrderID: "ord-dup", AmountCents: 2400, Card: "tok_visa"}
		const key = "test/charge/ord-dup"

		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, inUse := 0, 0
		for range copies {
			wg.Go(func() {
				_, err := payer(sys).ChargeWithKey(context.Background(), req, key, 1)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case payment.IsKeyInUse(err):
					inUse++
				}
			})
		}
		wg.Wait()
		if charges := sys.Ledger.ChargesFor(req.OrderID); charges != 1 || ok != 1 || inUse != copies-1 {
			t.Fatalf("step 3: %d requests with the same key arrived together, and each charge takes %v at the processor "+
				"(between Begin and Finish); payment executed %s, %d requests succeeded and %d got 409. "+
				"Begin must check and reserve the key in one critical section: exactly one runs, the others get "+
				"payment.ErrKeyInFlight (409) until it finishes.", copies, latency, count(charges, "charge", "charges"), ok, inUse)
		}
		ch, err := payer(sys).ChargeWithKey(context.Background(), req, key, 2)
		require.NoError(t, err, "step 3: once the first request finished, a retry with the same key gets its stored answer")
		require.Equal(t, sys.Ledger.Charges()[0].ID, ch.ID, "step 3: the retry after completion is a replay of the one charge")
	})
}

func TestStep4KeysLiveForThePublishedTime(t *testing.T) {
	if idempotency.KeyTTL < 24*time.Hour || idempotency.KeyTTL > 7*24*time.Hour {
		t.Fatalf("step 4: KeyTTL is %v; publish a finite lifetime of at least 24 hours (Stripe's figure), at most 7 days", idempotency.KeyTTL)
	}
	labtest.Run(t, labtest.Options{Step: 4, Watchdog: idempotency.KeyTTL + time.Hour}, func(t *testing.T) {
		sys := startKeyed(t, idempotency.NewKeyStore(), nil)
		const key = "test/charge/ttl"
		first := fooddelivery.ChargeRequest{OrderID: "ord-ttl-1", AmountCents: 2400, Card: "tok_visa"}
		second := fooddelivery.ChargeRequest{OrderID: "ord-ttl-2", AmountCents: 1200, Card: "tok_visa"}
		if _, err := payer(sys).ChargeWithKey(context.Background(), first, key, 1); err != nil {
			t.Fatalf("step 4: the first charge with a fresh key got %s; it must succeed", answer(err))
		}

		time.Sleep(idempotency.KeyTTL - time.Minute)
		_, err := payer(sys).ChargeWithKey(context.Background(), first, key, 2)
		if charges := sys.Ledger.ChargesFor(first.OrderID); err != nil || charges != 1 {
			t.Fatalf("step 4: key %q completed its charge %v ago, a minute before its published lifetime KeyTTL = %v runs out; "+
				"a retry of the same request got %s and payment has now executed %s for the order. "+
				"Within KeyTTL (counted from Finish) a retry must be replayed and charge nothing.",
				key, idempotency.KeyTTL-time.Minute, idempotency.KeyTTL, answer(err), count(charges, "charge", "charges"))
		}

		time.Sleep(2 * time.Minute)
		_, err = payer(sys).ChargeWithKey(context.Background(), second, key, 1)
		switch charges := sys.Ledger.ChargesFor(second.OrderID); {
		case err != nil:
			moved := ""
			if status(err) == http.StatusUnprocessableEntity {
				moved = fmt.Sprintf(" 422 means the key was still held: did the replay %v ago move its expiry? KeyTTL counts from Finish only.", 2*time.Minute)
			}
			t.Fatalf("step 4: key %q completed its charge %v ago, a minute past its published lifetime KeyTTL = %v; "+
				"a new charge with it got %s. An expired key is forgotten and free to be used again: "+
				"Begin must drop keys older than KeyTTL before it looks the key up.%s",
				key, idempotency.KeyTTL+time.Minute, idempotency.KeyTTL, answer(err), moved)
		case charges != 1:
			t.Fatalf("step 4: key %q completed its charge %v ago, a minute past its published lifetime KeyTTL = %v; "+
				"a new charge (order %s, %d cents) with it got the stored outcome of the old one replayed "+
				"(order %s) and %s executed for the new order. An expired key is forgotten: "+
				"the new charge must run (and a key used for a different request, if it had not expired, gets 422).",
				key, idempotency.KeyTTL+time.Minute, idempotency.KeyTTL, second.OrderID, second.AmountCents,
				first.OrderID, count(charges, "charge was", "charges were"))
		}
	})
}

func TestStep4ExpiryCountsFromFinish(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4, Watchdog: idempotency.KeyTTL + 2*time.Hour}, func(t *testing.T) {
		const slow = time.Hour // a charge stuck at the processor between Begin and Finish
		store := idempotency.NewKeyStore()
		const key = "test/charge/ord-slow"
		req := fooddelivery.ChargeRequest{OrderID: "ord-slow", AmountCents: 2400, Card: "tok_visa"}
		if o, err := store.Begin(key, req); o != nil || err != nil {
			t.Fatalf("step 4: Begin with the fresh key %q returned %s; nil, nil lets the charge run", key, begun(o, err))
		}
		fast := fooddelivery.ChargeRequest{OrderID: "ord-fast", AmountCents: 1200, Card: "tok_visa"}
		store.Begin("test/charge/ord-fast", fast)
		store.Finish("test/charge/ord-fast", payment.Outcome{Status: http.StatusCreated, Body: []byte(`{"id":"ch_0"}`)})
		if o, err := store.Begin("test/charge/ord-fast", fast); o == nil || err != nil {
			t.Fatalf("step 4: Finish stored a 201 for key test/charge/ord-fast and the next Begin returned %s instead of "+
				"the stored outcome: expiry needs a store that replays, finish step 2 first.", begun(o, err))
		}
		time.Sleep(slow)
		store.Finish(key, payment.Outcome{Status: http.StatusCreated, Body: []byte(`{"id":"ch_1"}`)})
		time.Sleep(idempotency.KeyTTL - time.Minute)
		if o, err := store.Begin(key, req); o == nil || err != nil {
			t.Fatalf("step 4: a charge took %v between Begin and Finish; %v after its Finish, within KeyTTL = %v, "+
				"the retry's Begin returned %s instead of the stored outcome, so the card would be charged again. "+
				"KeyTTL counts from Finish, when the outcome was stored, not from Begin.",
				slow, idempotency.KeyTTL-time.Minute, idempotency.KeyTTL, begun(o, err))
		}
	})
}

func TestStep4ExpiredKeysAreForgotten(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4, Watchdog: idempotency.KeyTTL + time.Hour}, func(t *testing.T) {
		const keys, size = 500, 32 << 10 // 16 MB of stored response bodies
		store := idempotency.NewKeyStore()
		body := bytes.Repeat([]byte("x"), size)
		for i := range keys {
			key := fmt.Sprint("test/charge/mem-", i)
			if o, err := store.Begin(key, fooddelivery.ChargeRequest{OrderID: key, AmountCents: 100, Card: "tok_visa"}); o != nil || err != nil {
				t.Fatalf("step 4: Begin with the fresh key %q returned %s; nil, nil lets the charge run", key, begun(o, err))
			}
			store.Finish(key, payment.Outcome{Status: http.StatusCreated, Body: body})
		}
		if n := store.Len(); n != keys {
			t.Fatalf("step 4: %d keys completed just now and Len reports %d: Len must report how many keys "+
				"the store holds (completed ones stay until KeyTTL = %v after their Finish).", keys, n, idempotency.KeyTTL)
		}
		before := heapAlloc()

		time.Sleep(idempotency.KeyTTL + time.Minute)
		if o, err := store.Begin("test/charge/mem-new", fooddelivery.ChargeRequest{OrderID: "mem-new", AmountCents: 100, Card: "tok_visa"}); o != nil || err != nil {
			t.Fatalf("step 4: Begin with the fresh key test/charge/mem-new returned %s; nil, nil lets the charge run", begun(o, err))
		}
		// Measured before Len is called: production never calls Len, so
		// Begin must do the forgetting.
		if freed, stored := int64(before)-int64(heapAlloc()), int64(keys*size); freed < stored/2 {
			t.Fatalf("step 4: %d keys completed %v ago, past KeyTTL = %v, with %d KB of response bodies; after a Begin "+
				"only %d KB of memory were freed: the expired keys are still in the store, only hidden. A store that never "+
				"deletes grows by one entry per charge, forever (at 10 charges a second, 864,000 entries a day). "+
				"Delete expired keys from the map in Begin, not only when they are looked up or when Len is called.",
				keys, idempotency.KeyTTL+time.Minute, idempotency.KeyTTL, stored>>10, max(freed, 0)>>10)
		}
		runtime.KeepAlive(store)
		switch n := store.Len(); {
		case n > 1:
			t.Fatalf("step 4: %d keys completed %v ago, past KeyTTL = %v, and Len reports %d keys. "+
				"A store that never forgets grows by one entry per charge, forever (at 10 charges a second, "+
				"864,000 entries a day). Drop expired keys as you go, for example from Begin.",
				keys, idempotency.KeyTTL+time.Minute, idempotency.KeyTTL, n)
		case n == 0:
			t.Fatalf("step 4: the key test/charge/mem-new is reserved (Begin let its charge run, Finish not called yet) " +
				"and Len reports 0. Len counts every key the store holds: reserved ones too.")
		}
	})
}
