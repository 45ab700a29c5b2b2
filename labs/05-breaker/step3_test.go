package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/payment"
	"github.com/gophereats/resilience/fooddelivery/system"
	breaker "github.com/gophereats/resilience/labs/05-breaker"
)

func TestStep3DependencyFailuresCount(t *testing.T) {
	cases := []struct {
		name  string
		route string
		fault faults.Fault
	}{
		{"payment answers 503", "POST /charges", faults.Fault{Status: http.StatusServiceUnavailable}},
		{"payment answers 500", "POST /charges", faults.Fault{Status: http.StatusInternalServerError}},
		{"payment answers 429 Too Many Requests", "POST /charges", faults.Fault{Status: http.StatusTooManyRequests}},
		{"payment hangs past the timeout", "POST /charges", faults.Fault{Hang: time.Minute}},
		{"payment refuses connections", "", faults.Fault{Connect: memnet.Refused}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
				sys, cb := start(t, breaker.Settings{})
				require.NoError(t, sys.Faults.Set("payment", c.route, c.fault), "setting up the fault")
				for range 5 {
					_, err := place(sys)
					require.Error(t, err, "step 3: %s, yet an order succeeded", c.name)
				}
				if s := cb.State(); s != breaker.Open {
					t.Fatalf("step 3: %s: 5 orders in a row failed and the breaker is %v. Timeouts, connection errors, "+
						"5xx and 429 (payment saying it is overloaded) are the dependency's failures "+
						"(fooddelivery.ErrTimeout, ErrUnavailable): they must count.", c.name, s)
				}
				sys.Faults.Clear("payment", c.route)
				before := labtest.Charges(sys)
				_, err := place(sys)
				if err == nil || labtest.Charges(sys) != before {
					t.Fatalf("step 3: %s: the breaker is open, yet the next order reached payment (error: %v)", c.name, err)
				}
			})
		})
	}
}

func TestStep3CallerMistakesDoNotCount(t *testing.T) {
	declined := pizza
	declined.Card = payment.DeclinedCard // 402
	cases := []struct {
		name  string
		fault faults.Fault
		order fooddelivery.PlaceOrderInput
	}{
		{"payment answers 404", faults.Fault{Status: http.StatusNotFound}, pizza},
		{"payment answers 422", faults.Fault{Status: http.StatusUnprocessableEntity}, pizza},
		{"payment answers 400", faults.Fault{Status: http.StatusBadRequest}, pizza},
		{"the card is declined (402)", faults.Fault{}, declined},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
				sys, cb := start(t, breaker.Settings{})
				setPayment(t, sys, c.fault)
				for range 10 {
					_, err := sys.Orders().PlaceOrder(context.Background(), "alice", c.order)
					require.Error(t, err, "step 3: %s, yet the order succeeded", c.name)
				}
				if s, n := cb.State(), labtest.Charges(sys); s != breaker.Closed || n != 10 {
					t.Fatalf("step 3: %s for 10 orders; the breaker is %v and %d of 10 charges reached payment. "+
						"A 4xx is about the caller's request, not the dependency's health (fooddelivery.ErrRejected, "+
						"ErrNotFound, CallError.Status 400-499): it must not count as a failure.", c.name, s, n)
				}
				setPayment(t, sys, faults.Fault{})
				_, err := place(sys)
				require.NoError(t, err, "step 3: after %s, a good order failed: the breaker must still be closed", c.name)
			})
		})
	}
}

func TestStep3SlowSuccessesCount(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		sys, cb := start(t, breaker.Settings{SlowCall: time.Second})
		setPayment(t, sys, faults.Fault{Latency: 900 * time.Millisecond})
		for range 10 {
			_, err := place(sys)
			require.NoError(t, err, "step 3: payment took 900ms, within its %v timeout, yet an order failed", paymentTimeout)
		}
		require.Equal(t, breaker.Closed, cb.State(),
			"step 3: payments took 900ms, faster than the 1s Settings.SlowCall: they are successes and the breaker stays closed")

		setPayment(t, sys, faults.Fault{Latency: slowPayment})
		for range 5 {
			_, err := place(sys)
			require.NoError(t, err, "step 3: payment took %v, within its %v timeout, yet an order failed", slowPayment, paymentTimeout)
		}
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 3: 5 payments in a row succeeded but took %v each, more than Settings.SlowCall (1s); the breaker is %v. "+
				"A success slower than SlowCall counts as a failure: measure how long the call took.", slowPayment, s)
		}

		// A slow answer about the caller's own request is still not payment's failure.
		cb = breaker.New(breaker.Settings{Name: "test", SlowCall: time.Second, Logger: quiet})
		notFound := fmt.Errorf("payment: %w", fooddelivery.ErrNotFound)
		for range 10 {
			cb.Do(context.Background(), func(context.Context) error { time.Sleep(slowPayment); return notFound })
		}
		if s := cb.State(); s != breaker.Closed {
			t.Fatalf("step 3: 10 calls in a row answered 404 Not Found after %v each (Settings.SlowCall 1s); the breaker is %v. "+
				"SlowCall judges successes only: a 4xx is about the caller's request however long it took.", slowPayment, s)
		}
	})
}

