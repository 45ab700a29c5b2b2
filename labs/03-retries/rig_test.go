package retries_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/payment"
	"github.com/gophereats/resilience/fooddelivery/system"
	retries "github.com/gophereats/resilience/labs/03-retries"
)

// The rig and the helpers of every step are here.
// The step tests are in stepN_test.go, one file per README step; the
// experiment, the last step, is in step6_experiment_test.go (go test runs
// the files in name order, so it runs after the other steps).

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

// response is a response with status and the header name/value pairs,
// for the tests that call Retryable directly.
func response(status int, header ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return &http.Response{StatusCode: status, Header: h, Body: http.NoBody}
}

// The test rig: the whole food-delivery system, with your Transport as the
// transport of the order service's payment client:
//
//	order service -> [chargeKeys] -> your Transport -> spy -> net/http.Transport -> payment
//
// The spy (a labtest.Spy) records each attempt, runs the test's hooks
// around it (Before, After, SwapBody) and tracks each response body. It
// sits below your Transport, so it counts your attempts exactly
// (net/http.Transport may resend a request on its own below it; see the
// README). chargeKeys, when on, gives every charge an Idempotency-Key, as
// the order service will once lab 08 is done.
type rig struct {
	sys       *system.System
	spy       *labtest.Spy
	base      *http.Transport // the net/http.Transport below the spy
	dials     atomic.Int64    // connections base dialled
	transport *retries.Transport
	// payments calls the payment service directly through the same
	// client the order service uses (your Transport, the spy).
	payments *payment.Client
}

// options configure a rig.
type options struct {
	keyed     bool                     // give charges an Idempotency-Key
	configure func(*retries.Transport) // set Attempts, delays, ...
	// attemptTimeout, when not zero, is the ResponseHeaderTimeout of the
	// net/http.Transport below the spy: a per-attempt timeout.
	attemptTimeout time.Duration
}

func newRig(t *testing.T, o options) *rig {
	t.Helper()
	r := &rig{}
	r.sys = labtest.StartSystem(t, system.Config{
		PaymentClient: func(n *memnet.Network) *http.Client {
			d := &memnet.Dialer{Network: n}
			r.base = &http.Transport{
				DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
					r.dials.Add(1)
					return d.DialContext(ctx, network, addr)
				},
				ResponseHeaderTimeout: o.attemptTimeout,
			}
			r.spy = &labtest.Spy{Base: r.base}
			r.transport = &retries.Transport{Base: r.spy}
			if o.configure != nil {
				o.configure(r.transport)
			}
			var rt http.RoundTripper = r.transport
			if o.keyed {
				rt = chargeKeys{rt}
			}
			return &http.Client{Transport: rt}
		},
	})
	r.payments = payment.NewClient(&http.Client{Transport: r.transport}, memnet.ServiceURL("payment"))
	// Bodies your Transport dropped without closing would pin goroutines
	// of net/http past the end of the test; step 5 checks them itself, so
	// the other steps close them here rather than report a leak.
	t.Cleanup(r.spy.CloseBodies)
	return r
}

// received is how many requests reached payment's route.
func (r *rig) received(route string) int64 {
	return labtest.Received(r.sys, "payment", route)
}

var pizza = labtest.PizzaOrder()

// chargeKeys gives every charge (POST /charges) an Idempotency-Key made
// from its order id, so that a charge may be retried. The payment service
// in this lab does not deduplicate by key yet (that is lab 08), so the
// tests only let a keyed charge fail where it was not executed.
//
// It also sends the body as a stream (streamBody) rather than the
// in-memory bytes.Reader that fooddelivery.CallJSON builds, with a
// GetBody that returns a fresh stream. net/http then sends the headers
// before the body and cannot quietly repair a body that an earlier attempt
// used up (see the README, step 5): only GetBody can.
type chargeKeys struct{ next http.RoundTripper }

func (c chargeKeys) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.URL.Path != "/charges" || req.GetBody == nil {
		return c.next.RoundTrip(req)
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	data, _ := io.ReadAll(body)
	body.Close()
	var charge fooddelivery.ChargeRequest
	if json.Unmarshal(data, &charge) != nil || charge.OrderID == "" {
		return c.next.RoundTrip(req)
	}
	keyed := req.Clone(req.Context())
	keyed.Header.Set(fooddelivery.HeaderIdempotencyKey, "charge-"+charge.OrderID)
	keyed.GetBody = func() (io.ReadCloser, error) { return &streamBody{r: bytes.NewReader(data)}, nil }
	keyed.Body, _ = keyed.GetBody()
	keyed.ContentLength = int64(len(data))
	defer req.Body.Close() // the original body is not sent; a RoundTripper closes it
	return c.next.RoundTrip(keyed)
}

// streamBody is a request body that reads like a network stream: net/http
// does not know how much of it is ready, so it sends the headers first.
type streamBody struct{ r io.Reader }

func (s *streamBody) Read(p []byte) (int, error) { return s.r.Read(p) }

func (s *streamBody) Close() error { return nil }

// bigBody is a response body of size bytes, for the bounded-drain test.
func bigBody(size int) io.ReadCloser {
	return io.NopCloser(io.LimitReader(zeros{}, int64(size)))
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
