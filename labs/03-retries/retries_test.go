package retries_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
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

const (
	charges   = "POST /charges" // payment's charge route
	listing   = "GET /charges"  // payment's read route: the charges of an order
	tolerance = time.Millisecond
)

// callError is the *fooddelivery.CallError in err's chain, or nil.
func callError(err error) *fooddelivery.CallError {
	var ce *fooddelivery.CallError
	if errors.As(err, &ce) {
		return ce
	}
	return nil
}

func response(status int, header ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return &http.Response{StatusCode: status, Header: h, Body: http.NoBody}
}

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
		for _, c := range cases {
			if got := retries.Retryable(c.resp, c.err); got != c.want {
				t.Errorf("step 1: Retryable(%s) = %v, want %v: %s", c.what, got, c.want, c.why)
			}
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
				r.spy.before = func(n int) {
					if n == 2 { // the failover is over by the time of the retry
						r.sys.Faults.Clear("payment", listing)
					}
				}
				_, err := r.payments.Charges(context.Background(), "")
				if err != nil || r.spy.count() != 2 {
					t.Fatalf("step 1: %s once, then recovered; a read of the charges (GET /charges) made %d attempts "+
						"and ended with error %v. A transient failure of an idempotent request deserves a second attempt, "+
						"which would have succeeded.", c.name, r.spy.count(), err)
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
		r.spy.before = func(n int) {
			if n == 2 { // payment is quick again by the time of the retry
				r.sys.Faults.Clear("payment", listing)
			}
		}
		_, err := r.payments.Charges(context.Background(), "") // the caller has no deadline
		if all := r.spy.all(); err != nil || len(all) != 2 {
			var first error
			if len(all) > 0 {
				first = all[0].err
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

		if r.spy.count() != 1 || took > budget+tolerance || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("step 1: the caller's deadline (%v) passed while payment was still working on the first attempt; "+
				"your Transport made %d attempts and returned after %v with %q. Once the caller has left, no attempt "+
				"can help: after each attempt, if req.Context().Err() is not nil, return what you have.",
				budget, r.spy.count(), took, err)
		}
	})
}

func TestStep1CallerWhoLeftGetsTheAnswer(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		r := newRig(t, options{})
		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable}))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r.spy.after = func(int) { cancel() } // the user closes the app as payment's 503 arrives
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, memnet.ServiceURL("payment")+"/charges?orderId=o-1", nil)
		require.NoError(t, err, "step 1: building the read of the charges")

		resp, err := r.transport.RoundTrip(req)
		status := 0
		if resp != nil {
			status = resp.StatusCode
			defer resp.Body.Close()
		}
		if r.spy.count() != 1 || status != http.StatusServiceUnavailable {
			t.Fatalf("step 1: the caller cancelled its read just as payment's 503 arrived; your Transport made %d attempts "+
				"and returned status %d with error %v, want 1 attempt and payment's 503. Once req.Context().Err() is not "+
				"nil, nobody waits for another attempt: return the answer you have, right after the attempt.",
				r.spy.count(), status, err)
		}
		if read, _, closed := r.spy.all()[0].body.state(); read != 0 || closed {
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
				if r.spy.count() != 1 {
					t.Fatalf("step 1: payment answered HTTP %d (%s) to GET /charges; your Transport sent the request %d times "+
						"(payment received %d). The same request gets the same answer: a retry only adds load and delay.",
						status, http.StatusText(status), r.spy.count(), r.received(listing))
				}
			})
		})
	}
}

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
	cases := []struct {
		what string
		req  *http.Request
		want bool
		why  string
	}{
		{"GET", req(http.MethodGet, ""), true, "a read changes nothing"},
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
		for _, c := range cases {
			if got := retries.Idempotent(c.req); got != c.want {
				t.Errorf("step 2: Idempotent(%s) = %v, want %v: %s", c.what, got, c.want, c.why)
			}
		}
	})
}

