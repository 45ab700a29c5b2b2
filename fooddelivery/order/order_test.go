package order_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/auth"
	"github.com/gophereats/resilience/fooddelivery/courier"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/menu"
	"github.com/gophereats/resilience/fooddelivery/order"
	"github.com/gophereats/resilience/fooddelivery/payment"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

// What the payment service does with a charge, set per test.
const (
	paymentOK          int32 = iota
	paymentHangs             // holds the request until the caller gives up
	paymentFails             // answers 503 without the don't-retry signal
	paymentOverloaded        // answers 503 with the don't-retry signal
	paymentLosesAnswer       // charges, then drops the connection without answering
)

// system is the whole food-delivery back end on one in-memory network:
// auth, three menu replicas, payment, courier and order, plus the clients
// a gateway would use.
type system struct {
	net     *memnet.Network
	metrics *metrics.Metrics
	ledger  *payment.Ledger
	board   *courier.Board
	store   *order.Store

	paymentMode   atomic.Int32
	paymentSawIDs sync.Map // request ids that reached payment

	auth   *auth.Client
	orders *order.Client
}

type options struct {
	orderLimit     int
	paymentTimeout time.Duration // the order service's http.Client.Timeout for payment; 0 = none
}

func start(t *testing.T, opt options) *system {
	t.Helper()
	s := &system{
		net:     memnet.New(),
		metrics: metrics.NewMetrics(),
		ledger:  payment.NewLedger(),
		board:   courier.NewBoard(),
		store:   order.NewStore(),
	}
	transport := (&memnet.Dialer{Network: s.net}).Transport()
	hc := &http.Client{Transport: transport}
	var servers []*http.Server
	serve := func(name string, h http.Handler) {
		l, err := s.net.Listen(name)
		require.NoError(t, err, "listening as %s", name)
		srv := &http.Server{Handler: h}
		go srv.Serve(l)
		servers = append(servers, srv)
	}

	serve("auth", auth.New(auth.Deps{Instance: fooddelivery.NewInstance("auth", 10, s.metrics), Tokens: auth.DefaultTokens()}))

	catalog, reviews := menu.DefaultCatalog(), menu.NewReviewBook()
	for _, name := range []string{"menu-1", "menu-2", "menu-3"} {
		serve(name, menu.New(menu.Deps{Instance: fooddelivery.NewInstance(name, 10, s.metrics), Catalog: catalog, Reviews: reviews}))
	}

	pay := fooddelivery.NewInstance("payment", 10, s.metrics)
	pay.Faults = s.paymentFault
	serve("payment", payment.New(payment.Deps{Instance: pay, Ledger: s.ledger}))

	serve("courier", courier.New(courier.Deps{Instance: fooddelivery.NewInstance("courier", 10, s.metrics), Board: s.board}))

	serve("order", order.New(order.Deps{
		Instance: fooddelivery.NewInstance("order", opt.orderLimit, s.metrics),
		Store:    s.store,
		Menu:     menu.NewClient(hc, "http://menu-1", "http://menu-2", "http://menu-3"),
		Payment:  payment.NewClient(&http.Client{Transport: transport, Timeout: opt.paymentTimeout}, "http://payment"),
		Courier:  courier.NewClient(hc, "http://courier"),
	}))

	s.auth = auth.NewClient(hc, "http://auth")
	s.orders = order.NewClient(hc, "http://order")
	t.Cleanup(func() {
		transport.CloseIdleConnections()
		for _, srv := range servers {
			srv.Close()
		}
		s.net.Close()
	})
	return s
}

