package retry

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

// Retrier runs call, calling it again as it sees fit, and returns the
// outcome. attempt counts from 1 and is passed down to the dependency
// (fooddelivery.HeaderAttempt on the wire). key names the call (a request
// id, an order id), for example for jitter draws. Policy implements it.
type Retrier interface {
	Do(ctx context.Context, key string, call func(ctx context.Context, attempt int) error) error
}

// Layers are the three places where a checkout can be retried, from the
// user's tap down to the payment service (lab 04's integration point, set
// with system.Config.Retries). A nil layer does not retry: it makes one
// call. The zero Layers is the system without retries.
type Layers struct {
	// Gateway runs each placeOrder call of the gateway to the order
	// service. Attempts are counted on the edge "gateway" -> "order".
	Gateway Retrier
	// Order runs each call of the order service to its payment client
	// (one Charge, which the PaymentClient layer may itself retry). Its
	// attempt number reaches the wire only when PaymentClient is nil.
	Order Retrier
	// PaymentClient runs inside the payment client: each attempt is one
	// HTTP request to payment, numbered in fooddelivery.HeaderAttempt and
	// counted on the edge "order" -> "payment" (Attempts, and Retries for
	// attempt numbers above 1). This is the layer next to payment.
	PaymentClient Retrier
}

// IsZero reports whether no layer is set.
func (l Layers) IsZero() bool {
	return l.Gateway == nil && l.Order == nil && l.PaymentClient == nil
}

// NaiveLayers returns the retry loops GopherEats starts lab 04 with: every
// layer makes up to DefaultAttempts attempts and retries every failure
// (RetryEveryFailure), the "don't retry" signal included. With payment
// down, one user action reaches payment 3 x 3 x 3 = 27 times.
func NaiveLayers(seed int64) Layers {
	p := Policy{Retryable: RetryEveryFailure, Seed: seed}
	return Layers{Gateway: p, Order: p, PaymentClient: p}
}

// RetryEveryFailure is the naive classifier: it retries every error except
// the caller's own cancellation and answers that say the request itself is
// wrong (ErrRejected, ErrNotFound, ErrUnauthorized). It ignores the
// "don't retry" signal and overload, which is what makes retries multiply.
func RetryEveryFailure(err error) bool {
	switch {
	case err == nil,
		errors.Is(err, context.Canceled),
		errors.Is(err, fooddelivery.ErrRejected),
		errors.Is(err, fooddelivery.ErrNotFound),
		errors.Is(err, fooddelivery.ErrUnauthorized):
		return false
	}
	return true
}

// MarkDontRetry returns err carrying the "don't retry" signal: a layer that
// has retried as much as it will (or chose not to) marks its failure so
// that no layer above retries it again. fooddelivery.DontRetry is true for
// the result, and fooddelivery.WriteDependencyError sends the signal on in
// fooddelivery.HeaderDontRetry. Everything else about err stays reachable:
// errors.Is and errors.As see the original error and its sentinels, and the
// message is err's. A nil err returns nil.
func MarkDontRetry(err error) error {
	if err == nil || fooddelivery.DontRetry(err) {
		return err
	}
	return dontRetryError{err}
}

type dontRetryError struct{ err error }

func (e dontRetryError) Error() string { return e.err.Error() }
func (e dontRetryError) Unwrap() error { return e.err }

// As lets errors.As(err, &ce) find a *fooddelivery.CallError with DontRetry
// set: a copy of the original's, or, when err has none, one describing an
// unavailable dependency.
func (e dontRetryError) As(target any) bool {
	p, ok := target.(**fooddelivery.CallError)
	if !ok {
		return false
	}
	var ce *fooddelivery.CallError
	if errors.As(e.err, &ce) {
		c := *ce
		c.DontRetry = true
		*p = &c
	} else {
		*p = &fooddelivery.CallError{Err: fooddelivery.ErrUnavailable, DontRetry: true, Cause: e.err}
	}
	return true
}

type attemptKey struct{}

// WithAttempt returns ctx carrying the attempt number n of the call made
// with it; AttemptHeader sends it in fooddelivery.HeaderAttempt.
func WithAttempt(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, attemptKey{}, n)
}