func TestStep2ChargeWithoutKeyIsNotRetried(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		r := newRig(t, options{}) // the order service sends charges without an Idempotency-Key
		require.NoError(t, r.sys.Faults.Set("payment", charges, faults.Fault{LoseResponse: true}))

		_, err := r.sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		require.Error(t, err, "step 2: every charge's answer was lost, yet the order was placed")
		if r.spy.count() != 1 {
			t.Fatalf("step 2: payment charged the card and the answer was lost on the way back; your Transport sent the "+
				"charge, a POST without an Idempotency-Key, %d times (charges executed: %d). "+
				"The client cannot know whether a failed POST took effect: only a request that is safe to repeat "+
				"(GET, or one carrying an Idempotency-Key) may be retried.", r.spy.count(), r.sys.Ledger.Total())
		}
	})
}

func TestStep2KeyedChargeIsRetried(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		r := newRig(t, options{keyed: true})
		require.NoError(t, r.sys.Faults.Set("payment", charges, faults.Fault{Status: http.StatusServiceUnavailable}))

		_, err := r.sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		require.Error(t, err, "step 2: payment answered every charge with 503, yet the order was placed")
		if r.spy.count() != retries.DefaultAttempts {
			t.Fatalf("step 2: payment answered 503 to a charge carrying an Idempotency-Key; your Transport made %d attempts, "+
				"want %d (DefaultAttempts). A keyed POST is safe to repeat: the server recognises the repeat.",
				r.spy.count(), retries.DefaultAttempts)
		}
	})
}

func TestStep3BackoffFullJitter(t *testing.T) {
	const ms = time.Millisecond
	cases := []struct {
		attempt   int
		base, cap time.Duration
		r         float64
		want      time.Duration
	}{
		{1, 100 * ms, 2 * time.Second, 0, 0},
		{1, 100 * ms, 2 * time.Second, 0.5, 100 * ms},  // ceiling 200ms
		{2, 100 * ms, 2 * time.Second, 0.25, 100 * ms}, // ceiling 400ms
		{3, 100 * ms, 2 * time.Second, 0.75, 600 * ms}, // ceiling 800ms
		{4, 100 * ms, 2 * time.Second, 0.5, 800 * ms},  // ceiling 1.6s
		{5, 100 * ms, 2 * time.Second, 0.5, time.Second},
		{0, 100 * ms, 2 * time.Second, 0.5, 50 * ms},
		{6, 5 * ms, 2 * time.Second, 0.1, 32 * ms},
		{9, 5 * ms, 2 * time.Second, 0.9, 1800 * ms},
	}
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		for _, c := range cases {
			got := retries.Backoff(c.attempt, c.base, c.cap, c.r)
			if d := got - c.want; d < -time.Microsecond || d > time.Microsecond {
				ceiling := min(c.cap, c.base<<c.attempt)
				t.Errorf("step 3: Backoff(attempt %d, base %v, cap %v, r %v) = %v, want %v: full jitter is r x min(cap, base x 2^attempt) = %v x %v",
					c.attempt, c.base, c.cap, c.r, got, c.want, c.r, ceiling)
			}
		}
		if a, b := retries.Backoff(3, 100*ms, 2*time.Second, 0.1), retries.Backoff(3, 100*ms, 2*time.Second, 0.9); a == b {
			t.Errorf("step 3: Backoff gives %v whether r is 0.1 or 0.9: without jitter, clients that failed together retry together", a)
		}
	})
}

func TestStep3BackoffNeverOverflows(t *testing.T) {
	cases := []struct {
		attempt   int
		base, cap time.Duration
	}{
		{31, 100 * time.Millisecond, 2 * time.Second},
		{40, 100 * time.Millisecond, 2 * time.Second},
		{62, 100 * time.Millisecond, 2 * time.Second},
		{63, 100 * time.Millisecond, 2 * time.Second},
		{64, 100 * time.Millisecond, 2 * time.Second},
		{100, 100 * time.Millisecond, 2 * time.Second},
		{math.MaxInt, 100 * time.Millisecond, 2 * time.Second},
		{40, time.Hour, 24 * time.Hour},
		{63, time.Nanosecond, time.Minute},
	}
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		for _, c := range cases {
			got := retries.Backoff(c.attempt, c.base, c.cap, 0.5)
			if want := c.cap / 2; got < want-time.Microsecond || got > want+time.Microsecond {
				t.Errorf("step 3: Backoff(attempt %d, base %v, cap %v, r 0.5) = %v, want %v (half the cap). "+
					"base x 2^attempt does not fit in an int64 of nanoseconds: compare with the cap before multiplying.",
					c.attempt, c.base, c.cap, got, want)
			}
		}
	})
}

