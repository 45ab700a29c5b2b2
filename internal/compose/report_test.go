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
)

func TestBreakerBookReadsOpenAsHalfOpenAfterTheOpenPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		book := newBreakerBook(fooddelivery.NewMetrics(), 3*time.Second)
		book.changed("order POST /orders", fooddelivery.BreakerOpen)
		assert.Equal(t, fooddelivery.BreakerOpen, book.read("order POST /orders"))
		time.Sleep(3 * time.Second)
		assert.Equal(t, fooddelivery.BreakerHalfOpen, book.read("order POST /orders"),
			"an open breaker whose period is over is half-open, as the breaker says when asked")
		book.changed("order POST /orders", fooddelivery.BreakerClosed)
		assert.Equal(t, fooddelivery.BreakerClosed, book.read("order POST /orders"))
	})
}

func TestBreakerStateNamesFollowTheReports(t *testing.T) {
	for in, want := range map[string]fooddelivery.BreakerState{
		"closed": fooddelivery.BreakerClosed, "open": fooddelivery.BreakerOpen,
		"half-open": fooddelivery.BreakerHalfOpen, "half_open": fooddelivery.BreakerHalfOpen, "State(7)": "State(7)",
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
	m := fooddelivery.NewMetrics()
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
	assert.Equal(t, int64(1), edge.Rejections.Load(),
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
	var edge fooddelivery.EdgeStats
	rt := tallied(firstAnswer{countAttempts(okTransport{}, &edge.Attempts, &edge.Hedges, func() bool { return true })}, &edge.HedgesWon)
	for range 3 {
		req, _ := http.NewRequest(http.MethodGet, "http://menu-1/restaurants", nil)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
	}
	assert.Equal(t, int64(6), edge.Attempts.Load())
	assert.Equal(t, int64(3), edge.Hedges.Load(), "each call's second attempt is a hedge, not the second call's first")
	assert.Equal(t, int64(3), edge.HedgesWon.Load())

	var retried fooddelivery.EdgeStats
	rt = tallied(firstAnswer{countAttempts(okTransport{}, &retried.Attempts, &retried.Retries, func() bool { return false })}, nil)
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
	var edge fooddelivery.EdgeStats
	keys := replays{storedOnce{map[string]bool{}}, &edge}
	for _, key := range []string{"order-1", "order-1", "order-2", "order-1"} {
		keys.Begin(key, fooddelivery.ChargeRequest{})
	}
	assert.Equal(t, int64(2), edge.Replays.Load())
}
