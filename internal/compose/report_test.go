package compose

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/payment"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

func TestBreakerBookReadsOpenAsHalfOpenAfterTheOpenPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		book := newBreakerBook(metrics.NewMetrics(), 3*time.Second)
		book.changed("order POST /orders", metrics.BreakerOpen)
		assert.Equal(t, metrics.BreakerOpen, book.read("order POST /orders"))
		time.Sleep(3 * time.Second)
		assert.Equal(t, metrics.BreakerHalfOpen, book.read("order POST /orders"),
			"an open breaker whose period is over is half-open, as the breaker says when asked")
		book.changed("order POST /orders", metrics.BreakerClosed)
		assert.Equal(t, metrics.BreakerClosed, book.read("order POST /orders"))
	})
}

func TestBreakerStateNamesFollowTheReports(t *testing.T) {
	for in, want := range map[string]metrics.BreakerState{
		"closed": metrics.BreakerClosed, "open": metrics.BreakerOpen,
		"half-open": metrics.BreakerHalfOpen, "half_open": metrics.BreakerHalfOpen, "State(7)": "State(7)",
	} {
		assert.Equal(t, want, breakerState(in), "State.String() %q", in)
	}
}

// oneSlot is a bulkhead of one slot that refuses at once.
func oneSlot() fooddelivery.Guard {
	slot := make(chan struct{}, 1)
	return func(ctx context.Context, call func(context.Context) error) error {
		select {
		case slot <- struct{}{}:
		default:
			return fmt.Errorf("orders: %w", fooddelivery.ErrBulkheadFull)
		}
		defer func() { <-slot }()
		return call(ctx)
	}
}

func TestCountSlotsCountsOnlyTheCallsTheBulkheadRefused(t *testing.T) {
	m := metrics.NewMetrics()
	g := countSlots(oneSlot(), m, "order", 1)
	edge := m.Edge("gateway", "order")
	err := g(context.Background(), func(ctx context.Context) error {
		inner := g(ctx, func(context.Context) error { return nil })
		assert.ErrorIs(t, inner, fooddelivery.ErrBulkheadFull, "the only slot is taken")
		return nil
	})
	require.NoError(t, err)
	err = g(context.Background(), func(context.Context) error {
		return fmt.Errorf("the order service said: %w", fooddelivery.ErrBulkheadFull)
	})
	assert.ErrorIs(t, err, fooddelivery.ErrBulkheadFull)
	assert.Equal(t, int64(1), edge.BulkheadFull.Load(),
		"one refusal: a call that ran and failed with the same error was not refused by this bulkhead")
}

// firstAnswer sends a request to base twice, at once, and returns the
// second answer: a hedger whose copy always wins.
type firstAnswer struct{ base http.RoundTripper }

func (h firstAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	first, err := h.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	first.Body.Close()
	return h.base.RoundTrip(r.Clone(r.Context()))
}

type okTransport struct{}

func (okTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}"))}, nil
}

func TestTalliesCountAttemptsHedgesAndTheHedgesThatWon(t *testing.T) {
	var edge metrics.EdgeStats
	rt := tallied(firstAnswer{countAttempts(okTransport{}, &edge.Attempts, &edge.Hedges, func() bool { return true }, attemptSpans{})}, &edge.HedgesWon)
	for range 3 {
		req, _ := http.NewRequest(http.MethodGet, "http://menu-1/restaurants", nil)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
	}
	assert.Equal(t, int64(6), edge.Attempts.Load())
	assert.Equal(t, int64(3), edge.Hedges.Load(), "each call's second attempt is a hedge, not the second call's first")
	assert.Equal(t, int64(3), edge.HedgesWon.Load())

	var retried metrics.EdgeStats
	rt = tallied(firstAnswer{countAttempts(okTransport{}, &retried.Attempts, &retried.Retries, func() bool { return false }, attemptSpans{})}, nil)
	req, _ := http.NewRequest(http.MethodGet, "http://payment/charges", nil)
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, int64(1), retried.Attempts.Load(), "the first attempt is counted elsewhere; the retry here")
	assert.Equal(t, int64(1), retried.Retries.Load())
	assert.Zero(t, retried.HedgesWon.Load())
}

// storedOnce replays every key after its first use.
type storedOnce struct{ seen map[string]bool }

func (s storedOnce) Begin(key string, _ fooddelivery.ChargeRequest) (*payment.Outcome, error) {
	if s.seen[key] {
		return &payment.Outcome{Status: 201}, nil
	}
	s.seen[key] = true
	return nil, nil
}

func (storedOnce) Finish(string, payment.Outcome) {}

func TestReplaysCountsStoredOutcomesServedAgain(t *testing.T) {
	var edge metrics.EdgeStats
	keys := replays{storedOnce{map[string]bool{}}, &edge}
	for _, key := range []string{"order-1", "order-1", "order-2", "order-1"} {
		keys.Begin(key, fooddelivery.ChargeRequest{})
	}
	assert.Equal(t, int64(2), edge.Replays.Load())
}