func TestStep3AtMostNAttempts(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3, Stuck: "the read of the charges was still retrying"}, func(t *testing.T) {
		const attempts = 4
		base, ceiling := 100*time.Millisecond, time.Second
		r := newRig(t, options{configure: func(tr *retries.Transport) {
			tr.Attempts, tr.BaseDelay, tr.MaxDelay = attempts, base, ceiling
		}})
		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable}))

		_, err := r.payments.Charges(context.Background(), "")
		require.ErrorIs(t, err, fooddelivery.ErrUnavailable, "step 3: payment answered 503 every time; the caller must learn that it was unavailable")
		if r.spy.count() != attempts {
			t.Fatalf("step 3: payment answered 503 every time; with Attempts = %d your Transport made %d attempts. "+
				"Attempts counts every attempt, the first included.", attempts, r.spy.count())
		}
		if ce := callError(err); ce == nil || ce.Message == "" {
			t.Fatalf("step 3: after %d attempts your Transport returned payment's last 503, but its body had already been "+
				"read: the caller got no explanation (error: %v). The answer you return is the caller's to read and "+
				"close: drain only the answers you throw away.", attempts, err)
		}
		gaps := r.spy.gaps()
		var total time.Duration
		for i, g := range gaps {
			total += g
			if limit := retries.Backoff(i+1, base, ceiling, 1); g > limit+tolerance {
				t.Errorf("step 3: your Transport waited %v before retry %d; full jitter waits at most min(cap, base x 2^%d) = %v",
					g, i+1, i+1, limit)
			}
		}
		if total == 0 {
			t.Errorf("step 3: your Transport retried at once (waits %v). While payment is failing over, an immediate "+
				"retry arrives while it is still down, and a thousand clients retrying at once are a thousand-fold "+
				"load: wait Backoff(attempt, ...) between attempts.", gaps)
		}
	})
}

func TestStep3RetriesAreSpreadOut(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		const clients = 20
		r := newRig(t, options{configure: func(tr *retries.Transport) { tr.Attempts = 2 }})
		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable}))

		began := time.Now()
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() { r.payments.Charges(context.Background(), "") })
		}
		wg.Wait()

		instants := map[time.Time]bool{}
		for _, a := range r.spy.all() {
			if a.start.After(began) {
				instants[a.start] = true
			}
		}
		if len(instants) == 0 {
			t.Fatalf("step 3: %d requests failed at the same moment and all %d retried at that very instant, "+
				"without waiting: a thundering herd. Wait Backoff(attempt, ...) before each retry.", clients, clients)
		}
		if len(instants) < clients*3/4 {
			t.Fatalf("step 3: %d requests failed at the same moment and their retries went out at %d distinct instants "+
				"(want at least %d): clients that fail together and wait the same time retry together, in waves. "+
				"Full jitter spreads them over the whole backoff interval.", clients, len(instants), clients*3/4)
		}
	})
}

