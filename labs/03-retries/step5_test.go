package retries_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	retries "github.com/gophereats/resilience/labs/03-retries"
)

func TestStep5RetriedChargeSendsItsBody(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
		r := newRig(t, options{keyed: true})
		require.NoError(t, r.sys.Faults.Set("payment", charges, faults.Fault{Status: http.StatusServiceUnavailable}))
		r.spy.Before = func(n int) {
			if n == 2 {
				r.sys.Faults.Clear("payment", charges)
			}
		}

		placed, err := r.sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		if err != nil {
			a := r.spy.Attempts()
			var last error
			if len(a) > 0 {
				last = a[len(a)-1].Err
			}
			t.Fatalf("step 5: payment answered 503 to the first charge and was healthy for the retry, yet the order failed "+
				"with %q after %d attempts (charge requests that reached payment: %d; the last attempt's transport error: %v). "+
				"A request body is read once, by the first attempt: each retry must send a fresh copy from "+
				"req.GetBody, on a copy of the request (req.Clone).", err, len(a), r.received(charges), last)
		}
		require.Equal(t, 1, r.sys.Ledger.ChargesFor(placed.ID), "step 5: the order must be charged exactly once")
		require.Equal(t, placed.TotalCents, r.sys.Ledger.TotalCents(), "step 5: the retried charge must carry the order's full amount")
	})
}

func TestStep5CallersRequestIsUntouched(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
		r := newRig(t, options{})
		require.NoError(t, r.sys.Faults.Set("payment", charges, faults.Fault{Status: http.StatusServiceUnavailable}))
		r.spy.Before = func(n int) {
			if n == 2 {
				r.sys.Faults.Clear("payment", charges)
			}
		}
		req, err := http.NewRequest(http.MethodPost, memnet.ServiceURL("payment")+"/charges",
			bytes.NewReader([]byte(`{"orderId":"o-untouched","amountCents":2400,"card":"tok_visa"}`)))
		require.NoError(t, err, "step 5: building the charge request")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(fooddelivery.HeaderIdempotencyKey, "charge-o-untouched")
		body, header := req.Body, req.Header.Clone()

		resp, err := (&http.Client{Transport: r.transport}).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		if err != nil || r.spy.Count() != 2 {
			t.Fatalf("step 5: payment answered 503 to a keyed charge, then was healthy; your Transport made %d attempts "+
				"and ended with error %v, want 2 attempts and the charge accepted.", r.spy.Count(), err)
		}
		if req.Body != body {
			t.Fatalf("step 5: after a charge retried in %d attempts, the caller's request has a different Body than the one "+
				"it was given: a RoundTripper must not modify the request it receives (the caller may reuse or log it). "+
				"Put the fresh body on a copy: r := req.Clone(req.Context()); r.Body, _ = req.GetBody().", r.spy.Count())
		}
		if !maps.EqualFunc(req.Header, header, slices.Equal) {
			t.Fatalf("step 5: after a retried charge, the caller's headers changed (%d fields now, %d before): a RoundTripper "+
				"must not modify the request it receives. Set headers on the copy (req.Clone), not on req.",
				len(req.Header), len(header))
		}
	})
}

func TestStep5FailedBodiesAreDrainedAndClosed(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault faults.Fault
	}{
		{"payment answers 503", faults.Fault{Status: http.StatusServiceUnavailable}},
		{"payment answers 503 with Retry-After: 1", faults.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
				r := newRig(t, options{})
				require.NoError(t, r.sys.Faults.Set("payment", listing, c.fault))
				r.spy.Before = func(n int) {
					if n == 3 {
						r.sys.Faults.Clear("payment", listing)
					}
				}
				_, err := r.payments.Charges(context.Background(), "")
				require.NoError(t, err, "step 5: %s twice, then was healthy; the third attempt should have succeeded", c.name)

				all := r.spy.Attempts()
				require.Len(t, all, 3, "step 5: two 503s and a success make three attempts")
				for i, a := range all[:2] {
					read, eof, closed := a.Body.State()
					if !closed {
						t.Errorf("step 5: %s; the body of failed attempt %d was never closed: it pins its connection, and "+
							"the goroutine reading it, until the server gives up. Close every body you do not return.", c.name, i+1)
					} else if !eof {
						t.Errorf("step 5: %s; the body of failed attempt %d was closed after reading %d bytes, before its end: "+
							"net/http then discards the connection, and payment was dialled %d times for 3 attempts. "+
							"Read the rest (a bounded amount, io.LimitReader) before closing, so the connection is reused.",
							c.name, i+1, read, r.dials.Load())
					}
				}
			})
		})
	}
}