// TestStep3SlowMeansLongerThanSlowCall checks the boundary on the breaker
// directly, in fake time: a success that took exactly SlowCall is not slow,
// one that took a millisecond more is.
func TestStep3SlowMeansLongerThanSlowCall(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		const slowCall = time.Second
		took := func(d time.Duration) func(context.Context) error {
			return func(context.Context) error { time.Sleep(d); return nil }
		}
		cb := breaker.New(breaker.Settings{Name: "test", SlowCall: slowCall, Logger: quiet})
		for i := range 10 {
			if err := cb.Do(context.Background(), took(slowCall)); err != nil {
				t.Fatalf("step 3: success %d of 10 took exactly %v (Settings.SlowCall %v) and Do returned %v: "+
					"after %d such successes the breaker was no longer closed. A call is slow only when it took "+
					"longer than SlowCall (>, not >=): exactly %v is in time.", i+1, slowCall, slowCall, err, i, slowCall)
			}
		}
		if s := cb.State(); s != breaker.Closed {
			t.Fatalf("step 3: 10 successes in a row took exactly %v each (Settings.SlowCall %v); the breaker is %v. "+
				"A call is slow only when it took longer than SlowCall (>, not >=): exactly %v is in time.", slowCall, slowCall, s, slowCall)
		}

		cb = breaker.New(breaker.Settings{Name: "test", SlowCall: slowCall, Logger: quiet})
		over := slowCall + time.Millisecond
		for range 5 {
			cb.Do(context.Background(), took(over))
		}
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 3: 5 successes in a row took %v each, %v more than Settings.SlowCall (%v); the breaker is %v. "+
				"Any success longer than SlowCall counts as a failure, however little longer.", over, over-slowCall, slowCall, s)
		}
	})
}

func TestStep3CallersWhoGiveUpDoNotCount(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		sys, cb := start(t, breaker.Settings{})
		setPayment(t, sys, faults.Fault{Latency: time.Second})
		for range 6 {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			sys.Orders().PlaceOrder(ctx, "alice", pizza)
			cancel()
			time.Sleep(time.Second) // let the order service notice
		}
		if s := cb.State(); s != breaker.Closed {
			t.Fatalf("step 3: 6 customers gave up on their order after 100ms, while payment (healthy, 1s) was still working; "+
				"the breaker is %v. A call cancelled because its caller left says nothing about the dependency: "+
				"when ctx is cancelled (errors.Is(ctx.Err(), context.Canceled)), do not count the outcome.", s)
		}
		_, err := place(sys)
		require.NoError(t, err, "step 3: a customer who waited got no order: the breaker must still be closed")
	})
}

func TestStep3AnExpiredDeadlineCounts(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		const budget = 300 * time.Millisecond
		sys := labtest.StartSystem(t, system.Config{})
		cb := breaker.New(breaker.Settings{Name: "checkout->payment", Logger: quiet})
		payer := breaker.Payer{Breaker: cb, Next: payment.NewClient(sys.HTTPClient(), memnet.ServiceURL("payment"))}
		setPayment(t, sys, faults.Fault{Hang: time.Minute})
		var last error
		for i := range 5 {
			ctx, cancel := context.WithTimeout(context.Background(), budget)
			_, last = payer.Charge(ctx, fooddelivery.ChargeRequest{OrderID: fmt.Sprintf("ord-%d", i), AmountCents: 1200, Card: "tok_visa"})
			cancel()
		}
		if s := cb.State(); s != breaker.Open {
			t.Fatalf("step 3: payment hung; 5 charges in a row gave up when their caller's %v deadline expired "+
				"(last error: %v) and the breaker is %v. An expired deadline (context.DeadlineExceeded) is the dependency "+
				"being slower than it may be: judge the call's error like any other (a timeout counts). Only a caller who "+
				"left (context.Canceled) says nothing about the dependency.", budget, last, s)
		}
	})
}

func TestStep3SettingsIsFailureDecides(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		cb := breaker.New(breaker.Settings{Name: "test", Logger: quiet, IsFailure: func(error) bool { return false }})
		fail(cb, 10)
		if s := cb.State(); s != breaker.Closed {
			t.Fatalf("step 3: Settings.IsFailure says no error counts; 10 calls failed with ErrUnavailable and the breaker is %v. "+
				"Judge errors with Settings.IsFailure (Failure is only its default, for a nil IsFailure).", s)
		}
	})
}

func TestStep3AnAbandonedTrialDecidesNothing(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		cb := breaker.New(breaker.Settings{Name: "test", Logger: quiet})
		abandonTrial(t, 3, cb)
		if s := cb.State(); s != breaker.HalfOpen {
			t.Fatalf("step 3: 5 failures opened the breaker and %v later it was half-open; its trial call's caller gave up "+
				"(ctx cancelled) before payment answered, and the breaker is now %v. An abandoned call says nothing about "+
				"payment, a trial no more than any other: it must neither close the breaker (a success) nor open it again "+
				"(a failure). It stays half-open.", openFor, s)
		}
	})
}

