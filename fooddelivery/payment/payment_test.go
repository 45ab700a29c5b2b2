package payment_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/internal/servetest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/payment"
	"github.com/gophereats/resilience/fooddelivery/retry"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

// harness is one payment instance on an in-memory network and a client for
// it. Everything is shut down by t.Cleanup, inside the synctest bubble.
type harness struct {
	metrics *metrics.Metrics
	ledger  *payment.Ledger
	client  *payment.Client
}

// start serves payment with the given concurrency limit; fault, when not
// nil, wraps every route (as the fault injector would).
func start(t *testing.T, limit int, fault fooddelivery.Middleware) *harness {
	t.Helper()
	h := &harness{metrics: metrics.NewMetrics(), ledger: payment.NewLedger()}
	in := fooddelivery.NewInstance("payment", limit, h.metrics)
	in.Faults = fault
	_, hc := servetest.Serve(t, "payment", payment.New(payment.Deps{Instance: in, Ledger: h.ledger}))
	h.client = payment.NewClient(hc, memnet.ServiceURL("payment"))
	return h
}

func callError(t *testing.T, err error) *fooddelivery.CallError {
	t.Helper()
	var ce *fooddelivery.CallError
	require.True(t, errors.As(err, &ce), "want a *fooddelivery.CallError, got %T: %v", err, err)
	return ce
}

func TestChargeIsExecutedOnceAndRecordedInTheLedger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, 10, nil)

		ch, err := h.client.Charge(t.Context(), fooddelivery.ChargeRequest{OrderID: "ord-1", AmountCents: 2350, Card: "tok_visa"})
		require.NoError(t, err, "charging tok_visa must succeed")

		assert.NotEmpty(t, ch.ID, "a charge gets an id")
		assert.Equal(t, "succeeded", ch.Status, "charge status")
		assert.Equal(t, 2350, ch.AmountCents, "charged amount in cents")
		assert.Equal(t, 1, h.ledger.ChargesFor("ord-1"), "charges executed for ord-1")
		assert.Equal(t, 1, h.ledger.Total(), "charges executed in all")
		assert.Equal(t, 2350, h.ledger.TotalCents(), "cents charged in all")
		assert.Equal(t, int64(1), h.metrics.Route("payment", "POST /charges").Received.Load(), "requests that reached POST /charges")

		list, err := h.client.Charges(t.Context(), "ord-1")
		require.NoError(t, err, "listing charges of ord-1")
		assert.Equal(t, []fooddelivery.Charge{ch}, list, "GET /charges?orderId=ord-1 lists the one charge")
		list, err = h.client.Charges(t.Context(), "ord-2")
		require.NoError(t, err, "listing charges of ord-2")
		assert.Empty(t, list, "ord-2 was never charged")
	})
}

func TestDeclinedCardIsRejectedWithoutCharging(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, 10, nil)

		_, err := h.client.Charge(t.Context(), fooddelivery.ChargeRequest{OrderID: "ord-1", AmountCents: 900, Card: payment.DeclinedCard})

		require.ErrorIs(t, err, fooddelivery.ErrRejected, "a declined card is a rejection, not an outage")
		ce := callError(t, err)
		assert.Equal(t, http.StatusPaymentRequired, ce.Status, "declined card status")
		assert.Equal(t, "card_declined", ce.Code, "declined card code")
		assert.Equal(t, 0, h.ledger.Total(), "a declined card must not be charged")
	})
}

func TestEveryTestCardIsCharged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, 10, nil)
		cards := payment.TestCards()
		require.Contains(t, cards, "tok_visa", "tests across the workshop pay with tok_visa")
		require.Contains(t, cards, "tok_mastercard", "lab 08 pays with tok_mastercard")
		assert.NotContains(t, cards, payment.DeclinedCard, "the declined card is not one that is charged")

		for i, card := range cards {
			_, err := h.client.Charge(t.Context(), fooddelivery.ChargeRequest{OrderID: fmt.Sprint("ord-", i), AmountCents: 100, Card: card})
			assert.NoError(t, err, "test card %s is charged", card)
		}
		assert.Equal(t, len(cards), h.ledger.Total(), "one charge per test card")

		cards[0] = "tok_changed"
		assert.Equal(t, "tok_visa", payment.TestCards()[0], "TestCards returns a copy")
	})
}