func TestStep5FailedBodyIsClosedBeforeTheWait(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 5, Stuck: "the read of the charges was still waiting to retry after its caller left"}, func(t *testing.T) {
		const into = time.Second // when the test looks, and the caller then cancels
		r := newRig(t, options{configure: func(tr *retries.Transport) {
			tr.Attempts, tr.BaseDelay, tr.MaxDelay = 2, time.Minute, time.Minute
		}})
		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable}))

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		type look struct {
			read         int64
			eof, closed  bool
			attempts     int
			looked, done bool
		}
		var during look
		stop := func() bool { return false }
		r.spy.After = func(n int) {
			if n == 1 { // one second into the wait before the retry, look at the failed answer, then leave
				timer := time.AfterFunc(into, func() {
					body := r.spy.Attempts()[0].Body
					during.read, during.eof, during.closed = body.State()
					during.attempts, during.looked = r.spy.Count(), true
					cancel()
				})
				stop = timer.Stop
			}
		}
		_, err := r.payments.Charges(ctx, "")
		stop()
		first := r.spy.Attempts()[0]
		if !during.looked {
			t.Fatalf("step 5: payment answered 503; with BaseDelay = MaxDelay = 1 minute the wait before the retry is "+
				"r x 1 minute, yet your Transport had made %d attempt(s) and returned %v before the test looked, %v after "+
				"the first answer (see step 3: wait Backoff(attempt, ...) between attempts).", r.spy.Count(), err, into)
		}
		if during.attempts != 1 {
			t.Fatalf("step 5: payment answered 503; with BaseDelay = MaxDelay = 1 minute the wait before the retry is "+
				"r x 1 minute, yet %v after the first answer your Transport had already made %d attempts (see step 3: "+
				"wait Backoff(attempt, ...) between attempts).", into, during.attempts)
		}
		if !during.closed || !during.eof {
			t.Errorf("step 5: payment answered 503; %v into the wait before the retry, the failed answer's body had been "+
				"read %d bytes (to its end: %t) and closed: %t. Drain it (at most 4 KiB) and close it before the wait, "+
				"not after: its connection is idle during the wait and can go back to the pool, and a wait the caller "+
				"ends returns straight away.", into, during.read, during.eof, during.closed)
		}
		if read, _, closed := first.Body.State(); !closed {
			t.Errorf("step 5: the caller cancelled %v into the wait before the retry; your Transport returned %v without "+
				"ever closing the failed answer's body (%d bytes read): it pins its connection, and the goroutine reading "+
				"it, until payment gives up. Drain and close it before waiting, so that no way out of the wait leaks it.",
				into, err, read)
		}
	})
}

func TestStep5DrainIsBounded(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
		const size, bound = 16 << 20, 8 << 10
		r := newRig(t, options{})
		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable}))
		r.spy.SwapBody = func(n int) io.ReadCloser {
			if n == 1 {
				return bigBody(size) // a proxy's error page gone wrong
			}
			return nil
		}
		r.spy.Before = func(n int) {
			if n == 2 {
				r.sys.Faults.Clear("payment", listing)
			}
		}
		_, err := r.payments.Charges(context.Background(), "")
		require.NoError(t, err, "step 5: payment answered 503 once, then was healthy; the retry should have succeeded")
		read, _, closed := r.spy.Attempts()[0].Body.State()
		if read > bound || !closed {
			t.Fatalf("step 5: a failed attempt's body was %d MiB; your Transport read %d bytes of it (closed: %v). "+
				"Draining is worth it for a small error body, not for an unbounded one: read at most 4 KiB "+
				"(io.LimitReader), then close, and let net/http drop the connection if more was left.",
				size>>20, read, closed)
		}
	})
}

func TestStep5StreamedKeyedChargeIsSentOnce(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
		r := newRig(t, options{})
		require.NoError(t, r.sys.Faults.Set("payment", charges, faults.Fault{Status: http.StatusServiceUnavailable}))
		data, err := json.Marshal(fooddelivery.ChargeRequest{OrderID: "o-streamed", AmountCents: 2400, Card: "tok_visa"})
		require.NoError(t, err, "step 5: encoding the charge")
		// A body http.NewRequest does not know (a stream, not a bytes.Reader
		// or a strings.Reader): GetBody stays nil.
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost,
			memnet.ServiceURL("payment")+"/charges", &streamBody{r: bytes.NewReader(data)})
		require.NoError(t, err, "step 5: building the charge request")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(fooddelivery.HeaderIdempotencyKey, "charge-o-streamed")

		var resp *http.Response
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("step 5: a keyed charge with a streamed body (req.GetBody == nil) met a 503, and your "+
						"Transport panicked: %v. A body that is neither nil nor http.NoBody and has no GetBody cannot "+
						"be sent again: make one attempt only.", p)
				}
			}()
			resp, err = (&http.Client{Transport: r.transport}).Do(req)
		}()
		if resp != nil {
			defer resp.Body.Close()
		}
		if n := r.spy.Count(); n != 1 || err != nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("step 5: a charge with an Idempotency-Key but a streamed body (req.GetBody == nil) met a 503; your "+
				"Transport sent it %d times and returned error %v. The first attempt used the stream up and nothing "+
				"can produce it again, so a retry would send an empty or truncated charge: a body that is neither nil "+
				"nor http.NoBody and has no GetBody gets one attempt only (return payment's 503).", n, err)
		}
	})
}