// paymentFault is the payment instance's fault hook: it records the
// request id and then behaves as s.paymentMode says.
func (s *system) paymentFault(_, _ string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.paymentSawIDs.Store(fooddelivery.RequestIDFrom(r.Context()), true)
		switch s.paymentMode.Load() {
		case paymentHangs:
			_, _ = io.Copy(io.Discard, r.Body) // so net/http notices the caller hanging up
			<-r.Context().Done()
		case paymentFails:
			fooddelivery.WriteError(w, http.StatusServiceUnavailable, "failing_over", "payment provider is failing over")
		case paymentOverloaded:
			w.Header().Set(fooddelivery.HeaderDontRetry, "1")
			fooddelivery.WriteError(w, http.StatusServiceUnavailable, "overloaded", "payment is at its concurrency limit")
		case paymentLosesAnswer:
			next.ServeHTTP(httptest.NewRecorder(), r)
			panic(http.ErrAbortHandler)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// pizza is two margheritas (11.50 each) and a tiramisu (6.50): 29.50.
var pizza = fooddelivery.PlaceOrderInput{
	RestaurantID: "luigis",
	Items:        []fooddelivery.OrderItem{{DishID: "luigis-margherita", Quantity: 2}, {DishID: "luigis-tiramisu", Quantity: 1}},
	Card:         "tok_visa",
}

func callError(t *testing.T, err error) *fooddelivery.CallError {
	t.Helper()
	var ce *fooddelivery.CallError
	require.True(t, errors.As(err, &ce), "want a *fooddelivery.CallError, got %T: %v", err, err)
	return ce
}

func TestPlaceOrderEndToEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := start(t, options{orderLimit: 10})
		ctx := fooddelivery.WithRequestID(t.Context(), "req-e2e")

		user, err := s.auth.Authorize(ctx, "tok-alice")
		require.NoError(t, err, "alice's token must be accepted")
		o, err := s.orders.PlaceOrder(ctx, user, pizza)
		require.NoError(t, err, "placing a valid order with a healthy system")

		assert.Equal(t, fooddelivery.OrderPlaced, o.Status, "order status")
		assert.Equal(t, "alice", o.User, "the order belongs to the authorized user")
		assert.Equal(t, 2*1150+650, o.TotalCents, "total priced from the menu, in cents")
		assert.NotEmpty(t, o.ChargeID, "a placed order has a charge")
		assert.NotEmpty(t, o.CourierID, "a placed order has a courier")
		assert.Equal(t, 1, s.ledger.ChargesFor(o.ID), "charges executed for %s", o.ID)
		assert.Equal(t, o.TotalCents, s.ledger.TotalCents(), "the ledger charged the order's total")
		a, ok := s.board.Assignment(o.ID)
		assert.True(t, ok, "the courier board has the order")
		assert.Equal(t, o.CourierID, a.CourierID, "the order names the assigned courier")
		_, sawID := s.paymentSawIDs.Load("req-e2e")
		assert.True(t, sawID, "the request id must travel gateway -> order -> payment")

		var menuCalls int64
		for _, r := range []string{"menu-1", "menu-2", "menu-3"} {
			menuCalls += s.metrics.Route(r, "GET /restaurants/{id}/menu").Received.Load()
		}
		assert.Equal(t, int64(1), menuCalls, "one menu read to price the order")
		assert.Equal(t, int64(1), s.metrics.Route("payment", "POST /charges").Received.Load(), "one charge request")
		assert.Equal(t, int64(1), s.metrics.Route("courier", "POST /assignments").Received.Load(), "one assignment request")

		got, err := s.orders.Order(ctx, o.ID)
		require.NoError(t, err, "reading the order back")
		assert.Equal(t, o, got, "GET /orders/{id} returns the stored order")

		rep, err := s.orders.DailyReport(ctx, time.Time{})
		require.NoError(t, err, "daily report")
		assert.Equal(t, 1, rep.Orders, "orders placed today")
		assert.Equal(t, o.TotalCents, rep.RevenueCents, "revenue today in cents")
		assert.Equal(t, time.Now().UTC().Format(time.DateOnly), rep.Day, "the report is for today (UTC)")
	})
}

