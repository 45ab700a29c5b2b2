package retries_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	retries "github.com/gophereats/resilience/labs/03-retries"
)

func TestStep1Classification(t *testing.T) {
	cases := []struct {
		what string
		resp *http.Response
		err  error
		want bool
		why  string
	}{
		{"HTTP 200", response(200), nil, false, "a success is not retried"},
		{"HTTP 201", response(201), nil, false, "a success is not retried"},
		{"HTTP 429", response(429), nil, true, "too many requests now; the server will take it later (step 4: after the wait it asks for)"},
		{"HTTP 502", response(502), nil, true, "a proxy could not reach the server: usually a moment's trouble"},
		{"HTTP 503", response(503), nil, true, "unavailable for a moment (a failover, a restart)"},
		{"HTTP 504", response(504), nil, true, "a proxy gave up waiting: the next try may be quicker"},
		{"HTTP 400", response(400), nil, false, "a malformed request will be malformed again"},
		{"HTTP 401", response(401), nil, false, "retrying does not log anyone in"},
		{"HTTP 403", response(403), nil, false, "retrying does not grant permission"},
		{"HTTP 404", response(404), nil, false, "not found will be not found again"},
		{"HTTP 409", response(409), nil, false, "a conflict needs a decision, not a repeat"},
		{"HTTP 422", response(422), nil, false, "the server understood and refused the request itself"},
		{"HTTP 500", response(500), nil, false,
			"the server failed in a way it did not expect and may fail the same way again (this lab's choice: see the README)"},
		{"HTTP 501", response(501), nil, false, "not implemented now, not implemented in 100ms"},
		{"HTTP 503 with " + fooddelivery.HeaderDontRetry + ": 1", response(503, fooddelivery.HeaderDontRetry, "1"), nil, false,
			"the server says it is overloaded and asks callers not to add load"},
		{"HTTP 429 with " + fooddelivery.HeaderDontRetry + ": 1", response(429, fooddelivery.HeaderDontRetry, "1"), nil, false,
			"X-Dont-Retry: 1 forbids a retry whatever the status"},
		{"HTTP 502 with " + fooddelivery.HeaderDontRetry + ": 1", response(502, fooddelivery.HeaderDontRetry, "1"), nil, false,
			"a layer below already retried and asks you not to multiply its attempts (lab 04), whatever the status"},
		{"a connection reset", nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true,
			"the connection dropped; a new one may well work"},
		{"a refused connection", nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true,
			"nothing was sent, and the server may be back in a moment"},
		{"a response cut short", nil, io.ErrUnexpectedEOF, true, "the connection dropped mid-answer"},
		{"an attempt's own timeout (an error matching context.DeadlineExceeded)", nil,
			fmt.Errorf("net/http: timeout awaiting response headers: %w", context.DeadlineExceeded), true,
			"net/http's ResponseHeaderTimeout error matches context.DeadlineExceeded, like the caller's deadline; " +
				"the next attempt may be quicker. Whether the caller is still waiting is RoundTrip's question " +
				"(req.Context().Err()), not Retryable's"},
		{"an open circuit breaker", nil, fmt.Errorf("payment: %w", fooddelivery.ErrCircuitOpen), false,
			"the breaker already knows the dependency is failing (lab 05)"},
		{"a full bulkhead", nil, fmt.Errorf("payment: %w", fooddelivery.ErrBulkheadFull), false,
			"this client already has as many calls in flight as it allows; another one would only add to the queue (lab 06)"},
	}
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		wrong := 0
		for _, c := range cases {
			if got := retries.Retryable(c.resp, c.err); got != c.want {
				wrong++
				t.Errorf("step 1: Retryable(%s) = %v, want %v: %s", c.what, got, c.want, c.why)
			}
		}
		if wrong > 0 {
			t.Errorf("step 1: Retryable judged %d of these %d attempt outcomes wrongly", wrong, len(cases))
		}
	})
}

func TestStep1FailoverIsRetried(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault faults.Fault
	}{
		{"payment answers 503", faults.Fault{Status: http.StatusServiceUnavailable}},
		{"payment resets the connection", faults.Fault{Reset: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
				r := newRig(t, options{})
				require.NoError(t, r.sys.Faults.Set("payment", listing, c.fault))
				r.spy.Before = func(n int) {
					if n == 2 { // the failover is over by the time of the retry
						r.sys.Faults.Clear("payment", listing)
					}
				}
				_, err := r.payments.Charges(context.Background(), "")
				if err != nil || r.spy.Count() != 2 {
					t.Fatalf("step 1: %s once, then recovered; a read of the charges (GET /charges) made %d attempts "+
						"and ended with error %v. A transient failure of an idempotent request deserves a second attempt, "+
						"which would have succeeded.", c.name, r.spy.Count(), err)
				}
			})
		})
	}
}

