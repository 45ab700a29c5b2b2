// Fuzzing POST /charges with any Idempotency-Key. Under plain `go test`
// the seeds below and the corpus in testdata/fuzz/FuzzChargeIdempotencyKey
// run once each. To fuzz (one target at a time; -parallel bounds the
// workers):
//
//	go test -run '^$' -fuzz '^FuzzChargeIdempotencyKey$' -fuzztime 60s -parallel 2 ./fooddelivery/payment/
//
// A failing input is written to testdata/fuzz/FuzzChargeIdempotencyKey;
// keep it there as a regression case once the bug is fixed.

package payment_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/payment"
)

// maxKeyBytes is the longest Idempotency-Key the service may accept once
// it validates keys: 255 bytes.
const maxKeyBytes = 255

// keyLog is a memoStore that remembers every key Begin was asked about:
// the keys the service let through to its store.
type keyLog struct {
	memoStore
	mu   sync.Mutex
	keys []string
}

func (s *keyLog) Begin(key string, req fooddelivery.ChargeRequest) (*payment.Outcome, error) {
	s.mu.Lock()
	s.keys = append(s.keys, key)
	s.mu.Unlock()
	return s.memoStore.Begin(key, req)
}

// newPayment returns a payment service with a fresh ledger and, when
// withKeys, a fresh key store (nil otherwise).
func newPayment(withKeys bool) (http.Handler, *keyLog) {
	d := payment.Deps{Instance: fooddelivery.NewInstance("payment", 0, nil), Ledger: payment.NewLedger()}
	var store *keyLog
	if withKeys {
		store = &keyLog{}
		d.Keys = store
	}
	return payment.New(d), store
}

// postCharge sends body to POST /charges in-process, with key as the
// Idempotency-Key when it is not "".
func postCharge(h http.Handler, key string, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/charges", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if key != "" {
		r.Header.Set(fooddelivery.HeaderIdempotencyKey, key)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

var validCharge = []byte(`{"orderId":"o1","amountCents":1250,"card":"tok_visa"}`)

// keyLimitEnforced reports, with and without a key store, whether the
// service validates key lengths: a short key is charged and a key of 1 KiB
// is answered 400. Until it does, the length property is not checked; from
// then on, any accepted key longer than maxKeyBytes (an off-by-one limit,
// say) fails the fuzz test.
var keyLimitEnforced = sync.OnceValue(func() map[bool]bool {
	enforced := map[bool]bool{}
	for _, withKeys := range []bool{false, true} {
		h, _ := newPayment(withKeys)
		short := postCharge(h, "k", validCharge).Code
		long := postCharge(h, strings.Repeat("k", 1024), validCharge).Code
		enforced[withKeys] = short == http.StatusCreated && long == http.StatusBadRequest
	}
	return enforced
})

// FuzzChargeIdempotencyKey sends the same charge twice with an arbitrary
// Idempotency-Key and body, with and without a key store, and checks that
// a bad key or body is the client's problem: no panic, no 5xx, a JSON
// answer; and, once the service validates keys, that no key longer than
// maxKeyBytes is accepted (charged, or handed to the key store).
func FuzzChargeIdempotencyKey(f *testing.F) {
	for _, s := range []struct {
		key      string
		body     string
		withKeys bool
	}{
		{"", string(validCharge), false},
		{"", string(validCharge), true},
		{"8e03978e-40d5-43e8-bc93-6894a57f9324", string(validCharge), true},
		{"order-o1-attempt-1", string(validCharge), false},
		{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`, string(validCharge), true},
		{"k", `{"orderId":"o1","amountCents":1250,"card":"tok_declined"}`, true},
		{"k", `{"orderId":"o1","amountCents":-1,"card":"tok_visa"}`, true},
		{"k", `{"orderId":`, true},
		{"k", ``, false},
		{strings.Repeat("k", maxKeyBytes), string(validCharge), true},
		{strings.Repeat("k", maxKeyBytes+1), string(validCharge), true},
		{strings.Repeat("k", maxKeyBytes+1), string(validCharge), false},
		{"   ", string(validCharge), true},
		{"key\twith\x00control\r\nbytes\xff", string(validCharge), true},
		{"ключ-😀", string(validCharge), true},
	} {
		f.Add(s.key, []byte(s.body), s.withKeys)
	}

	f.Fuzz(func(t *testing.T, key string, body []byte, withKeys bool) {
		h, store := newPayment(withKeys)
		limit := keyLimitEnforced()[withKeys]
		for attempt := 1; attempt <= 2; attempt++ { // the second is a repeat: replayed, refused or run again
			w := postCharge(h, key, body)
			if w.Code >= 500 {
				t.Fatalf("attempt %d with Idempotency-Key %q (keys: %v) answered %d; a bad key or body is the client's problem, never a 5xx. Body: %s",
					attempt, key, withKeys, w.Code, w.Body.Bytes())
			}
			if !json.Valid(w.Body.Bytes()) {
				t.Fatalf("attempt %d answered %d with a body that is not JSON: %q", attempt, w.Code, w.Body.Bytes())
			}
			if limit && w.Code >= 200 && w.Code < 300 && len(key) > maxKeyBytes {
				t.Fatalf("attempt %d: a %d-byte Idempotency-Key was accepted (%d); keys longer than %d bytes must be refused",
					attempt, len(key), w.Code, maxKeyBytes)
			}
		}
		if store != nil && limit {
			for _, k := range store.keys {
				if len(k) > maxKeyBytes {
					t.Fatalf("a %d-byte Idempotency-Key reached the key store; keys longer than %d bytes must be refused first", len(k), maxKeyBytes)
				}
			}
		}
	})
}
