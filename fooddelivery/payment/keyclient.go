package payment

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/retry"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

// ChargeAttempt describes one attempt of the order service to charge an
// order: everything a function choosing the attempt's Idempotency-Key may
// look at (lab 08).
type ChargeAttempt struct {
	// Request is the charge: order id, amount and card.
	Request fooddelivery.ChargeRequest
	// Attempt is 1 for the first attempt, 2 for the first retry, ...
	Attempt int
	// At is when this attempt is sent.
	At time.Time
}

// ChargeWithKey is Charge with an Idempotency-Key header (none when key is
// "") and, for attempt > 1, fooddelivery.HeaderAttempt. Besides the errors
// of Charge, the service's idempotency answers are *fooddelivery.CallError
// values wrapping ErrRejected: Status 400 "idempotency_key_missing", 409
// "idempotency_key_in_use" (see IsKeyInUse), 422 "idempotency_key_reused".
// A key that breaks fooddelivery.CheckIdempotencyKey is not sent: the
// error wraps ErrRejected (so it is not retried) and the rule's error.
func (c *Client) ChargeWithKey(ctx context.Context, req fooddelivery.ChargeRequest, key string, attempt int) (fooddelivery.Charge, error) {
	if err := fooddelivery.CheckIdempotencyKey(key); err != nil {
		return fooddelivery.Charge{}, &keyError{orderID: req.OrderID, err: err}
	}
	h := http.Header{}
	if key != "" {
		h.Set(fooddelivery.HeaderIdempotencyKey, key)
	}
	if attempt > 1 {
		h.Set(fooddelivery.HeaderAttempt, strconv.Itoa(attempt))
	}
	var ch fooddelivery.Charge
	_, err := fooddelivery.CallJSON(ctx, c.hc, "payment", http.MethodPost, c.baseURL+"/charges", h, req, &ch)
	return ch, err
}

// keyError is the error of a charge that was not sent because its key
// breaks the rule: it reads as the rule, and errors.Is finds ErrRejected.
type keyError struct {
	orderID string
	err     error // from fooddelivery.CheckIdempotencyKey
}

func (e *keyError) Error() string {
	return "payment: charge of order " + fooddelivery.Quote(e.orderID) + " not sent: " + e.err.Error()
}

func (e *keyError) Unwrap() []error { return []error{fooddelivery.ErrRejected, e.err} }

// IsKeyInUse reports whether err is the payment service's 409
// "idempotency_key_in_use": the first request with the same key is still
// running, and the same request should be sent again later.
func IsKeyInUse(err error) bool {
	var ce *fooddelivery.CallError
	return errors.As(err, &ce) && ce.Status == http.StatusConflict && ce.Code == "idempotency_key_in_use"
}

// RetryableCharge is retry.Retryable plus IsKeyInUse: a charge whose key
// is still in flight is worth another attempt with the same key.
func RetryableCharge(err error) bool { return retry.Retryable(err) || IsKeyInUse(err) }

// KeyedClient is a fooddelivery.Payer that retries failed charges with
// Policy and sends every attempt with the Idempotency-Key that Key returns
// (lab 08's order side). It counts attempts and retries in Edge (nil:
// not counted).
type KeyedClient struct {
	Client *Client
	// Key returns the Idempotency-Key of one attempt. nil, or "", sends no
	// key. A key must pass fooddelivery.CheckIdempotencyKey (at most
	// fooddelivery.MaxIdempotencyKeyLen bytes of printable ASCII); Charge
	// fails without sending a charge whose key does not.
	Key func(ChargeAttempt) string
	// Policy retries failed attempts; a nil Retryable means
	// RetryableCharge.
	Policy retry.Policy
	Edge   *metrics.EdgeStats
}

var _ fooddelivery.Payer = (*KeyedClient)(nil)

// Charge charges req, retrying as Policy says, and returns the last
// attempt's charge or error.
func (k *KeyedClient) Charge(ctx context.Context, req fooddelivery.ChargeRequest) (fooddelivery.Charge, error) {
	p := k.Policy
	if p.Retryable == nil {
		p.Retryable = RetryableCharge
	}
	var ch fooddelivery.Charge
	err := p.Do(ctx, req.OrderID, retry.Traced(func(ctx context.Context, attempt int) error {
		key := ""
		if k.Key != nil {
			key = k.Key(ChargeAttempt{Request: req, Attempt: attempt, At: time.Now()})
		}
		if k.Edge != nil {
			k.Edge.Attempts.Add(1)
			if attempt > 1 {
				k.Edge.Retries.Add(1)
			}
		}
		var err error
		ch, err = k.Client.ChargeWithKey(ctx, req, key, attempt)
		return err
	}))
	return ch, err
}