func TestInvalidOrdersAreRejectedWithoutCharging(t *testing.T) {
	item := func(dish string, qty int) []fooddelivery.OrderItem {
		return []fooddelivery.OrderItem{{DishID: dish, Quantity: qty}}
	}
	cases := []struct {
		name   string
		user   string
		in     fooddelivery.PlaceOrderInput
		want   error
		status int
	}{
		{"no user", "", pizza, fooddelivery.ErrUnauthorized, http.StatusUnauthorized},
		{"no items", "alice", fooddelivery.PlaceOrderInput{RestaurantID: "luigis", Card: "tok_visa"}, fooddelivery.ErrRejected, http.StatusBadRequest},
		{"a quantity of 0", "alice", fooddelivery.PlaceOrderInput{RestaurantID: "luigis", Items: item("luigis-margherita", 0), Card: "tok_visa"}, fooddelivery.ErrRejected, http.StatusBadRequest},
		{"a quantity of 51", "alice", fooddelivery.PlaceOrderInput{RestaurantID: "luigis", Items: item("luigis-margherita", 51), Card: "tok_visa"}, fooddelivery.ErrRejected, http.StatusBadRequest},
		{"no card", "alice", fooddelivery.PlaceOrderInput{RestaurantID: "luigis", Items: item("luigis-margherita", 1)}, fooddelivery.ErrRejected, http.StatusBadRequest},
		{"an unknown dish", "alice", fooddelivery.PlaceOrderInput{RestaurantID: "luigis", Items: item("sakura-gyoza", 1), Card: "tok_visa"}, fooddelivery.ErrRejected, http.StatusUnprocessableEntity},
		{"an unknown restaurant", "alice", fooddelivery.PlaceOrderInput{RestaurantID: "nowhere", Items: item("x", 1), Card: "tok_visa"}, fooddelivery.ErrRejected, http.StatusUnprocessableEntity},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := start(t, options{})

				_, err := s.orders.PlaceOrder(t.Context(), tc.user, tc.in)

				require.ErrorIs(t, err, tc.want, "an order with %s", tc.name)
				assert.Equal(t, tc.status, callError(t, err).Status, "status for an order with %s", tc.name)
				assert.Equal(t, 0, s.ledger.Total(), "an order with %s must not be charged", tc.name)
				assert.Equal(t, 0, s.store.Len(), "an order with %s must not be stored", tc.name)
			})
		})
	}
}

func TestRepeatedDishesAreMergedIntoOneLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := start(t, options{})
		in := pizza
		in.Items = []fooddelivery.OrderItem{
			{DishID: "luigis-margherita", Quantity: 2},
			{DishID: "luigis-tiramisu", Quantity: 1},
			{DishID: "luigis-margherita", Quantity: 3},
		}

		o, err := s.orders.PlaceOrder(t.Context(), "alice", in)

		require.NoError(t, err, "two lines of one dish are a valid order")
		want := []fooddelivery.OrderItem{{DishID: "luigis-margherita", Quantity: 5}, {DishID: "luigis-tiramisu", Quantity: 1}}
		assert.Equal(t, want, o.Items, "one line per dish, where it first appears, with the summed quantity")
		assert.Equal(t, 5*1150+650, o.TotalCents, "priced once per dish")
		stored, _ := s.store.Get(o.ID)
		assert.Equal(t, want, stored.Items, "the stored order has the merged lines")
		assert.Equal(t, o.TotalCents, s.ledger.TotalCents(), "charged the merged total")
	})
}