func TestStep3WaitEndsOnCancel(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3, Stuck: "the read of the charges was still waiting to retry after its caller left"}, func(t *testing.T) {
		r := newRig(t, options{configure: func(tr *retries.Transport) {
			tr.Attempts, tr.BaseDelay, tr.MaxDelay = 5, time.Minute, time.Minute
		}})
		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable}))

		ctx, cancel := context.WithCancel(context.Background())
		var cancelled time.Time
		stop := func() bool { return false }
		r.spy.after = func(n int) {
			if n == 1 { // the user closes the app one second into the wait
				timer := time.AfterFunc(time.Second, func() { cancelled = time.Now(); cancel() })
				stop = timer.Stop
			}
		}
		began := time.Now()
		_, err := r.payments.Charges(ctx, "")
		returned := time.Now()
		stop()
		cancel()

		all := r.spy.all()
		early := 0 // attempts sent in the second between the first answer and the cancel
		for _, a := range all {
			if a.start.Before(all[0].end.Add(time.Second)) {
				early++
			}
		}
		if early > 1 {
			how := "Did it use BaseDelay and MaxDelay (the defaults only when they are zero)?"
			if gaps := r.spy.gaps(); gaps[0] == 0 {
				how = "It did not wait at all: wait Backoff(attempt, ...) between attempts."
			}
			t.Fatalf("step 3: payment answered 503 every time; with BaseDelay = MaxDelay = 1 minute the first wait is "+
				"r x 1 minute, yet your Transport sent %d attempts within the first second. %s", early, how)
		}
		if cancelled.IsZero() {
			t.Fatalf("step 3: payment answered 503 every time; with Attempts = 5 and waits of up to a minute, your Transport "+
				"gave up after %d attempts and %v (error: %v), before the caller cancelled one second into the first wait. "+
				"Did it wait between attempts at all?", r.spy.count(), returned.Sub(began), err)
		}
		if late := returned.Sub(cancelled); late > tolerance {
			t.Fatalf("step 3: the caller cancelled during a wait between attempts, but your Transport returned %v later: "+
				"a sleep that does not watch the context keeps a goroutine (and the caller's slot) busy for nothing. "+
				"Wait with a select on ctx.Done() and a timer.", late)
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("step 3: the caller cancelled one second into the wait after payment's 503; the read ended with %v, "+
				"want an error matching context.Canceled: the wait ended because the caller left, so return ctx.Err().", err)
		}
		for i, a := range all {
			if a.start.After(cancelled) {
				t.Fatalf("step 3: your Transport sent attempt %d after the caller had cancelled", i+1)
			}
		}
	})
}

func TestStep3NoWaitPastTheDeadline(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		const budget = time.Second
		r := newRig(t, options{configure: func(tr *retries.Transport) { tr.Attempts = 10 }})
		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable}))

		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		began := time.Now()
		_, err := r.payments.Charges(ctx, "")
		took := time.Since(began)

		if took >= budget || errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, fooddelivery.ErrUnavailable) {
			t.Fatalf("step 3: payment answered 503 every time and the caller's deadline was %v away; your Transport made "+
				"%d attempts and returned after %v with %q. A wait that would end after the deadline leads to no "+
				"useful attempt: give up at once and return payment's last answer, so the caller learns why it "+
				"failed and keeps the time it has left.", budget, r.spy.count(), took, err)
		}
		if ce := callError(err); ce == nil || ce.Message == "" {
			t.Fatalf("step 3: your Transport gave up before the deadline and returned payment's 503, but its body had "+
				"already been read: the caller got no explanation (error: %v). Decide first whether to retry; drain only "+
				"an answer you throw away, never the one you return.", err)
		}
	})
}

func TestStep3AttemptsAreCountedBelowYourTransport(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		r := newRig(t, options{})
		_, err := r.payments.Charges(context.Background(), "") // opens a keep-alive connection
		require.NoError(t, err, "step 3: a read of the charges from a healthy payment service failed")
		warm, warmAttempts := r.received(listing), r.spy.count()

		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Reset: true}))
		_, err = r.payments.Charges(context.Background(), "")
		require.Error(t, err, "step 3: payment reset every connection, yet the read succeeded")
		yours, arrived := r.spy.count()-warmAttempts, r.received(listing)-warm
		if yours != retries.DefaultAttempts {
			t.Fatalf("step 3: payment reset every connection; your Transport made %d attempts, want %d (DefaultAttempts)",
				yours, retries.DefaultAttempts)
		}
		t.Logf("step 3: your Transport made %d attempts and payment received %d requests: net/http.Transport resent %d "+
			"on its own (see the README: a GET on a reused connection that dies before any answer is resent)",
			yours, arrived, arrived-int64(yours))
		if arrived < int64(yours) {
			t.Fatalf("step 3: payment received %d requests for %d attempts", arrived, yours)
		}
	})
}

