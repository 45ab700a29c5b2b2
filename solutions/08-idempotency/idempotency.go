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
	// locks holds the reservations in the order their LockTimeout runs
	// out, and expiring the completed keys in the order their KeyTTL runs
	// out: both are constants and time only moves on, so each new deadline
	// goes at the back and the due ones are at the front.
	locks, expiring queue
}

type entry struct {
	key     string
	req     fooddelivery.ChargeRequest
	outcome *payment.Outcome // nil while the first request is in flight
	lock    deadline         // the reservation's place in s.locks
	expiry  deadline         // once completed: its place in s.expiring
}

// deadline is an entry's place in a queue: when its time is up, and the
// next deadline in the same queue.
type deadline struct {
	at    time.Time
	entry *entry
	next  *deadline
}

// queue is a first-in, first-out list of deadlines, linked through the
// entries that hold them: adding or dropping one allocates nothing and
// copies nothing, however many keys the store holds (a slice cut from the
// front and appended to at the back copies all of it whenever it regrows).
type queue struct{ head, tail *deadline } // both nil when empty

// push adds d at the back of q.
func (q *queue) push(d *deadline) {
	if q.tail == nil {
		q.head = d
	} else {
		q.tail.next = d
	}
	q.tail = d
}

// popDue removes the front deadline of q and returns its entry if its
// time is up at now; otherwise it returns nil and leaves q as it is. The
// removed deadline lets go of the next one: its entry may live on (a
// completed key's lock deadline lives as long as the key), and a link from
// it would keep every later deadline's entry, freed or not, in memory.
func (q *queue) popDue(now time.Time) *entry {
	d := q.head
	if d == nil || now.Before(d.at) {
		return nil
	}
	q.head, d.next = d.next, nil
	if q.head == nil {
		q.tail = nil
	}
	return d.entry
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
	now := time.Now()
	s.expireLocked(now)
	e, ok := s.entries[key]
	switch {
	case !ok:
		e = &entry{key: key, req: req}
		e.lock = deadline{at: now.Add(LockTimeout), entry: e}
		s.entries[key] = e
		s.locks.push(&e.lock)
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
	e.expiry = deadline{at: time.Now().Add(KeyTTL), entry: e}
	s.expiring.push(&e.expiry)
}

// Len returns how many keys the store holds (in flight within LockTimeout,
// or completed and not yet expired).
func (s *KeyStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(time.Now())
	return len(s.entries)
}

// expireLocked forgets the reservations whose lock timed out, and the keys
// whose time is up: O(1) per expired key. The caller holds s.mu.
func (s *KeyStore) expireLocked(now time.Time) {
	for e := s.locks.popDue(now); e != nil; e = s.locks.popDue(now) {
		// The charge may have finished since, or been released by a 5xx
		// and its key reserved again: then the map holds a new entry,
		// with a lock of its own.
		if s.entries[e.key] == e && e.outcome == nil {
			delete(s.entries, e.key)
		}
	}
	for e := s.expiring.popDue(now); e != nil; e = s.expiring.popDue(now) {
		// Only this loop removes a completed entry, so the map still
		// holds e.
		delete(s.entries, e.key)
	}
}