func TestOrderSizeIsCapped(t *testing.T) {
	repeat := func(dish string, qty, lines int) []fooddelivery.OrderItem {
		items := make([]fooddelivery.OrderItem, lines)
		for i := range items {
			items[i] = fooddelivery.OrderItem{DishID: dish, Quantity: qty}
		}
		return items
	}
	distinct := make([]fooddelivery.OrderItem, order.MaxLines+1)
	for i := range distinct {
		distinct[i] = fooddelivery.OrderItem{DishID: fmt.Sprint("dish-", i), Quantity: 1}
	}
	cases := []struct {
		name  string
		items []fooddelivery.OrderItem
		says  []string
	}{
		{"1,000 lines of one dish, quantity 1", repeat("luigis-margherita", 1, 1000),
			[]string{"at most 50 lines", "got 1000", "one line with its total quantity"}},
		{"51 different dishes", distinct, []string{"at most 50 lines", "got 51"}},
		{"one dish on two lines of 30", repeat("luigis-margherita", 30, 2),
			[]string{"at most 50 of one dish", `"luigis-margherita"`, "ordered 60 times over 2 lines"}},
		{"one dish on 50 lines of 2", repeat("luigis-margherita", 2, 50),
			[]string{"at most 50 of one dish", "ordered 100 times over 50 lines"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := start(t, options{})
				in := pizza
				in.Items = tc.items

				_, err := s.orders.PlaceOrder(t.Context(), "alice", in)

				require.ErrorIs(t, err, fooddelivery.ErrRejected, "%s is refused", tc.name)
				ce := callError(t, err)
				assert.Equal(t, http.StatusBadRequest, ce.Status, "the order is malformed")
				assert.Equal(t, "bad_request", ce.Code)
				for _, want := range tc.says {
					assert.Contains(t, ce.Message, want, "the message states the rule and the value")
				}
				assert.Equal(t, 0, s.ledger.Total(), "nothing is charged")
				assert.Equal(t, 0, s.store.Len(), "nothing is stored")
			})
		})
	}

	t.Run("50 of one dish over 50 lines", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := start(t, options{})
			in := pizza
			in.Items = repeat("luigis-margherita", 1, order.MaxLines)

			o, err := s.orders.PlaceOrder(t.Context(), "alice", in)

			require.NoError(t, err, "exactly at both limits is fine")
			assert.Equal(t, []fooddelivery.OrderItem{{DishID: "luigis-margherita", Quantity: order.MaxQuantity}}, o.Items)
		})
	})
}

func TestDeclinedCardFailsThePaymentAndIsNotCharged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := start(t, options{})
		in := pizza
		in.Card = payment.DeclinedCard

		_, err := s.orders.PlaceOrder(t.Context(), "bob", in)

		require.ErrorIs(t, err, fooddelivery.ErrRejected, "a declined card is a rejection, not an outage")
		ce := callError(t, err)
		assert.Equal(t, http.StatusPaymentRequired, ce.Status, "status")
		assert.Equal(t, "payment_declined", ce.Code, "code")
		assert.Equal(t, 0, s.ledger.Total(), "nothing charged")
		orders := s.store.Orders()
		require.Len(t, orders, 1, "the failed order is stored")
		assert.Equal(t, fooddelivery.OrderPaymentKO, orders[0].Status, "status of the stored order")
	})
}

func TestUnknownCardFailsThePaymentAndIsNotCharged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := start(t, options{})
		in := pizza
		in.Card = "tok_amex"

		_, err := s.orders.PlaceOrder(t.Context(), "bob", in)

		require.ErrorIs(t, err, fooddelivery.ErrRejected, "an unknown card is a rejection, not an outage")
		ce := callError(t, err)
		assert.Equal(t, http.StatusPaymentRequired, ce.Status, "status")
		assert.Equal(t, "payment_declined", ce.Code, "code")
		assert.Contains(t, ce.Message, "card_unknown", "the message carries payment's code")
		assert.Contains(t, ce.Message, `"tok_amex"`, "and names the card")
		assert.False(t, ce.DontRetry, "a rejection needs no don't-retry signal: a 402 is never retried")
		assert.Equal(t, int64(1), s.metrics.Route("payment", "POST /charges").Received.Load(), "payment was asked once")
		assert.Equal(t, 0, s.ledger.Total(), "nothing charged")
		orders := s.store.Orders()
		require.Len(t, orders, 1, "the failed order is stored")
		assert.Equal(t, fooddelivery.OrderPaymentKO, orders[0].Status, "status of the stored order")
	})
}

