// Package idempotency is the reference solution of lab 08: the order
// service charges every order under one key that stays the same across
// retries, and the payment service's key store reserves each key
// atomically, replays the stored outcome to repeats, and forgets keys
// after a published time. See NOTES.md for the trade-offs.
package idempotency

import (
	"bytes"
	"net/http"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/payment"
)

// KeyTTL is how long the payment service remembers a key after the charge
// that used it completed: the expiry it publishes to its clients. 24
// hours is Stripe's figure ("keys are eligible to be removed after they
// are at least 24 hours old"); a client must not retry with a key older
// than this.
const KeyTTL = 24 * time.Hour

// LockTimeout is how long a reservation holds its key when its charge never
// finishes (the payment instance crashed or hung between Begin and
// Finish): then the key is forgotten and a retry may run. It must be longer
// than the longest a charge may run, payment.ProcessorTimeout, the
// processor call's own deadline: by the time the lock expires the first
// attempt has certainly charged and finished, or given up without
// charging, so a retry can never charge beside a late first attempt.
// Twice that deadline leaves the margin and still frees the key within a
// minute.
const LockTimeout = 2 * payment.ProcessorTimeout

// ChargeKey returns the Idempotency-Key that the order service sends with
// attempt a of charging an order. It depends on the order id only, so
// every retry of one order carries the same key and two orders never share
// one, even with the same customer, amount and card. Order ids must stay
// unique for longer than KeyTTL (in production: a UUID stored with the
// order when it is created).
func ChargeKey(a payment.ChargeAttempt) string {
	return "order-service/charge/" + a.Request.OrderID
}

// KeyStore is the payment service's memory of idempotency keys. It
// implements payment.KeyStore; it is safe for concurrent use. Create one
// with NewKeyStore.
type KeyStore struct {
	mu      sync.Mutex
	entries map[string]*entry
	// expiring lists completed keys in the order they expire: expiry is
	// completion time plus the constant KeyTTL, and time only moves on, so
	// appending keeps it sorted and expired keys are always at the front.
	expiring []expiry
	// locks lists reserved keys in the order their LockTimeout runs out
	// (sorted for the same reason).
	locks []expiry
}

type entry struct {
	req     fooddelivery.ChargeRequest
	outcome *payment.Outcome // nil while the first request is in flight
	expires time.Time        // zero while in flight
	locked  time.Time        // while in flight: when the reservation times out
}

type expiry struct {
	key string
	at  time.Time
}

// NewKeyStore returns an empty store.
func NewKeyStore() *KeyStore { return &KeyStore{entries: map[string]*entry{}} }

// Begin reserves key for req, or says why req must not run: it returns
// payment.ErrKeyMissing for an empty key, payment.ErrKeyMismatch when the
// key was used for a different request, payment.ErrKeyInFlight while the
// first request with the key is still running, and a copy of the stored
// outcome (nil error) when that request completed. nil, nil means the key
// is now reserved: run the charge, then call Finish. Checking and
// reserving happen under one lock, so of two concurrent Begins with a new
// key exactly one proceeds. A reservation whose Finish never comes frees
// its key after LockTimeout.
func (s *KeyStore) Begin(key string, req fooddelivery.ChargeRequest) (*payment.Outcome, error) {
	if key == "" {
		return nil, payment.ErrKeyMissing
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(time.Now())
	e, ok := s.entries[key]
	switch {
	case !ok:
		s.entries[key] = &entry{req: req, locked: time.Now().Add(LockTimeout)}
		s.locks = append(s.locks, expiry{key: key, at: s.entries[key].locked})
		return nil, nil
	case e.req != req:
		return nil, payment.ErrKeyMismatch
	case e.outcome == nil:
		return nil, payment.ErrKeyInFlight
	}
	o := payment.Outcome{Status: e.outcome.Status, Body: bytes.Clone(e.outcome.Body)}
	return &o, nil
}

// Finish stores o as the outcome of key, to be replayed for KeyTTL. A 5xx
// is not stored: the payment service answers 5xx only when nothing was
// charged, so the key is released and a retry runs again (Stripe instead
// stores 500s; see the README). Declines and other 4xx are final and
// stored. Finish for a key that is not in flight does nothing.
func (s *KeyStore) Finish(key string, o payment.Outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok || e.outcome != nil {
		return
	}
	if o.Status >= http.StatusInternalServerError {
		delete(s.entries, key)
		return
	}
	e.outcome = &payment.Outcome{Status: o.Status, Body: bytes.Clone(o.Body)}
	e.expires = time.Now().Add(KeyTTL)
	s.expiring = append(s.expiring, expiry{key: key, at: e.expires})
}

// Len returns how many keys the store holds (in flight within LockTimeout,
// or completed and not yet expired).
func (s *KeyStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(time.Now())
	return len(s.entries)
}

// expireLocked forgets the keys whose time is up, and the reservations
// whose lock timed out: O(1) per expired key. The caller holds s.mu.
func (s *KeyStore) expireLocked(now time.Time) {
	l := 0
	for ; l < len(s.locks) && !now.Before(s.locks[l].at); l++ {
		x := s.locks[l]
		// The key may have finished, or been released and reserved again.
		if e, ok := s.entries[x.key]; ok && e.outcome == nil && e.locked.Equal(x.at) {
			delete(s.entries, x.key)
		}
	}
	s.locks = s.locks[l:]
	n := 0
	for ; n < len(s.expiring) && !now.Before(s.expiring[n].at); n++ {
		x := s.expiring[n]
		// The key may have been reused since, with a later expiry.
		if e, ok := s.entries[x.key]; ok && e.expires.Equal(x.at) {
			delete(s.entries, x.key)
		}
	}
	s.expiring = s.expiring[n:]
}
