package payment_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/payment"
	"github.com/gophereats/resilience/fooddelivery/retry"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

// memoStore is a minimal correct payment.KeyStore for these tests.
type memoStore struct {
	mu   sync.Mutex
	reqs map[string]fooddelivery.ChargeRequest
	outs map[string]*payment.Outcome
}

func (s *memoStore) Begin(key string, req fooddelivery.ChargeRequest) (*payment.Outcome, error) {
	if key == "" {
		return nil, payment.ErrKeyMissing
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reqs == nil {
		s.reqs, s.outs = map[string]fooddelivery.ChargeRequest{}, map[string]*payment.Outcome{}
	}
	r, ok := s.reqs[key]
	switch {
	case !ok:
		s.reqs[key] = req
		return nil, nil
	case r != req:
		return nil, payment.ErrKeyMismatch
	case s.outs[key] == nil:
		return nil, payment.ErrKeyInFlight
	}
	return s.outs[key], nil
}

func (s *memoStore) Finish(key string, o payment.Outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outs[key] = &o
}

// post sends a charge to h in-process and returns the recorder.
func post(h http.Handler, key string, req fooddelivery.ChargeRequest) *httptest.ResponseRecorder {
	body, _ := json.Marshal(req)
	r := httptest.NewRequest(http.MethodPost, "/charges", bytes.NewReader(body))
	if key != "" {
		r.Header.Set(fooddelivery.HeaderIdempotencyKey, key)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestKeysMapStoreAnswersToStatuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ledger := payment.NewLedger()
		proc := &payment.Processor{Latency: time.Second}
		h := payment.New(payment.Deps{Instance: fooddelivery.NewInstance("payment", 0, nil), Ledger: ledger,
			Keys: &memoStore{}, Processor: proc})
		req := fooddelivery.ChargeRequest{OrderID: "o1", AmountCents: 100, Card: "tok_visa"}

		assert.Equal(t, http.StatusBadRequest, post(h, "", req).Code, "no key")

		var wg sync.WaitGroup
		var second *httptest.ResponseRecorder
		wg.Go(func() { post(h, "k1", req) })
		wg.Go(func() {
			time.Sleep(10 * time.Millisecond)
			second = post(h, "k1", req)
		})
		wg.Wait()
		assert.Equal(t, http.StatusConflict, second.Code, "a duplicate while the first is in flight")
		assert.Equal(t, "1", second.Header().Get("Retry-After"))

		replay := post(h, "k1", req)
		assert.Equal(t, http.StatusCreated, replay.Code, "a repeat after completion is replayed")
		assert.Equal(t, "true", replay.Header().Get(payment.HeaderReplayed))
		other := req
		other.AmountCents = 200
		assert.Equal(t, http.StatusUnprocessableEntity, post(h, "k1", other).Code, "same key, other payload")
		assert.Equal(t, 1, ledger.Total(), "one charge in all")
		assert.Equal(t, int64(1), proc.Calls(), "the processor saw only the first request")

		proc.FailNext(1)
		assert.Equal(t, http.StatusServiceUnavailable, post(h, "k2", fooddelivery.ChargeRequest{OrderID: "o2", AmountCents: 1, Card: "tok_visa"}).Code)
	})
}

func TestKeyedClientSendsKeyAndRetriesInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var keys []string
		calls := 0
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			keys = append(keys, r.Header.Get(fooddelivery.HeaderIdempotencyKey))
			calls++
			if calls == 1 {
				fooddelivery.WriteError(w, http.StatusConflict, "idempotency_key_in_use", "busy")
				return
			}
			fooddelivery.WriteJSON(w, http.StatusCreated, fooddelivery.Charge{ID: "ch_1", OrderID: "o1"})
		})
		hc := &http.Client{Transport: handlerTransport{h}}
		edge := &metrics.EdgeStats{}
		kc := &payment.KeyedClient{
			Client: payment.NewClient(hc, "http://payment"),
			Key:    func(a payment.ChargeAttempt) string { return "key-" + a.Request.OrderID },
			Policy: retry.Policy{Attempts: 3},
			Edge:   edge,
		}
		ch, err := kc.Charge(context.Background(), fooddelivery.ChargeRequest{OrderID: "o1", AmountCents: 1, Card: "tok_visa"})
		require.NoError(t, err, "a 409 in-use answer is retried")
		assert.Equal(t, "ch_1", ch.ID)
		assert.Equal(t, []string{"key-o1", "key-o1"}, keys)
		assert.Equal(t, int64(2), edge.Attempts.Load())
		assert.Equal(t, int64(1), edge.Retries.Load())
	})
}

// handlerTransport serves requests with a handler, without a network.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	w := httptest.NewRecorder()
	t.h.ServeHTTP(w, r)
	return w.Result(), nil
}