func TestPaymentOutagesReachTheCallerWithTheirMeaning(t *testing.T) {
	cases := []struct {
		name      string
		mode      int32
		want      error
		status    int
		code      string
		dontRetry bool
	}{
		{"payment answers 503", paymentFails, fooddelivery.ErrUnavailable, http.StatusBadGateway, "payment_unavailable", false},
		{"payment is overloaded", paymentOverloaded, fooddelivery.ErrOverloaded, http.StatusServiceUnavailable, "payment_overloaded", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := start(t, options{})
				s.paymentMode.Store(tc.mode)

				_, err := s.orders.PlaceOrder(t.Context(), "alice", pizza)

				require.ErrorIs(t, err, tc.want, "when %s", tc.name)
				ce := callError(t, err)
				assert.Equal(t, tc.status, ce.Status, "order service status when %s", tc.name)
				assert.Equal(t, tc.code, ce.Code, "order service code when %s", tc.name)
				assert.Equal(t, tc.dontRetry, ce.DontRetry, "don't-retry signal when %s", tc.name)
				assert.Equal(t, 0, s.ledger.Total(), "nothing charged when %s", tc.name)

				rep, err := s.orders.DailyReport(t.Context(), time.Now())
				require.NoError(t, err, "daily report")
				assert.Equal(t, 1, rep.PaymentFailed, "the report counts the failed payment")
				assert.Equal(t, 0, rep.Orders, "no order placed")
			})
		})
	}
}

func TestPaymentAnswerLostAfterChargingIsUnconfirmed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := start(t, options{})
		s.paymentMode.Store(paymentLosesAnswer)

		_, err := s.orders.PlaceOrder(t.Context(), "alice", pizza)

		require.ErrorIs(t, err, fooddelivery.ErrUnavailable, "no answer from payment")
		ce := callError(t, err)
		assert.Equal(t, http.StatusBadGateway, ce.Status, "order service status")
		assert.Equal(t, order.CodePaymentUnconfirmed, ce.Code, "the charge was sent and its answer lost: unconfirmed")
		assert.Equal(t, 1, s.ledger.Total(), "payment did charge")
	})
}

func TestPaymentRefusingConnectionsIsUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := start(t, options{})
		s.net.SetConnectFault("payment", memnet.Refused)

		_, err := s.orders.PlaceOrder(t.Context(), "alice", pizza)

		require.ErrorIs(t, err, fooddelivery.ErrUnavailable, "payment unreachable")
		assert.Equal(t, "payment_unavailable", callError(t, err).Code, "nothing was sent: plainly unavailable")
		assert.Equal(t, 0, s.ledger.Total(), "nothing charged")
	})
}

func TestPaymentHangingPastTheCallersDeadlineIsATimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := start(t, options{})
		s.paymentMode.Store(paymentHangs)

		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		begin := time.Now()
		_, err := s.orders.PlaceOrder(ctx, "alice", pizza)

		require.ErrorIs(t, err, fooddelivery.ErrTimeout, "payment hung; PlaceOrder must fail as a timeout")
		assert.ErrorIs(t, err, context.DeadlineExceeded, "the caller's deadline is the cause")
		assert.Equal(t, 2*time.Second, time.Since(begin), "PlaceOrder returns at the caller's 2s deadline")

		synctest.Wait() // let the order and payment handlers see the cancellation
		assert.Equal(t, int64(1), s.metrics.Route("order", "POST /orders").Cancelled.Load(),
			"the order service must see its caller leave")
		assert.Equal(t, int64(1), s.metrics.Route("payment", "POST /charges").Cancelled.Load(),
			"the cancellation must reach payment through the order service's context")
		assert.Equal(t, 0, s.ledger.Total(), "nothing charged")
	})
}