func TestStep4ParseRetryAfter(t *testing.T) {
	now := time.Date(2026, time.March, 14, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		header string
		want   time.Duration
		ok     bool
	}{
		{"120", 2 * time.Minute, true},
		{"0", 0, true},
		{"Sat, 14 Mar 2026 12:01:30 GMT", 90 * time.Second, true},    // IMF-fixdate
		{"Saturday, 14-Mar-26 12:01:30 GMT", 90 * time.Second, true}, // RFC 850 (obsolete)
		{"Sat Mar 14 12:01:30 2026", 90 * time.Second, true},         // asctime (obsolete)
		{"Sat, 14 Mar 2026 11:59:00 GMT", 0, true},                   // already past: no wait
		{"", 0, false},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
	}
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		for _, c := range cases {
			h := http.Header{}
			if c.header != "" {
				h.Set("Retry-After", c.header)
			}
			got, ok := retries.RetryAfter(h, now)
			if got != c.want || ok != c.ok {
				t.Errorf("step 4: RetryAfter(%q) at %s = (%v, %v), want (%v, %v)",
					c.header, now.Format(time.DateTime), got, ok, c.want, c.ok)
			}
		}
	})
}

func TestStep4RetryAfterIsHonoured(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		header func(now time.Time) string
	}{
		{"503 with Retry-After in seconds", http.StatusServiceUnavailable, func(time.Time) string { return "2" }},
		{"429 with Retry-After as an HTTP-date", http.StatusTooManyRequests, func(now time.Time) string {
			return now.Add(3 * time.Second).UTC().Format(http.TimeFormat)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
				r := newRig(t, options{})
				header := c.header(time.Now())
				require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: c.status, RetryAfter: header}))
				r.spy.before = func(n int) {
					if n == 2 {
						r.sys.Faults.Clear("payment", listing)
					}
				}
				_, err := r.payments.Charges(context.Background(), "")
				gaps := r.spy.gaps()
				require.NotEmpty(t, gaps, "step 4: payment answered %d with Retry-After %q; your Transport did not retry (error: %v)",
					c.status, header, err)
				first := r.spy.all()[0]
				// What the header asks, worked out here (not with your
				// RetryAfter), from the moment the answer arrived.
				asked := time.Duration(0)
				if secs, err := strconv.Atoi(header); err == nil {
					asked = time.Duration(secs) * time.Second
				} else if when, err := http.ParseTime(header); err == nil {
					asked = when.Sub(first.end)
				}
				// The longest first backoff with the defaults: min(cap, base x 2^1).
				ceiling := min(retries.DefaultMaxDelay, 2*retries.DefaultBaseDelay)
				if longest := max(asked, ceiling); gaps[0] < asked-tolerance || gaps[0] > longest+tolerance {
					want := fmt.Sprintf("between %v and %v", asked, longest)
					if longest == asked {
						want = asked.String()
					}
					t.Fatalf("step 4: payment answered %d with Retry-After %q (%v from then); your Transport retried after %v, "+
						"want %s. Wait max(Retry-After, your backoff): never less than the server asked (a retry sooner "+
						"only meets the same answer), and longer only when your own backoff is (at most %v here).",
						c.status, header, asked, gaps[0], want, ceiling)
				}
				require.NoError(t, err, "step 4: the retry after the wait payment asked for should have succeeded")
			})
		})
	}
}

func TestStep4RetryAfterZeroKeepsTheJitter(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		const clients = 20
		r := newRig(t, options{configure: func(tr *retries.Transport) { tr.Attempts = 2 }})
		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "0"}))

		began := time.Now()
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() { r.payments.Charges(context.Background(), "") })
		}
		wg.Wait()

		instants := map[time.Time]bool{}
		for _, a := range r.spy.all() {
			if a.start.After(began) {
				instants[a.start] = true
			}
		}
		if len(instants) == 0 {
			t.Fatalf("step 4: %d reads met payment's 503 with Retry-After: 0 at the same moment, and all of them retried "+
				"at that very instant. Retry-After is the least the server asks, not a replacement for your backoff: "+
				"wait max(Retry-After, backoff), so the jitter still spreads the clients.", clients)
		}
		if len(instants) < clients*3/4 {
			t.Fatalf("step 4: %d reads met payment's 503 with Retry-After: 0 at the same moment; their retries went out at "+
				"%d distinct instants (want at least %d). Retry-After is the least the server asks, not a replacement for "+
				"your backoff: wait max(Retry-After, backoff), so the jitter still spreads the clients.",
				clients, len(instants), clients*3/4)
		}
	})
}

