package idempotency_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/payment"
	"github.com/gophereats/resilience/fooddelivery/retry"
	idempotency "github.com/gophereats/resilience/labs/08-idempotency"
)

// The experiment: 1,000 orders, each charged by an order service that
// retries (4 attempts, fooddelivery/retry) a payment service that charges
// and then loses 20% of its responses. It runs the real payment handler
// in-process (no network: a lost response is a response the model throws
// away after the handler ran), so 2 x 1,000 orders cost a few milliseconds.
const (
	expOrders   = 1000
	expLoss     = 0.20 // share of payment responses lost after the charge
	expAttempts = 4
	expSeed     = 8
)

type expResult struct {
	attempts, charges     int
	double, uncharged     int // orders charged more than once; orders never charged
	customerSawError, max int // orders whose every attempt failed; most charges of one order
}

// runExperiment charges expOrders orders. keyed plugs in your ChargeKey
// and KeyStore; otherwise the payment service ignores keys (today's
// system) and no key is sent.
func runExperiment(t *testing.T, keyed bool) expResult {
	ledger := payment.NewLedger()
	deps := payment.Deps{Instance: fooddelivery.NewInstance("payment", 0, nil), Ledger: ledger}
	key := func(payment.ChargeAttempt) string { return "" }
	if keyed {
		deps.Keys = idempotency.NewKeyStore()
		key = idempotency.ChargeKey
	}
	handler := payment.New(deps)
	policy := retry.Policy{Attempts: expAttempts, Seed: expSeed, Retryable: payment.RetryableCharge}

	var res expResult
	for i := range expOrders {
		req := fooddelivery.ChargeRequest{OrderID: fmt.Sprint("ord-", i+1), AmountCents: 2400, Card: "tok_visa"}
		body, _ := json.Marshal(req)
		err := policy.Do(context.Background(), req.OrderID, func(ctx context.Context, attempt int) error {
			res.attempts++
			r := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://payment/charges", bytes.NewReader(body))
			if k := key(payment.ChargeAttempt{Request: req, Attempt: attempt, At: time.Now()}); k != "" {
				r.Header.Set(fooddelivery.HeaderIdempotencyKey, k)
			}
			w := httptest.NewRecorder()
			handler.ServeHTTP(w, r)
			if fooddelivery.Draw(expSeed, req.OrderID, attempt) < expLoss {
				// Processed, then the response was lost on the way back.
				return fooddelivery.ClassifyTransportError("payment", io.ErrUnexpectedEOF)
			}
			if w.Code != http.StatusCreated {
				return fooddelivery.ReadError("payment", w.Result())
			}
			return nil
		})
		if err != nil {
			res.customerSawError++
		}
	}
	perOrder := map[string]int{}
	for _, c := range ledger.Charges() {
		perOrder[c.OrderID]++
	}
	res.charges = ledger.Total()
	for i := range expOrders {
		n := perOrder[fmt.Sprint("ord-", i+1)]
		res.max = max(res.max, n)
		switch {
		case n == 0:
			res.uncharged++
		case n > 1:
			res.double++
		}
	}
	return res
}

func TestStep6Experiment(t *testing.T) {
	var naive, keyed expResult
	labtest.Run(t, labtest.Options{Step: 6, Stuck: "the experiment's charges were still retrying"}, func(t *testing.T) {
		naive = runExperiment(t, false)
		keyed = runExperiment(t, true)
	})
	// Without keys an order is charged again whenever its first response is
	// lost: a share expLoss of orders; expected charges per order
	// 1 + p + p^2 + p^3 with 4 attempts.
	extra := expLoss + expLoss*expLoss + expLoss*expLoss*expLoss
	allLost := expLoss * expLoss * expLoss * expLoss
	t.Logf("step 6: %d orders, %.0f%% of payment responses lost after charging, %d attempts per charge", expOrders, 100*expLoss, expAttempts)
	t.Logf("%-12s %8s %8s %8s %14s %11s %12s", "charges", "orders", "attempts", "charges", "charged twice+", "not charged", "saw an error")
	row := func(name string, r expResult) {
		t.Logf("%-12s %8d %8d %8d %14d %11d %12d", name, expOrders, r.attempts, r.charges, r.double, r.uncharged, r.customerSawError)
	}
	row("no key", naive)
	row("your keys", keyed)
	t.Logf("expected without keys: %.0f%% of orders charged twice or more, %.0f charges; with keys: 0 and %d; "+
		"customers who saw an error either way: %.2f%% (every attempt lost)",
		100*expLoss, expOrders*(1+extra), expOrders, 100*allLost)

	// Without keys an order is charged twice or more when its first
	// response is lost: a share expLoss of orders, within a quarter of it.
	if share := float64(naive.double) / expOrders; share < 0.75*expLoss || share > 1.25*expLoss {
		t.Errorf("step 6: without keys %.1f%% of orders were charged more than once; with %.0f%% of responses lost "+
			"the experiment expects about %.0f%% (%.0f-%.0f%%). Did the payment service or the retry helper change?",
			100*share, 100*expLoss, 100*expLoss, 75*expLoss, 125*expLoss)
	}
	if keyed.double != 0 || keyed.uncharged != 0 {
		t.Errorf("step 6: with your keys %d of %d orders were charged more than once (at most %d charges for one order) and %d were never charged; "+
			"every order must be charged exactly once. This run is sequential and needs steps 1 and 2 "+
			"(one key per order, outcomes stored and replayed): make those pass first.",
			keyed.double, expOrders, keyed.max, keyed.uncharged)
	}
}