func TestMalformedIdempotencyKeyIsRefusedWithOrWithoutAKeyStore(t *testing.T) {
	cases := []struct {
		name string
		keys []string // Idempotency-Key header values
		says []string
	}{
		{"256 bytes", []string{strings.Repeat("k", 256)}, []string{"at most 255 bytes", "got 256 bytes"}},
		{"10,000 bytes", []string{strings.Repeat("k", 10_000)}, []string{"at most 255 bytes", "(10000 bytes)"}},
		{"only spaces", []string{"   "}, []string{"only spaces"}},
		{"a tab", []string{"order\t1"}, []string{"printable ASCII", "0x09"}},
		{"non-ASCII", []string{"commande-é"}, []string{"printable ASCII"}},
		{"two headers", []string{"k1", "k2"}, []string{"at most one Idempotency-Key header", "has 2"}},
	}
	for _, withStore := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s, key store %v", tc.name, withStore), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					ledger, proc, store := payment.NewLedger(), &payment.Processor{}, &memoStore{}
					deps := payment.Deps{Instance: fooddelivery.NewInstance("payment", 0, nil), Ledger: ledger, Processor: proc}
					if withStore {
						deps.Keys = store
					}
					body, _ := json.Marshal(fooddelivery.ChargeRequest{OrderID: "o1", AmountCents: 100, Card: "tok_visa"})
					r := httptest.NewRequest(http.MethodPost, "/charges", bytes.NewReader(body))
					r.Header[fooddelivery.HeaderIdempotencyKey] = tc.keys
					w := httptest.NewRecorder()

					payment.New(deps).ServeHTTP(w, r)

					assert.Equal(t, http.StatusBadRequest, w.Code, "a malformed key is the client's mistake")
					var eb fooddelivery.ErrorBody
					require.NoError(t, json.Unmarshal(w.Body.Bytes(), &eb))
					assert.Equal(t, "idempotency_key_invalid", eb.Code)
					for _, want := range tc.says {
						assert.Contains(t, eb.Message, want, "the message states the rule")
					}
					assert.Less(t, len(eb.Message), 400, "the key is echoed truncated: %s", eb.Message)
					assert.Zero(t, ledger.Total(), "nothing is charged")
					assert.Zero(t, proc.Calls(), "the processor is never reached")
					assert.Empty(t, store.reqs, "no key is reserved")
				})
			})
		}
	}
}

func TestWellFormedIdempotencyKeysAreAccepted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ledger := payment.NewLedger()
		plain := payment.New(payment.Deps{Instance: fooddelivery.NewInstance("payment", 0, nil), Ledger: ledger})
		for i, key := range []string{"", "order-service/charge/ord-1", strings.Repeat("k", fooddelivery.MaxIdempotencyKeyLen)} {
			w := post(plain, key, fooddelivery.ChargeRequest{OrderID: fmt.Sprint("o", i), AmountCents: 100, Card: "tok_visa"})
			assert.Equal(t, http.StatusCreated, w.Code, "key of %d bytes: %s", len(key), w.Body)
		}
		assert.Equal(t, 3, ledger.Total())
	})
}

func TestKeyedClientNeverSendsAMalformedKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sent int
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sent++
			fooddelivery.WriteJSON(w, http.StatusCreated, fooddelivery.Charge{ID: "ch_1"})
		})
		edge := &metrics.EdgeStats{}
		kc := &payment.KeyedClient{
			Client: payment.NewClient(&http.Client{Transport: handlerTransport{h}}, "http://payment"),
			Key: func(a payment.ChargeAttempt) string {
				return "charge/" + a.Request.OrderID + "/" + strings.Repeat("x", 300)
			},
			Policy: retry.Policy{Attempts: 3},
			Edge:   edge,
		}

		_, err := kc.Charge(context.Background(), fooddelivery.ChargeRequest{OrderID: "o1", AmountCents: 1, Card: "tok_visa"})

		require.ErrorIs(t, err, fooddelivery.ErrRejected, "a key that breaks the rule is refused before sending")
		assert.Contains(t, err.Error(), "at most 255 bytes", "the error states the rule")
		assert.Contains(t, err.Error(), "not sent")
		assert.NotContains(t, err.Error(), "rejected by dependency", "the dependency never saw it")
		assert.Zero(t, sent, "nothing reaches the payment service")
		assert.Equal(t, int64(1), edge.Attempts.Load(), "and it is not retried")
	})
}

func TestHungProcessorIsCutAtItsDeadlineAndChargesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ledger := payment.NewLedger()
		proc := &payment.Processor{Latency: time.Hour}
		h := payment.New(payment.Deps{Instance: fooddelivery.NewInstance("payment", 0, nil), Ledger: ledger,
			Keys: &memoStore{}, Processor: proc})
		req := fooddelivery.ChargeRequest{OrderID: "o1", AmountCents: 100, Card: "tok_visa"}
		start := time.Now()
		w := post(h, "k1", req)
		assert.Equal(t, http.StatusGatewayTimeout, w.Code, "a processor that hangs is cut at its deadline")
		assert.Equal(t, payment.ProcessorTimeout, time.Since(start), "the call ends at ProcessorTimeout")
		assert.Zero(t, ledger.Total(), "a call cut at the deadline charges nothing")
		assert.Equal(t, int64(1), proc.Calls(), "the call reached the processor")
	})
}