func TestPaymentTimeoutInTheOrderServiceSaysPaymentTimedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := start(t, options{paymentTimeout: time.Second})
		s.paymentMode.Store(paymentHangs)

		begin := time.Now()
		_, err := s.orders.PlaceOrder(t.Context(), "alice", pizza)

		require.ErrorIs(t, err, fooddelivery.ErrTimeout, "a payment timeout inside the order service reaches the caller as a timeout")
		ce := callError(t, err)
		assert.Equal(t, http.StatusGatewayTimeout, ce.Status, "order service status")
		assert.Equal(t, "payment_timeout", ce.Code, "order service code")
		assert.Equal(t, "payment did not answer in time", ce.Message, "the message says payment timed out, and no more")
		assert.NotContains(t, err.Error(), "http://", "the order service's answer names no internal address")
		assert.Equal(t, time.Second, time.Since(begin), "the order service gives up at its 1s payment timeout")
	})
}

func TestOrderIsPlacedWithoutACourierWhenCourierIsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := start(t, options{})
		s.net.SetConnectFault("courier", memnet.Refused)

		o, err := s.orders.PlaceOrder(t.Context(), "carol", pizza)

		require.NoError(t, err, "a courier outage must not fail an order that was charged")
		assert.Equal(t, fooddelivery.OrderPlaced, o.Status, "status")
		assert.Empty(t, o.CourierID, "no courier could be assigned")
		assert.Equal(t, 1, s.ledger.ChargesFor(o.ID), "charged once")
	})
}

func TestFullOrderServiceRejectsAtOnceWhilePaymentHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := start(t, options{orderLimit: 1})
		s.paymentMode.Store(paymentHangs)

		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() {
			_, err := s.orders.PlaceOrder(ctx, "alice", pizza)
			done <- err
		}()
		synctest.Wait() // the first order holds the only slot, waiting on payment

		_, err := s.orders.PlaceOrder(t.Context(), "bob", pizza)
		require.ErrorIs(t, err, fooddelivery.ErrOverloaded, "with its one slot held, the order service must reject at once")
		assert.True(t, fooddelivery.DontRetry(err), "the rejection carries the don't-retry signal")
		assert.Equal(t, int64(1), s.metrics.Route("order", "POST /orders").Rejected.Load(), "rejected orders")

		cancel()
		assert.ErrorIs(t, <-done, context.Canceled, "the held order ends when its caller cancels")
	})
}

func TestUnknownOrderIsNotFound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := start(t, options{})
		_, err := s.orders.Order(t.Context(), "ord-404")
		assert.ErrorIs(t, err, fooddelivery.ErrNotFound, "an unknown order id")
	})
}

func TestClientInputIsEchoedTruncated(t *testing.T) {
	huge := strings.Repeat("x", 900_000)
	cases := []struct {
		name  string
		call  func(s *system, ctx context.Context) error
		says  string
		total string // the length the message reports
	}{
		{"an unknown restaurant", func(s *system, ctx context.Context) error {
			in := pizza
			in.RestaurantID = huge
			_, err := s.orders.PlaceOrder(ctx, "alice", in)
			return err
		}, "no restaurant", "(900000 bytes)"},
		{"an unknown dish", func(s *system, ctx context.Context) error {
			in := pizza
			in.Items = []fooddelivery.OrderItem{{DishID: huge, Quantity: 1}}
			_, err := s.orders.PlaceOrder(ctx, "alice", in)
			return err
		}, "has no dish", "(900000 bytes)"},
		{"a quantity out of range", func(s *system, ctx context.Context) error {
			in := pizza
			in.Items = []fooddelivery.OrderItem{{DishID: huge, Quantity: 0}}
			_, err := s.orders.PlaceOrder(ctx, "alice", in)
			return err
		}, "quantity", "(900000 bytes)"},
		{"an unknown order id", func(s *system, ctx context.Context) error {
			_, err := s.orders.Order(ctx, huge[:50_000])
			return err
		}, "no order", "(50000 bytes)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := start(t, options{})

				err := tc.call(s, t.Context())

				ce := callError(t, err)
				assert.Contains(t, ce.Message, tc.says, "the message says what is wrong")
				assert.Contains(t, ce.Message, tc.total, "and how long the value was")
				assert.Less(t, len(ce.Message), 300, "the value comes back truncated: %s", ce.Message)
			})
		})
	}
}
