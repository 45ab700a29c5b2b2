package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/payment"
	idempotency "github.com/gophereats/resilience/labs/08-idempotency"
)

func TestStep4KeysLiveForThePublishedTime(t *testing.T) {
	if idempotency.KeyTTL < 24*time.Hour || idempotency.KeyTTL > 7*24*time.Hour {
		t.Fatalf("step 4: KeyTTL is %v; publish a finite lifetime of at least 24 hours (Stripe's figure), at most 7 days", idempotency.KeyTTL)
	}
	labtest.Run(t, labtest.Options{Step: 4, Watchdog: 2*idempotency.KeyTTL + time.Hour}, func(t *testing.T) {
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

		// The key now belongs to the second order's charge, with an expiry
		// of its own.
		third := fooddelivery.ChargeRequest{OrderID: "ord-ttl-3", AmountCents: 600, Card: "tok_visa"}
		time.Sleep(idempotency.KeyTTL + time.Minute)
		_, err = payer(sys).ChargeWithKey(context.Background(), third, key, 1)
		if charges := sys.Ledger.ChargesFor(third.OrderID); err != nil || charges != 1 {
			t.Fatalf("step 4: key %q expired, was used again by a new charge (order %s), and that charge completed %v ago, "+
				"past KeyTTL = %v; a third charge (order %s) with the key got %s and %s executed for it. A key used again "+
				"gets its own expiry, KeyTTL after its own Finish, even when the store had no other key left to expire.", key, second.OrderID, idempotency.KeyTTL+time.Minute, idempotency.KeyTTL, third.OrderID,
				answer(err), count(charges, "charge was", "charges were"))
		}
	})
}

func TestStep4ExpiryCountsFromFinish(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4, Watchdog: idempotency.KeyTTL + 2*time.Hour}, func(t *testing.T) {
		// The slowest charge there can be: its processor call ran until the
		// processor's deadline, between Begin and Finish.
		const slow = payment.ProcessorTimeout
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
		time.Sleep(idempotency.KeyTTL - time.Second)
		if o, err := store.Begin(key, req); o == nil || err != nil {
			t.Fatalf("step 4: a charge took %v (the processor's deadline) between Begin and Finish; %v after its Finish, within KeyTTL = %v, "+
				"the retry's Begin returned %s instead of the stored outcome, so the card would be charged again. "+
				"KeyTTL counts from Finish, when the outcome was stored, not from Begin.",
				slow, idempotency.KeyTTL-time.Second, idempotency.KeyTTL, begun(o, err))
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
				"only %d KB of memory were freed: the expired keys are still in the store, only hidden, or still reachable from "+
				"whatever records their expiry. A store that never lets go grows by one entry per charge, forever (at 10 "+
				"charges a second, 864,000 entries a day). Delete expired keys from the map in Begin, not only when they "+
				"are looked up or when Len is called, and drop them from your expiry records too.",
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

// TestStep4AbandonedReservationExpires reserves a key with Begin and never
// calls Finish, as when the payment instance crashed or hung mid-charge.
// The key stays in flight for longer than any charge may run (a call to
// the processor is cut at payment.ProcessorTimeout), so a retry cannot
// charge beside a late first attempt; then the lock times out, and by
// twice that deadline the key is free and no longer counted.
func TestStep4AbandonedReservationExpires(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		store := idempotency.NewKeyStore()
		const key = "test/charge/ord-hung"
		req := fooddelivery.ChargeRequest{OrderID: "ord-hung", AmountCents: 2400, Card: "tok_visa"}
		if o, err := store.Begin(key, req); o != nil || err != nil {
			t.Fatalf("step 4: Begin with the fresh key %q returned %s; nil, nil lets the charge run", key, begun(o, err))
		}
		start := time.Now()
		for _, at := range []time.Duration{time.Second, payment.ProcessorTimeout / 2, payment.ProcessorTimeout} {
			time.Sleep(at - time.Since(start))
			if o, err := store.Begin(key, req); !errors.Is(err, payment.ErrKeyInFlight) {
				t.Fatalf("step 4: key %q was reserved %v ago by a charge that has not finished, and a charge may run "+
					"until the processor's deadline payment.ProcessorTimeout = %v; a retry now got %s. Until that "+
					"deadline has passed the first attempt may still charge: answer payment.ErrKeyInFlight (409), "+
					"and give the reservation a lock timeout longer than payment.ProcessorTimeout.",
					key, at, payment.ProcessorTimeout, begun(o, err))
			}
			if n := store.Len(); n != 1 {
				t.Fatalf("step 4: key %q was reserved %v ago and is still in flight; Len reports %d keys, want 1: "+
					"a reserved key counts.", key, at, n)
			}
		}
		freeBy := 2 * payment.ProcessorTimeout
		time.Sleep(freeBy - time.Since(start))
		if n := store.Len(); n != 0 {
			t.Fatalf("step 4: key %q was reserved %v ago by a charge that never finished (Finish was never called; "+
				"the processor's deadline is %v); Len still reports %d keys. A reservation that never finishes must "+
				"not hold its key forever: give it a lock timeout longer than payment.ProcessorTimeout and at most "+
				"twice it, and drop it when it runs out.", key, freeBy, payment.ProcessorTimeout, n)
		}
		if o, err := store.Begin(key, req); o != nil || err != nil {
			t.Fatalf("step 4: key %q was reserved %v ago by a charge that never finished (the processor's deadline "+
				"is %v); a retry now got %s. Once the lock has timed out the key is free: nil, nil lets the retry "+
				"charge (the first attempt cannot still be running).", key, freeBy, payment.ProcessorTimeout, begun(o, err))
		}

		// The retry's instance hangs too: its reservation has a lock of its own.
		time.Sleep(freeBy)
		if n := store.Len(); n != 0 {
			t.Fatalf("step 4: key %q was reserved by a charge that never finished, freed %v later, reserved again by a "+
				"retry that never finished either; %v after the retry's Begin Len still reports %d keys, want 0. The "+
				"retry's reservation needs its own lock timeout, like the first: a store with nothing left to time out "+
				"must still time out the reservations that come after.", key, freeBy, freeBy, n)
		}
	})
}

