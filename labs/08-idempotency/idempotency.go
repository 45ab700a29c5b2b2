// Package idempotency is lab 08 of the workshop: the order service retries
// charges that failed, but sends no idempotency key, and the payment
// service remembers nothing, so a charge whose response was lost is
// charged again. Read README.md, then make `go test ./labs/08-idempotency/`
// pass by editing this file and consumer.go only.
package idempotency

import (
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/payment"
)

// KeyTTL is how long the payment service remembers a key after the charge
// that used it completed: the expiry it publishes to its clients.
const KeyTTL = 24 * time.Hour

// ChargeKey returns the Idempotency-Key that the order service sends with
// attempt a of charging an order ("" sends none).
func ChargeKey(a payment.ChargeAttempt) string {
	// TODO(step 1): one key per logical order, the same on every retry of
	// that order, never the same for two orders.
	return ""
}

// KeyStore is the payment service's memory of idempotency keys: the
// payment service calls Begin before a charge runs and Finish after it
// (see payment.KeyStore for what each answer makes the service do). It
// must be safe for concurrent use. Create one with NewKeyStore.
type KeyStore struct {
	// TODO(step 2): per key, the request that used it and its outcome.
}

// NewKeyStore returns an empty store.
func NewKeyStore() *KeyStore { return &KeyStore{} }

// Begin is called before a charge runs. nil, nil lets the charge run.
func (s *KeyStore) Begin(key string, req fooddelivery.ChargeRequest) (*payment.Outcome, error) {
	// TODO(step 2): a key whose charge completed: return its stored
	// outcome, so nothing is charged again.
	// TODO(step 3): no key, a key used for another request, a key whose
	// first request is still running: return payment's sentinel errors.
	// Reserve a new key in the same critical section as the check.
	// TODO(step 4): forget keys older than KeyTTL.
	return nil, nil
}

// Finish is called with the outcome of a charge that Begin let run.
func (s *KeyStore) Finish(key string, o payment.Outcome) {
	// TODO(step 2): keep o for replay (decide which outcomes are final).
}

// Len returns how many keys the store holds in memory.
func (s *KeyStore) Len() int {
	// TODO(step 4)
	return 0
}