// AttemptFrom returns the attempt number ctx carries (1 when none).
func AttemptFrom(ctx context.Context) int {
	if n, ok := ctx.Value(attemptKey{}).(int); ok && n >= 1 {
		return n
	}
	return 1
}

// AttemptHeader wraps base (nil means http.DefaultTransport) so that a
// request whose context carries an attempt number above 1 (WithAttempt)
// is sent with it in fooddelivery.HeaderAttempt.
func AttemptHeader(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return attemptTransport{base}
}

type attemptTransport struct{ base http.RoundTripper }

func (t attemptTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	n := AttemptFrom(r.Context())
	if n == 1 || r.Header.Get(fooddelivery.HeaderAttempt) != "" {
		return t.base.RoundTrip(r)
	}
	r2 := r.Clone(r.Context())
	r2.Header.Set(fooddelivery.HeaderAttempt, strconv.Itoa(n))
	return t.base.RoundTrip(r2)
}

// CloseIdleConnections passes the call on, so http.Client.CloseIdleConnections
// still reaches the wrapped transport.
func (t attemptTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// WrapPayer applies the PaymentClient and Order layers of l to p, the
// order service's payment client, counting wire attempts on m's edge
// "order" -> "payment". The payment client's http.Client must send attempt
// numbers (AttemptHeader) for them to reach the wire. When l is zero, p is
// returned unchanged.
func WrapPayer(p fooddelivery.Payer, l Layers, m *metrics.Metrics) fooddelivery.Payer {
	if l.IsZero() || p == nil {
		return p
	}
	wire := &retryingPayer{next: p, r: l.PaymentClient, edge: m.Edge("order", "payment"), wire: true}
	return &retryingPayer{next: wire, r: l.Order}
}

type retryingPayer struct {
	next fooddelivery.Payer
	r    Retrier
	edge *metrics.EdgeStats // counted only on the wire layer
	wire bool
}

func (p *retryingPayer) Charge(ctx context.Context, req fooddelivery.ChargeRequest) (fooddelivery.Charge, error) {
	var out fooddelivery.Charge
	err := run(ctx, p.r, "charge "+req.OrderID, Traced(func(ctx context.Context, attempt int) error {
		if p.wire {
			if p.r == nil {
				attempt = AttemptFrom(ctx) // numbered by the Order layer, if at all
			}
			p.edge.Attempts.Add(1)
			if attempt > 1 {
				p.edge.Retries.Add(1)
			}
		}
		var err error
		out, err = p.next.Charge(WithAttempt(ctx, attempt), req)
		return err
	}))
	return out, err
}

// WrapOrders applies the Gateway layer of l to s, the gateway's order
// client, counting attempts on m's edge "gateway" -> "order". Only
// PlaceOrder is retried. When l.Gateway is nil, s is returned unchanged.
func WrapOrders(s fooddelivery.OrderService, l Layers, m *metrics.Metrics) fooddelivery.OrderService {
	if l.Gateway == nil || s == nil {
		return s
	}
	return &retryingOrders{OrderService: s, r: l.Gateway, edge: m.Edge("gateway", "order")}
}

type retryingOrders struct {
	fooddelivery.OrderService
	r    Retrier
	edge *metrics.EdgeStats
}

func (o *retryingOrders) PlaceOrder(ctx context.Context, user string, in fooddelivery.PlaceOrderInput) (fooddelivery.Order, error) {
	var out fooddelivery.Order
	key := "place " + fooddelivery.RequestIDFrom(ctx)
	err := o.r.Do(ctx, key, Traced(func(ctx context.Context, attempt int) error {
		o.edge.Attempts.Add(1)
		if attempt > 1 {
			o.edge.Retries.Add(1)
		}
		var err error
		out, err = o.OrderService.PlaceOrder(WithAttempt(ctx, attempt), user, in)
		return err
	}))
	return out, err
}

// run calls call through r, or once (as attempt 1) when r is nil.
func run(ctx context.Context, r Retrier, key string, call func(ctx context.Context, attempt int) error) error {
	if r == nil {
		return call(ctx, 1)
	}
	return r.Do(ctx, key, call)
}