func TestUnknownCardIsRefusedWithoutCharging(t *testing.T) {
	for _, card := range []string{"tok_amex", "4242424242424242", " tok_visa", "TOK_VISA", strings.Repeat("tok_", 10_000)} {
		t.Run(fmt.Sprintf("%.20s", card), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := start(t, 10, nil)

				_, err := h.client.Charge(t.Context(), fooddelivery.ChargeRequest{OrderID: "ord-1", AmountCents: 900, Card: card})

				require.ErrorIs(t, err, fooddelivery.ErrRejected, "an unknown card is the caller's mistake, not an outage")
				assert.False(t, retry.Retryable(err), "a 4xx is never retried")
				ce := callError(t, err)
				assert.Equal(t, http.StatusPaymentRequired, ce.Status, "unknown card status")
				assert.Equal(t, "card_unknown", ce.Code, "unknown card code")
				for _, known := range append(payment.TestCards(), payment.DeclinedCard) {
					assert.Contains(t, ce.Message, known, "the message lists the cards that work")
				}
				assert.Contains(t, ce.Message, "nothing was charged")
				assert.Less(t, len(ce.Message), 300, "the card is echoed truncated: %s", ce.Message)
				assert.Equal(t, 0, h.ledger.Total(), "an unknown card must not be charged")
			})
		})
	}
}

func TestKeyedClientDoesNotRetryAnUnknownCard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, 10, nil)
		edge := &metrics.EdgeStats{}
		kc := &payment.KeyedClient{Client: h.client, Policy: retry.Policy{Attempts: 5}, Edge: edge}

		_, err := kc.Charge(t.Context(), fooddelivery.ChargeRequest{OrderID: "ord-1", AmountCents: 900, Card: "tok_unknown"})

		require.ErrorIs(t, err, fooddelivery.ErrRejected)
		assert.Equal(t, int64(1), edge.Attempts.Load(), "a 402 is final: one attempt")
		assert.Equal(t, int64(1), h.metrics.Route("payment", "POST /charges").Received.Load())
	})
}

func TestOverLongIdempotencyKeyIsRefusedOverTheWire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &harness{metrics: metrics.NewMetrics(), ledger: payment.NewLedger()}
		_, hc := servetest.Serve(t, "payment", payment.New(payment.Deps{Instance: fooddelivery.NewInstance("payment", 10, h.metrics), Ledger: h.ledger}))
		key := strings.Repeat("k", fooddelivery.MaxIdempotencyKeyLen+1)

		// CallJSON, not the client: the client refuses to send such a key.
		_, err := fooddelivery.CallJSON(t.Context(), hc, "payment", http.MethodPost, memnet.ServiceURL("payment")+"/charges",
			http.Header{fooddelivery.HeaderIdempotencyKey: {key}},
			fooddelivery.ChargeRequest{OrderID: "ord-1", AmountCents: 100, Card: "tok_visa"}, nil)

		require.ErrorIs(t, err, fooddelivery.ErrRejected, "the key is refused, not silently ignored")
		ce := callError(t, err)
		assert.Equal(t, http.StatusBadRequest, ce.Status)
		assert.Equal(t, "idempotency_key_invalid", ce.Code)
		assert.Contains(t, ce.Message, "at most 255 bytes")
		assert.Equal(t, 0, h.ledger.Total(), "nothing is charged")
	})
}