func TestStep1AttemptTimeoutIsRetried(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		const attemptTimeout = 500 * time.Millisecond
		r := newRig(t, options{attemptTimeout: attemptTimeout})
		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Latency: 2 * time.Second}))
		r.spy.Before = func(n int) {
			if n == 2 { // payment is quick again by the time of the retry
				r.sys.Faults.Clear("payment", listing)
			}
		}
		_, err := r.payments.Charges(context.Background(), "") // the caller has no deadline
		if all := r.spy.Attempts(); err != nil || len(all) != 2 {
			var first error
			if len(all) > 0 {
				first = all[0].Err
			}
			t.Fatalf("step 1: the first attempt of a read of the charges timed out after %v (net/http's "+
				"ResponseHeaderTimeout; its error %q matches context.DeadlineExceeded: %v), and payment was quick "+
				"again for a retry; your Transport made %d attempts and the read ended with error %v. The caller "+
				"had no deadline and was still waiting: an attempt's own timeout is transient. Only the caller's "+
				"deadline or cancellation is final, and only the request's context tells which (req.Context().Err()).",
				attemptTimeout, first, errors.Is(first, context.DeadlineExceeded), len(all), err)
		}
	})
}

func TestStep1CallerDeadlineIsFinal(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		const budget = time.Second
		r := newRig(t, options{})
		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Latency: 3 * time.Second}))

		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		began := time.Now()
		_, err := r.payments.Charges(ctx, "")
		took := time.Since(began)

		if r.spy.Count() != 1 || took > budget+tolerance || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("step 1: the caller's deadline (%v) passed while payment was still working on the first attempt; "+
				"your Transport made %d attempts and returned after %v with %q. Once the caller has left, no attempt "+
				"can help: after each attempt, if req.Context().Err() is not nil, return what you have.",
				budget, r.spy.Count(), took, err)
		}
	})
}

func TestStep1CallerWhoLeftGetsTheAnswer(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		r := newRig(t, options{})
		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable}))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r.spy.After = func(int) { cancel() } // the user closes the app as payment's 503 arrives
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, memnet.ServiceURL("payment")+"/charges?orderId=o-1", nil)
		require.NoError(t, err, "step 1: building the read of the charges")

		resp, err := r.transport.RoundTrip(req)
		status := 0
		if resp != nil {
			status = resp.StatusCode
			defer resp.Body.Close()
		}
		if r.spy.Count() != 1 || status != http.StatusServiceUnavailable {
			t.Fatalf("step 1: the caller cancelled its read just as payment's 503 arrived; your Transport made %d attempts "+
				"and returned status %d with error %v, want 1 attempt and payment's 503. Once req.Context().Err() is not "+
				"nil, nobody waits for another attempt: return the answer you have, right after the attempt.",
				r.spy.Count(), status, err)
		}
		if read, _, closed := r.spy.Attempts()[0].Body.State(); read != 0 || closed {
			t.Fatalf("step 1: the caller cancelled as payment's 503 arrived; your Transport returned that 503 after "+
				"reading %d bytes of its body (closed: %v). The answer you return is the caller's to read and close.",
				read, closed)
		}
	})
}

func TestStep1PermanentFailuresAreNotRetried(t *testing.T) {
	for _, status := range []int{400, 404, 409, 422, 500, 501} {
		t.Run(fmt.Sprintf("HTTP %d", status), func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
				r := newRig(t, options{})
				require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: status}))
				_, err := r.payments.Charges(context.Background(), "")
				require.Error(t, err, "step 1: payment answered %d, yet the read succeeded", status)
				if r.spy.Count() != 1 {
					t.Fatalf("step 1: payment answered HTTP %d (%s) to GET /charges; your Transport sent the request %d times "+
						"(payment received %d). The same request gets the same answer: a retry only adds load and delay.",
						status, http.StatusText(status), r.spy.Count(), r.received(listing))
				}
			})
		})
	}
}
