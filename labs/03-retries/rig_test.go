package retries_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
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

// The test rig: the whole food-delivery system, with your Transport as the
// transport of the order service's payment client:
//
//	order service -> [chargeKeys] -> your Transport -> spy -> net/http.Transport -> payment
//
// The spy sits below your Transport, so it counts your attempts exactly
// (net/http.Transport may resend a request on its own below it; see the
// README). chargeKeys, when on, gives every charge an Idempotency-Key, as
// the order service will once lab 08 is done.
type rig struct {
	sys       *system.System
	spy       *spy
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
			r.spy = newSpy(n)
			r.spy.base.ResponseHeaderTimeout = o.attemptTimeout
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
	t.Cleanup(r.spy.closeBodies)
	return r
}

// received is how many requests reached payment's route.
func (r *rig) received(route string) int64 {
	return r.sys.Metrics.Route("payment", route).Received.Load()
}

var pizza = fooddelivery.PlaceOrderInput{
	RestaurantID: system.SampleRestaurant,
	Items:        []fooddelivery.OrderItem{{DishID: system.SampleDish, Quantity: 2}},
	Card:         "tok_visa",
}

// spy is an http.RoundTripper below the Transport under test. It records
// every attempt, runs the test's hooks around them, tracks what happens to
// each response body, and counts the connections dialled.
type spy struct {
	base  *http.Transport
	dials atomic.Int64

	mu       sync.Mutex
	attempts []*attempt
	before   func(n int)               // runs before attempt n (1-based) is sent
	after    func(n int)               // runs when attempt n's answer arrived
	swapBody func(n int) io.ReadCloser // replaces the body of attempt n's response, when not nil
}

type attempt struct {
	start, end time.Time
	status     int   // 0 when no response arrived
	err        error // the transport's error, if any
	body       *trackedBody
}

func newSpy(n *memnet.Network) *spy {
	s := &spy{}
	d := &memnet.Dialer{Network: n}
	s.base = &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		s.dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}}
	return s
}

func (s *spy) RoundTrip(req *http.Request) (*http.Response, error) {
	a := &attempt{start: time.Now()}
	s.mu.Lock()
	s.attempts = append(s.attempts, a)
	n := len(s.attempts)
	before, after, swap := s.before, s.after, s.swapBody
	s.mu.Unlock()
	if before != nil {
		before(n)
	}
	resp, err := s.base.RoundTrip(req)
	s.mu.Lock()
	a.end, a.err = time.Now(), err
	if resp != nil {
		a.status = resp.StatusCode
		if swap != nil {
			if b := swap(n); b != nil {
				resp.Body.Close()
				resp.Body = b
			}
		}
		a.body = &trackedBody{ReadCloser: resp.Body}
		resp.Body = a.body
	}
	s.mu.Unlock()
	if after != nil {
		after(n)
	}
	return resp, err
}

// CloseIdleConnections lets the system close the connections at shutdown.
func (s *spy) CloseIdleConnections() { s.base.CloseIdleConnections() }

// closeBodies closes every response body that is still open.
func (s *spy) closeBodies() {
	for _, a := range s.all() {
		if a.body != nil {
			a.body.Close()
		}
	}
}

// count is the number of attempts so far.
func (s *spy) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.attempts)
}

// all returns a copy of the attempts so far.
func (s *spy) all() []attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]attempt, len(s.attempts))
	for i, a := range s.attempts {
		out[i] = *a
	}
	return out
}

// gaps returns the time between the end of each attempt and the start of
// the next one (for a single request's attempts).
func (s *spy) gaps() []time.Duration {
	all := s.all()
	var out []time.Duration
	for i := 1; i < len(all); i++ {
		out = append(out, all[i].start.Sub(all[i-1].end))
	}
	return out
}

// trackedBody records how much of a response body was read, whether it
// was read to the end, and whether it was closed.
type trackedBody struct {
	io.ReadCloser
	mu     sync.Mutex
	read   int64
	eof    bool
	closed bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.mu.Lock()
	b.read += int64(n)
	if err == io.EOF {
		b.eof = true
	}
	b.mu.Unlock()
	return n, err
}

func (b *trackedBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return b.ReadCloser.Close()
}

func (b *trackedBody) state() (read int64, eof, closed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.read, b.eof, b.closed
}

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
func (s *streamBody) Close() error               { return nil }

// bigBody is a response body of size bytes, for the bounded-drain test.
func bigBody(size int) io.ReadCloser {
	return io.NopCloser(io.LimitReader(zeros{}, int64(size)))
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
