package breaker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/payment"
	"github.com/gophereats/resilience/fooddelivery/retry"
	"github.com/gophereats/resilience/fooddelivery/system"
	breaker "github.com/gophereats/resilience/labs/05-breaker"
)

func TestStep7RetriesStopAtAnOpenBreaker(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 7}, func(t *testing.T) {
		sys := labtest.StartSystem(t, system.Config{})
		cb := breaker.New(breaker.Settings{Name: "checkout->payment", Logger: quiet})
		payer := breaker.Payer{Breaker: cb, Next: payment.NewClient(sys.HTTPClient(), memnet.ServiceURL("payment"))}
		policy := retry.Policy{Attempts: 3, Seed: 7} // fooddelivery's plain retry helper
		charge := func(orderID string) (attempts int, err error) {
			err = policy.Do(context.Background(), orderID, func(ctx context.Context, attempt int) error {
				attempts = attempt
				_, err := payer.Charge(ctx, fooddelivery.ChargeRequest{OrderID: orderID, AmountCents: 1200, Card: "tok_visa"})
				return err
			})
			return attempts, err
		}

		setPayment(t, sys, down)
		charge("ord-1") // 3 attempts, 3 failures
		charge("ord-2") // 2 more failures open the breaker
		if s, n := cb.State(), labtest.Charges(sys); s != breaker.Open {
			t.Fatalf("step 7: two charges through retry.Policy{Attempts: 3} made %d attempts against a payment service "+
				"that answers 503, and the breaker is %v; 5 failures in a row must open it. Finish step 1 first.", n, s)
		}

		before := labtest.Charges(sys)
		began := time.Now()
		attempts, err := charge("ord-3")
		took := time.Since(began)
		if attempts != 1 || took > fast || !errors.Is(err, fooddelivery.ErrCircuitOpen) {
			t.Fatalf("step 7: the breaker was open; a charge through retry.Policy made %d attempts over %v (%d reached payment) "+
				"and failed with %v. An open breaker is a final answer: its error must wrap fooddelivery.ErrCircuitOpen, "+
				"which retry.Retryable does not retry (an error wrapping ErrUnavailable would be retried with backoff).",
				attempts, took, labtest.Charges(sys)-before, err)
		}
	})
}