// opaque is an error whose text says nothing of what it wraps: a caller's
// own wrapper ("charging order ord-7 failed") around a typed error.
type opaque struct{ err error }

func (o opaque) Error() string { return "charging the order failed" }
func (o opaque) Unwrap() error { return o.err }

func TestStep3FailureJudgesTypesNotText(t *testing.T) {
	callErr := func(status int, sentinel error, message string) error {
		return &fooddelivery.CallError{Service: "payment", Status: status, Err: sentinel, Message: message}
	}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		// The text names a status the error does not have.
		{"a 404 whose message is \"no order 429\"", callErr(http.StatusNotFound, fooddelivery.ErrNotFound, "no order 429"), false},
		{"a declined card (402) whose message is \"card 5030 declined\"", callErr(http.StatusPaymentRequired, fooddelivery.ErrRejected, "card 5030 declined"), false},
		{"a 400 whose message is \"503 is not a valid amount\"", callErr(http.StatusBadRequest, fooddelivery.ErrRejected, "503 is not a valid amount"), false},
		{"ErrNotFound wrapped as \"order 429: %w\"", fmt.Errorf("order 429: %w", fooddelivery.ErrNotFound), false},
		{"a 503 whose message is \"not found\"", callErr(http.StatusServiceUnavailable, fooddelivery.ErrUnavailable, "upstream not found"), true},
		// The status is there, the text does not say it.
		{"a 429 inside a wrapper whose text says nothing", opaque{callErr(http.StatusTooManyRequests, fooddelivery.ErrUnavailable, "")}, true},
		{"a 503 inside a wrapper whose text says nothing", opaque{callErr(http.StatusServiceUnavailable, fooddelivery.ErrUnavailable, "")}, true},
		{"a 404 inside a wrapper whose text says nothing", opaque{callErr(http.StatusNotFound, fooddelivery.ErrNotFound, "")}, false},
		{"a 422 inside a wrapper whose text says nothing", opaque{callErr(http.StatusUnprocessableEntity, fooddelivery.ErrRejected, "")}, false},
		{"ErrUnauthorized inside a wrapper whose text says nothing", opaque{fooddelivery.ErrUnauthorized}, false},
		{"ErrTimeout inside a wrapper whose text says nothing", opaque{fooddelivery.ErrTimeout}, true},
		// No type at all: an unknown error counts, whatever its text says.
		{"an untyped error reading \"HTTP 404 from a proxy\"", errors.New("HTTP 404 from a proxy"), true},
	}
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		wrong := 0
		for i, c := range cases {
			if got := breaker.Failure(c.err); got != c.want {
				wrong++
				t.Errorf("step 3: case %d of %d, %s (its text: %q): Failure returned %v, want %v. Classify by type and status "+
					"(errors.As for *fooddelivery.CallError and its Status, errors.Is for the sentinels), never by the "+
					"error's text: a message may mention any number, and a wrapper may hide the status.",
					i+1, len(cases), c.name, c.err.Error(), got, c.want)
			}
		}
		if wrong > 0 {
			t.Logf("step 3: Failure judged %d of %d errors wrongly", wrong, len(cases))
		}
	})
}

// A 4xx answer is about the caller's request whatever sentinel a client
// put beside it: a Failure that forgives only the sentinels it knows
// would count a declined card that some client classed as unavailable,
// and a run of them would open the breaker on a healthy payment service.
func TestStep3A4xxIsTheCallersWhateverItsSentinel(t *testing.T) {
	callErr := func(status int, sentinel error) error {
		return &fooddelivery.CallError{Service: "payment", Status: status, Err: sentinel}
	}
	cases := []struct {
		name string
		err  error
	}{
		{"a declined card (402) a client classed as ErrUnavailable", callErr(http.StatusPaymentRequired, fooddelivery.ErrUnavailable)},
		{"a 409 Conflict classed as ErrUnavailable", callErr(http.StatusConflict, fooddelivery.ErrUnavailable)},
		{"a 422 with no sentinel at all", callErr(http.StatusUnprocessableEntity, nil)},
		{"a 409 with no sentinel, inside a wrapper", opaque{callErr(http.StatusConflict, nil)}},
	}
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		for i, c := range cases {
			if breaker.Failure(c.err) {
				t.Errorf("step 3: case %d of %d, %s: Failure returned true, want false. The status says the caller's request "+
					"was refused (CallError.Status 400-499, 429 aside), whatever sentinel sits beside it: look at the status "+
					"first (errors.As for *fooddelivery.CallError), then at the sentinels. Ten declined cards in a row would "+
					"otherwise open the breaker on a healthy payment service.", i+1, len(cases), c.name)
			}
		}
	})
}
