package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/payment"
	idempotency "github.com/gophereats/resilience/labs/08-idempotency"
)

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
		// 0: the first request is still in flight (Begin ran, Finish has not).
		for _, code := range []int{0, http.StatusCreated, http.StatusPaymentRequired} {
			key := fmt.Sprint("test/charge/ord-reuse-", code)
			if o, err := store.Begin(key, req); o != nil || err != nil {
				t.Fatalf("step 3: Begin with the fresh key %q returned %s; nil, nil lets the charge run", key, begun(o, err))
			}
			state := "is still charging it (Begin ran 0s ago, Finish has not)"
			if code != 0 {
				store.Finish(key, payment.Outcome{Status: code, Body: []byte(`{}`)})
				state = fmt.Sprintf("got a %d", code)
			}
			for _, other := range others {
				if o, err := store.Begin(key, other.req); !errors.Is(err, payment.ErrKeyMismatch) {
					t.Fatalf("step 3: key %q charged order %s, %d cents on %s and %s; then Begin got the same key "+
						"for %s (order %s, %d cents on %s) and returned %s. Any difference in the request, "+
						"whatever the first outcome and even while the first request is in flight, is a mismatch: "+
						"compare the whole request (!=) before anything else, and return payment.ErrKeyMismatch (422), "+
						"not 409: a retry can never cure a mismatch.", key, req.OrderID, req.AmountCents, req.Card, state,
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

// TestStep3SimultaneousBeginsReserveOnce calls Begin itself, from many
// goroutines at once, all on the same new key until one of them reserves
// it, then all on the next. Of the Begins of one key exactly one may get
// nil, nil (the reservation); the others must find it. A store that looks
// the key up under its lock, lets go, and takes the lock again to reserve
// leaves a gap between the two in which another Begin finds the key absent
// too. The gap lasts nanoseconds, and a goroutine waiting on a mutex is not
// durably blocked (synctest cannot line the Begins up), so the test repeats
// the race for many keys, with more processors than cores so that the
// operating system, too, interrupts Begins between the two.
func TestStep3SimultaneousBeginsReserveOnce(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		const keys, racers, perStore = 400000, 16, 10000
		req := fooddelivery.ChargeRequest{OrderID: "ord-race", AmountCents: 2400, Card: "tok_visa"}
		names := make([]string, keys)
		for i := range names {
			names[i] = fmt.Sprint("test/charge/ord-race-", i)
		}
		// Every racer works on the current key until one of them reserves
		// it and moves all of them on to the next, so each key is contended.
		// A new store every perStore keys keeps the memory small.
		reserved := make([]atomic.Int32, keys)
		stores := make([]*idempotency.KeyStore, keys/perStore)
		for i := range stores {
			stores[i] = idempotency.NewKeyStore()
		}
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
		var current atomic.Int64
		var wg sync.WaitGroup
		for range racers {
			wg.Go(func() {
				for {
					i := current.Load()
					if i >= keys {
						return
					}
					if o, err := stores[i/perStore].Begin(names[i], req); o == nil && err == nil {
						reserved[i].Add(1)
						current.CompareAndSwap(i, i+1)
					}
				}
			})
		}
		wg.Wait()
		doubled, example := 0, -1
		for i := range reserved {
			if reserved[i].Load() > 1 {
				doubled++
				if example < 0 {
					example = i
				}
			}
		}
		if doubled > 0 {
			t.Fatalf("step 3: %d goroutines called Begin for each of %d new keys at the same time; for %d of the keys "+
				"more than one Begin got nil, nil (key %q: %d of them, and each would charge the card). Exactly one may "+
				"reserve a key: look it up and reserve it, and the others get payment.ErrKeyInFlight. Either Begin answers nil, nil to a key that is "+
				"reserved and not finished (it must answer payment.ErrKeyInFlight), or it looks the key up and reserves it "+
				"in two critical sections, unlocking in between: do both in one.",
				racers, keys, doubled, names[example], reserved[example].Load())
		}
	})
}