func TestInvalidChargeRequestsAreRejected(t *testing.T) {
	cases := []struct {
		name string
		req  fooddelivery.ChargeRequest
	}{
		{"a zero amount", fooddelivery.ChargeRequest{OrderID: "ord-1", AmountCents: 0, Card: "tok_visa"}},
		{"a negative amount", fooddelivery.ChargeRequest{OrderID: "ord-1", AmountCents: -5, Card: "tok_visa"}},
		{"no order id", fooddelivery.ChargeRequest{AmountCents: 100, Card: "tok_visa"}},
		{"no card", fooddelivery.ChargeRequest{OrderID: "ord-1", AmountCents: 100}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := start(t, 10, nil)

				_, err := h.client.Charge(t.Context(), tc.req)

				require.ErrorIs(t, err, fooddelivery.ErrRejected, "a charge request with %s must be rejected", tc.name)
				assert.Equal(t, http.StatusBadRequest, callError(t, err).Status, "status for %s", tc.name)
				assert.Equal(t, 0, h.ledger.Total(), "nothing may be charged for %s", tc.name)
			})
		})
	}
}

func TestConcurrencyLimitRejectsAtOnceWhenFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		hold := func(_, _ string, next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				<-release
				next.ServeHTTP(w, r)
			})
		}
		h := start(t, 2, hold)

		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() {
				_, errs[i] = h.client.Charge(t.Context(), fooddelivery.ChargeRequest{OrderID: "held", AmountCents: 100, Card: "tok_visa"})
			})
		}
		synctest.Wait() // both held requests now occupy the two slots

		start := time.Now()
		_, err := h.client.Charge(t.Context(), fooddelivery.ChargeRequest{OrderID: "extra", AmountCents: 100, Card: "tok_visa"})

		require.ErrorIs(t, err, fooddelivery.ErrOverloaded, "with 2 of 2 slots taken the third charge must be rejected as overloaded")
		assert.True(t, fooddelivery.DontRetry(err), "the rejection must carry the don't-retry signal")
		assert.Equal(t, time.Duration(0), time.Since(start), "the rejection must be immediate, not queued")
		stats := h.metrics.Route("payment", "POST /charges")
		assert.Equal(t, int64(1), stats.Rejected.Load(), "rejected requests")
		assert.Equal(t, int64(3), stats.Received.Load(), "received requests (rejected one included)")

		close(release)
		wg.Wait()
		for i, e := range errs {
			assert.NoError(t, e, "held charge %d must succeed once released", i)
		}
		assert.Equal(t, 2, h.ledger.ChargesFor("held"), "both held charges executed")
		assert.Equal(t, 0, h.ledger.ChargesFor("extra"), "the rejected charge must not execute")
	})
}

func TestClientSendsTheRequestID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got string
		spy := func(_, _ string, next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = fooddelivery.RequestIDFrom(r.Context())
				next.ServeHTTP(w, r)
			})
		}
		h := start(t, 10, spy)

		ctx := fooddelivery.WithRequestID(t.Context(), "req-42")
		_, err := h.client.Charge(ctx, fooddelivery.ChargeRequest{OrderID: "ord-1", AmountCents: 100, Card: "tok_visa"})
		require.NoError(t, err, "charge")
		assert.Equal(t, "req-42", got, "request id seen by the payment service")
	})
}

func TestHangingPaymentEndsAtTheCallersDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := func(_, _ string, next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// Read the body first: net/http notices a caller that hangs
				// up only once the request body has been read to the end.
				_, _ = io.Copy(io.Discard, r.Body)
				<-r.Context().Done()
			})
		}
		h := start(t, 10, hang)

		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		start := time.Now()
		_, err := h.client.Charge(ctx, fooddelivery.ChargeRequest{OrderID: "ord-1", AmountCents: 100, Card: "tok_visa"})

		require.ErrorIs(t, err, fooddelivery.ErrTimeout, "a call cut by the context deadline is a timeout")
		assert.ErrorIs(t, err, context.DeadlineExceeded, "the transport cause stays reachable")
		assert.Equal(t, 2*time.Second, time.Since(start), "Charge must return at the 2s deadline")
		assert.Contains(t, err.Error(), "payment: timed out", "the message names the service and what happened")
		synctest.Wait()
		assert.Equal(t, int64(1), h.metrics.Route("payment", "POST /charges").Cancelled.Load(),
			"the service must see that its caller gave up")
	})
}