func TestOutcomesCountEachCauseOnceWhereItHappened(t *testing.T) {
	edge := &metrics.EdgeStats{}
	for _, err := range []error{
		nil,
		fooddelivery.ClassifyTransportError("payment", context.DeadlineExceeded),             // this caller gave up: a timeout
		fmt.Errorf("charge: %w", context.DeadlineExceeded),                                   // so did this one
		&fooddelivery.CallError{Service: "order", Status: 504, Err: fooddelivery.ErrTimeout}, // an answer: the timeout was further down
		fmt.Errorf("order client: %w", fooddelivery.ErrCircuitOpen),
		&fooddelivery.CallError{Service: "order", Status: 503, Err: fooddelivery.ErrOverloaded},                     // passed on from further down
		&fooddelivery.CallError{Service: "order", Status: 503, Code: "overloaded", Err: fooddelivery.ErrOverloaded}, // the order service's own limit
	} {
		outcomes(context.Background(), edge, err)
	}
	assert.Equal(t, int64(2), edge.Timeouts.Load(), "two calls timed out here; the 504 was an answer")
	assert.Equal(t, int64(1), edge.BreakerOpen.Load())
	assert.Equal(t, int64(1), edge.Overloaded.Load(), "only the dependency's own refusal at its limit")
	assert.Zero(t, edge.BulkheadFull.Load()+edge.BudgetSpent.Load())
}

// retrier makes up to n attempts until one succeeds, and stops early
// after stopAfter (a budget that gave no more).
type retrier struct {
	n, stopAfter int
}

func (r retrier) Do(ctx context.Context, _ string, call func(context.Context, int) error) error {
	var err error
	for a := 1; a <= min(r.n, r.stopAfter); a++ {
		if err = call(ctx, a); err == nil {
			return nil
		}
	}
	return err
}

func TestBudgetWatchCountsTheRetriesTheLoopWithheld(t *testing.T) {
	edge := &metrics.EdgeStats{}
	unavailable := &fooddelivery.CallError{Service: "payment", Status: 503, Err: fooddelivery.ErrUnavailable}
	declined := &fooddelivery.CallError{Service: "payment", Status: 402, Err: fooddelivery.ErrRejected}
	ctx := context.Background()
	fail := func(err error) func(context.Context, int) error {
		return func(context.Context, int) error { return err }
	}

	_ = budgetWatch{retrier{3, 3}, 3, edge}.Do(ctx, "k", fail(unavailable))
	assert.Zero(t, edge.BudgetSpent.Load(), "every attempt was made: nothing withheld")
	_ = budgetWatch{retrier{3, 1}, 3, edge}.Do(ctx, "k", fail(unavailable))
	assert.Equal(t, int64(1), edge.BudgetSpent.Load(), "a retryable failure after 1 of 3 attempts: the budget withheld the retry")
	_ = budgetWatch{retrier{3, 1}, 3, edge}.Do(ctx, "k", fail(declined))
	assert.Equal(t, int64(1), edge.BudgetSpent.Load(), "a declined card is not retried by any budget: not counted")
	_ = budgetWatch{retrier{3, 1}, 3, edge}.Do(ctx, "k", fail(nil))
	assert.Equal(t, int64(1), edge.BudgetSpent.Load(), "a success is not counted")
	gone, cancel := context.WithCancel(ctx)
	cancel()
	_ = budgetWatch{retrier{3, 1}, 3, edge}.Do(gone, "k", fail(unavailable))
	assert.Equal(t, int64(1), edge.BudgetSpent.Load(), "the caller left: the loop stopped for that, not for the budget")
}

// http.Client enforces its Timeout on a transport it does not know both
// through the request's context and by closing Request.Cancel at the same
// instant; when the channel wins, the transport says "request canceled".
// Each of those calls timed out, and each counts.
func TestCountTimeoutsCountsACallCutOffAtItsDeadlineWhateverTheErrorSays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		edge := &metrics.EdgeStats{}
		hang := roundTripper{func(r *http.Request) (*http.Response, error) {
			<-r.Context().Done()
			return nil, fmt.Errorf("net/http: request canceled")
		}, nil}
		rt := countTimeouts(hang, edge)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://payment/charges", nil)
		require.NoError(t, err)
		_, err = rt.RoundTrip(req)
		require.Error(t, err)
		assert.Equal(t, int64(1), edge.Timeouts.Load(), "a call ended at its 2 s deadline is a timeout, though the transport said %q", err)

		edge.Timeouts.Store(0)
		ctx, cancel = context.WithCancel(context.Background())
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, "http://payment/charges", nil)
		require.NoError(t, err)
		time.AfterFunc(time.Second, cancel)
		_, err = rt.RoundTrip(req)
		require.Error(t, err)
		assert.Zero(t, edge.Timeouts.Load(), "a caller that cancelled (no deadline) is no timeout")
	})
}