// TestStep4RetryAfterAServerErrorHoldsItsOwnLock reserves a key, releases
// it with a 503 (nothing was charged), and reserves it again later for a
// retry: the first reservation's lock timeout must not free the retry's.
func TestStep4RetryAfterAServerErrorHoldsItsOwnLock(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		store := idempotency.NewKeyStore()
		const key = "test/charge/ord-blip"
		req := fooddelivery.ChargeRequest{OrderID: "ord-blip", AmountCents: 2400, Card: "tok_visa"}
		if o, err := store.Begin(key, req); o != nil || err != nil {
			t.Fatalf("step 4: Begin with the fresh key %q returned %s; nil, nil lets the charge run", key, begun(o, err))
		}
		store.Finish(key, payment.Outcome{Status: http.StatusServiceUnavailable, Body: []byte(`{"error":"unavailable"}`)})
		start := time.Now()
		retryAt := payment.ProcessorTimeout + 15*time.Second
		time.Sleep(retryAt)
		if o, err := store.Begin(key, req); o != nil || err != nil {
			t.Fatalf("step 4: key %q was released by a 503 (nothing charged); a retry %v later got %s: nil, nil lets "+
				"it charge (see step 2).", key, retryAt, begun(o, err))
		}
		// The retry's charge may run until the processor's deadline, past
		// every lock the first reservation can have had.
		checkAt := retryAt + payment.ProcessorTimeout
		time.Sleep(checkAt - time.Since(start))
		if o, err := store.Begin(key, req); !errors.Is(err, payment.ErrKeyInFlight) {
			t.Fatalf("step 4: key %q was reserved at 0s, released by a 503 and reserved again by a retry at %v, whose "+
				"charge may run until the processor's deadline (%v later); at %v another attempt got %s, want "+
				"payment.ErrKeyInFlight (409). The first reservation's lock timeout (at most %v) freed the retry's: when a "+
				"lock times out, drop the key only if the store still holds that same reservation, not a newer one.",
				key, retryAt, payment.ProcessorTimeout, checkAt, begun(o, err), 2*payment.ProcessorTimeout)
		}
		freeAt := retryAt + 2*payment.ProcessorTimeout
		time.Sleep(freeAt - time.Since(start))
		if o, err := store.Begin(key, req); o != nil || err != nil {
			t.Fatalf("step 4: key %q was reserved again by a retry at %v that never finished; at %v (twice the "+
				"processor's deadline later) another attempt got %s: the retry's own lock has timed out, so nil, nil.",
				key, retryAt, freeAt, begun(o, err))
		}
	})
}

