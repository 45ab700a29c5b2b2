package retries_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	retries "github.com/gophereats/resilience/labs/03-retries"
)

func TestStep2WhichRequestsAreIdempotent(t *testing.T) {
	req := func(method, keyHeader string) *http.Request {
		var body io.Reader
		if method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions && method != http.MethodTrace {
			body = bytes.NewReader([]byte(`{"orderId":"o-1"}`))
		}
		r, err := http.NewRequest(method, "http://payment/charges", body)
		if err != nil {
			panic(err)
		}
		if keyHeader != "" {
			r.Header.Set(keyHeader, "charge-o-1")
		}
		return r
	}
	empty := req(http.MethodGet, "")
	empty.Method = "" // http.NewRequest turns "" into "GET"; a request built as a literal keeps it
	cases := []struct {
		what string
		req  *http.Request
		want bool
		why  string
	}{
		{"GET", req(http.MethodGet, ""), true, "a read changes nothing"},
		{`the empty method ""`, empty, true, `net/http sends a request whose Method is "" as a GET (see http.Request.Method)`},
		{"HEAD", req(http.MethodHead, ""), true, "a read changes nothing"},
		{"OPTIONS", req(http.MethodOptions, ""), true, "a read changes nothing"},
		{"TRACE", req(http.MethodTrace, ""), true, "a safe method (RFC 9110, section 9.2.1), like GET"},
		{"POST", req(http.MethodPost, ""), false, "a repeated charge is a second charge"},
		{"PATCH", req(http.MethodPatch, ""), false, "a repeated change may apply twice"},
		{"PUT", req(http.MethodPut, ""), false,
			"idempotent by definition, but many servers do not implement it that way: without a key, this lab does not retry it"},
		{"DELETE", req(http.MethodDelete, ""), false,
			"idempotent by definition, but many servers do not implement it that way: without a key, this lab does not retry it"},
		{"POST with an Idempotency-Key", req(http.MethodPost, fooddelivery.HeaderIdempotencyKey), true,
			"the server recognises the repeat by its key"},
		{"POST with an X-Idempotency-Key", req(http.MethodPost, "X-Idempotency-Key"), true,
			"the X- spelling of the same header, which net/http's own resends accept too"},
	}
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		wrong := 0
		for _, c := range cases {
			if got := retries.Idempotent(c.req); got != c.want {
				wrong++
				t.Errorf("step 2: Idempotent(%s, a %d-byte body) = %v, want %v: %s", c.what, max(c.req.ContentLength, 0), got, c.want, c.why)
			}
		}
		if wrong > 0 {
			t.Errorf("step 2: Idempotent judged %d of these %d requests wrongly", wrong, len(cases))
		}
	})
}

func TestStep2ChargeWithoutKeyIsNotRetried(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		r := newRig(t, options{}) // the order service sends charges without an Idempotency-Key
		require.NoError(t, r.sys.Faults.Set("payment", charges, faults.Fault{LoseResponse: true}))

		_, err := r.sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		require.Error(t, err, "step 2: every charge's answer was lost, yet the order was placed")
		if r.spy.Count() != 1 {
			t.Fatalf("step 2: payment charged the card and the answer was lost on the way back; your Transport sent the "+
				"charge, a POST without an Idempotency-Key, %d times (charges executed: %d). "+
				"The client cannot know whether a failed POST took effect: only a request that is safe to repeat "+
				"(GET, or one carrying an Idempotency-Key) may be retried.", r.spy.Count(), r.sys.Ledger.Total())
		}
	})
}

func TestStep2KeyedChargeIsRetried(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		r := newRig(t, options{keyed: true})
		require.NoError(t, r.sys.Faults.Set("payment", charges, faults.Fault{Status: http.StatusServiceUnavailable}))

		_, err := r.sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		require.Error(t, err, "step 2: payment answered every charge with 503, yet the order was placed")
		if documented := 3; r.spy.Count() != documented {
			t.Fatalf("step 2: payment answered 503 to a charge carrying an Idempotency-Key; your Transport made %d attempts, "+
				"want %d (a zero Transport makes the documented 3 attempts in all). A keyed POST is safe to repeat: the "+
				"server recognises the repeat.", r.spy.Count(), documented)
		}
	})
}