func TestStep4RetryAfterBeyondTheDeadline(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4}, func(t *testing.T) {
		const budget = 2 * time.Second
		r := newRig(t, options{})
		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "30"}))

		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		began := time.Now()
		_, err := r.payments.Charges(ctx, "")
		took := time.Since(began)

		if r.spy.count() != 1 || took > 10*tolerance || !errors.Is(err, fooddelivery.ErrUnavailable) {
			t.Fatalf("step 4: payment answered 503 with Retry-After: 30 and the caller's deadline was %v away; your "+
				"Transport made %d attempts and returned after %v with %q. A retry sooner than the server asked only "+
				"meets the same answer, and one after the deadline reaches nobody: return payment's 503 at once.",
				budget, r.spy.count(), took, err)
		}
	})
}

func TestStep5RetriedChargeSendsItsBody(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
		r := newRig(t, options{keyed: true})
		require.NoError(t, r.sys.Faults.Set("payment", charges, faults.Fault{Status: http.StatusServiceUnavailable}))
		r.spy.before = func(n int) {
			if n == 2 {
				r.sys.Faults.Clear("payment", charges)
			}
		}

		placed, err := r.sys.Orders().PlaceOrder(context.Background(), "alice", pizza)
		if err != nil {
			a := r.spy.all()
			var last error
			if len(a) > 0 {
				last = a[len(a)-1].err
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
		r.spy.before = func(n int) {
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
		if err != nil || r.spy.count() != 2 {
			t.Fatalf("step 5: payment answered 503 to a keyed charge, then was healthy; your Transport made %d attempts "+
				"and ended with error %v, want 2 attempts and the charge accepted.", r.spy.count(), err)
		}
		if req.Body != body {
			t.Fatalf("step 5: after a retried charge, the caller's request has a different Body than the one it was " +
				"given: a RoundTripper must not modify the request it receives (the caller may reuse or log it). " +
				"Put the fresh body on a copy: r := req.Clone(req.Context()); r.Body, _ = req.GetBody().")
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
				r.spy.before = func(n int) {
					if n == 3 {
						r.sys.Faults.Clear("payment", listing)
					}
				}
				_, err := r.payments.Charges(context.Background(), "")
				require.NoError(t, err, "step 5: %s twice, then was healthy; the third attempt should have succeeded", c.name)

				all := r.spy.all()
				require.Len(t, all, 3, "step 5: two 503s and a success make three attempts")
				for i, a := range all[:2] {
					read, eof, closed := a.body.state()
					if !closed {
						t.Errorf("step 5: %s; the body of failed attempt %d was never closed: it pins its connection, and "+
							"the goroutine reading it, until the server gives up. Close every body you do not return.", c.name, i+1)
					} else if !eof {
						t.Errorf("step 5: %s; the body of failed attempt %d was closed after reading %d bytes, before its end: "+
							"net/http then discards the connection, and payment was dialled %d times for 3 attempts. "+
							"Read the rest (a bounded amount, io.LimitReader) before closing, so the connection is reused.",
							c.name, i+1, read, r.spy.dials.Load())
					}
				}
			})
		})
	}
}

func TestStep5DrainIsBounded(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
		const size, bound = 16 << 20, 8 << 10
		r := newRig(t, options{})
		require.NoError(t, r.sys.Faults.Set("payment", listing, faults.Fault{Status: http.StatusServiceUnavailable}))
		r.spy.swapBody = func(n int) io.ReadCloser {
			if n == 1 {
				return bigBody(size) // a proxy's error page gone wrong
			}
			return nil
		}
		r.spy.before = func(n int) {
			if n == 2 {
				r.sys.Faults.Clear("payment", listing)
			}
		}
		_, err := r.payments.Charges(context.Background(), "")
		require.NoError(t, err, "step 5: payment answered 503 once, then was healthy; the retry should have succeeded")
		read, _, closed := r.spy.all()[0].body.state()
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
		if n := r.spy.count(); n != 1 || err != nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("step 5: a charge with an Idempotency-Key but a streamed body (req.GetBody == nil) met a 503; your "+
				"Transport sent it %d times and returned error %v. The first attempt used the stream up and nothing "+
				"can produce it again, so a retry would send an empty or truncated charge: a body that is neither nil "+
				"nor http.NoBody and has no GetBody gets one attempt only (return payment's 503).", n, err)
		}
	})
}