// TestStep4EveryAbandonedReservationExpires abandons several reservations,
// a second apart, among keys that finished: once their locks have timed
// out, every abandoned key is free, not only the first.
func TestStep4EveryAbandonedReservationExpires(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		const keys = 6
		store := idempotency.NewKeyStore()
		finished := func(i int) bool { return i%3 == 1 } // keys 1 and 4 finish; 0, 2, 3 and 5 are abandoned
		key := func(i int) string { return fmt.Sprint("test/charge/ord-abandoned-", i) }
		req := func(i int) fooddelivery.ChargeRequest {
			return fooddelivery.ChargeRequest{OrderID: fmt.Sprint("ord-abandoned-", i), AmountCents: 2400, Card: "tok_visa"}
		}
		abandoned, done := 0, 0
		for i := range keys {
			if i > 0 {
				time.Sleep(time.Second)
			}
			if o, err := store.Begin(key(i), req(i)); o != nil || err != nil {
				t.Fatalf("step 4: Begin with the fresh key %q returned %s; nil, nil lets the charge run", key(i), begun(o, err))
			}
			if finished(i) {
				store.Finish(key(i), payment.Outcome{Status: http.StatusCreated, Body: []byte(`{"id":"ch_1"}`)})
				done++
			} else {
				abandoned++
			}
		}
		freeBy := 2 * payment.ProcessorTimeout
		time.Sleep(freeBy)
		if n := store.Len(); n != done {
			t.Fatalf("step 4: %d reservations were abandoned (Begin without Finish), a second apart, beside %d keys "+
				"that finished; %v after the last Begin (the processor's deadline is %v) Len reports %d keys, want %d: "+
				"the finished ones. Every reservation whose lock timed out must be dropped, not only the first: "+
				"sweep all that are due.", abandoned, done, freeBy, payment.ProcessorTimeout, n, done)
		}
		for i := range keys {
			o, err := store.Begin(key(i), req(i))
			switch {
			case finished(i) && (err != nil || o == nil || o.Status != http.StatusCreated):
				t.Fatalf("step 4: key %q finished with a %d about %v ago, well within KeyTTL = %v; a retry got %s: "+
					"a finished key is replayed until it expires.", key(i), http.StatusCreated, freeBy, idempotency.KeyTTL, begun(o, err))
			case !finished(i) && (o != nil || err != nil):
				t.Fatalf("step 4: %d reservations were abandoned a second apart; %v after the last Begin (the processor's "+
					"deadline is %v) a retry with abandoned key %q (number %d of %d) got %s. Its lock has timed out, "+
					"so the key is free: nil, nil lets the retry charge. Every timed-out reservation must be dropped, "+
					"not only the first.", abandoned, freeBy, payment.ProcessorTimeout, key(i), i+1, keys, begun(o, err))
			}
		}
	})
}

// TestStep4ReleasedKeysAreFreed releases many keys with a 5xx just after a
// key that completed and stays for KeyTTL. Once their lock timeouts have
// passed, nothing may keep the released keys in memory: not the map, and
// not the records of when locks run out, which the completed key's record
// may still lead to. The keys are long (255 bytes, the longest the service
// accepts), so that even a record holding only its key shows.
func TestStep4ReleasedKeysAreFreed(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		const keys, size = 20_000, fooddelivery.MaxIdempotencyKeyLen // 5 MB of keys
		store := idempotency.NewKeyStore()
		kept := fooddelivery.ChargeRequest{OrderID: "ord-kept", AmountCents: 2400, Card: "tok_visa"}
		if o, err := store.Begin("test/charge/ord-kept", kept); o != nil || err != nil {
			t.Fatalf("step 4: Begin with the fresh key test/charge/ord-kept returned %s; nil, nil lets the charge run", begun(o, err))
		}
		store.Finish("test/charge/ord-kept", payment.Outcome{Status: http.StatusCreated, Body: []byte(`{"id":"ch_1"}`)})
		before := heapAlloc()
		for i := range keys {
			id := fmt.Sprint("ord-released-", i)
			key := "test/charge/" + id + strings.Repeat("x", size-len("test/charge/")-len(id))
			if o, err := store.Begin(key, fooddelivery.ChargeRequest{OrderID: id, AmountCents: 2400, Card: "tok_visa"}); o != nil || err != nil {
				t.Fatalf("step 4: Begin with the fresh key %q returned %s; nil, nil lets the charge run", key[:40]+"...", begun(o, err))
			}
			store.Finish(key, payment.Outcome{Status: http.StatusServiceUnavailable})
		}
		time.Sleep(2*payment.ProcessorTimeout + time.Second)
		if o, err := store.Begin("test/charge/ord-new", fooddelivery.ChargeRequest{OrderID: "ord-new", AmountCents: 2400, Card: "tok_visa"}); o != nil || err != nil {
			t.Fatalf("step 4: Begin with the fresh key test/charge/ord-new returned %s; nil, nil lets the charge run", begun(o, err))
		}
		if held, released := int64(heapAlloc())-int64(before), int64(keys*size); held > released/2 {
			t.Fatalf("step 4: %d keys of %d bytes (%d KB) were released by a 503 just after one key completed; %v later, "+
				"past every lock timeout, the store still holds %d KB more than before them: the released keys are still "+
				"reachable from something of the store's. During a payment outage every retry releases a key, so a day of "+
				"them would stay in memory. Look at whatever records when locks run out: a list node taken off the front "+
				"that keeps its link to the next (the completed key's node lives on, and leads to all the rest), a slice "+
				"cut from the front whose backing array still holds what was cut, a heap that does not clear the slot it pops.",
				keys, size, released>>10, 2*payment.ProcessorTimeout+time.Second, max(held, 0)>>10)
		}
		runtime.KeepAlive(store)
	})
}
