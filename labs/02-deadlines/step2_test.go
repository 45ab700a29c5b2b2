package deadlines_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	deadlines "github.com/gophereats/resilience/labs/02-deadlines"
)

func TestStep2TooShortBudgetFailsFast(t *testing.T) {
	cases := []struct {
		name    string
		callers time.Duration
		need    time.Duration // the need the order service is built with
		note    string
	}{
		{"100ms of 250ms", 100 * time.Millisecond, need, ""},
		{"nothing left", 0, need, ` "0" is a budget of nothing, not a missing header: it is below need like any other.`},
		{"nothing left, need 0", 0, 0, ` "0" is a budget of nothing: it is refused even by a service built with need 0 ` +
			`(a route that needs no time at all still cannot run on a context that has already expired).`},
		{"300ms of 400ms", 300 * time.Millisecond, 400 * time.Millisecond,
			" This order service was built with Middleware(own, 400ms): compare with the need argument, not the lab's 250ms."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
				sys := startWith(t, nil, 0, own, c.need, hop)
				require.NoError(t, sys.Faults.Set("menu", "GET /restaurants/{id}/menu", faults.Fault{Latency: 300 * time.Millisecond}))

				began := time.Now()
				_, err := placeWithHeader(context.Background(), sys, strconv.Itoa(int(c.callers.Milliseconds())))
				took := time.Since(began)
				menus, charges := labtest.MenuCalls(sys), sys.Ledger.Total()
				if err == nil || menus > 0 || charges > 0 || took > 0 {
					t.Fatalf("step 2: the caller sent %s: %d, leaving %v for a checkout that needs at least %v; the order service "+
						"answered after %v with %s, having sent %d request(s) to the menu service and executed %d charge(s).\n"+
						"Work that cannot finish in time is load nobody benefits from: check the budget before calling next, "+
						"and answer 504 at once, without a single downstream call.%s",
						fooddelivery.HeaderTimeoutMs, c.callers.Milliseconds(), c.callers, c.need, took, outcome(err), menus, charges, c.note)
				}
				var ce *fooddelivery.CallError
				if !errors.As(err, &ce) || ce.Status != http.StatusGatewayTimeout || ce.Code != budgetTooShort || !ce.DontRetry {
					t.Fatalf("step 2: the caller left %v for a checkout that needs at least %v; the order service answered at once, "+
						"but with %s.\nA budget too short for the work is answered 504 Gateway Timeout with error code %q and %s: 1 "+
						"(a retry would arrive with even less time left).%s", c.callers, c.need, describe(err), budgetTooShort, fooddelivery.HeaderDontRetry, c.note)
				}
			})
		})
	}
}

func TestStep2EnoughBudgetStillWorks(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		const callers = 600 * time.Millisecond
		sys := start(t, nil)
		require.NoError(t, sys.Faults.Set("menu", "GET /restaurants/{id}/menu", faults.Fault{Latency: 100 * time.Millisecond}))
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Latency: 100 * time.Millisecond}))

		placed, err := placeWithHeader(context.Background(), sys, strconv.Itoa(int(callers.Milliseconds())))
		if err != nil {
			t.Fatalf("step 2: the caller left %v, more than the %v a checkout needs, and menu and payment took 100ms each; "+
				"the checkout failed: %v. Only a budget below need fails fast.", callers, need, err)
		}
		assert.Equal(t, 1, sys.Ledger.ChargesFor(placed.ID), "step 2: the order is charged exactly once")
	})
}

// TestStep2BudgetOfExactlyNeedIsAccepted checks the boundary of the fast
// failure: a budget equal to need is enough (need is the least the work
// can be done in), so only a budget below need is refused.
func TestStep2BudgetOfExactlyNeedIsAccepted(t *testing.T) {
	for _, need := range []time.Duration{need, 400 * time.Millisecond} {
		t.Run(fmt.Sprintf("%v of %v", need, need), func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
				sys := startWith(t, nil, 0, own, need, hop)
				require.NoError(t, sys.Faults.Set("menu", "GET /restaurants/{id}/menu", faults.Fault{Latency: 10 * time.Millisecond}))
				require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Latency: 10 * time.Millisecond}))

				began := time.Now()
				placed, err := placeWithHeader(context.Background(), sys, strconv.Itoa(int(need.Milliseconds())))
				if err != nil {
					t.Fatalf("step 2: the caller sent %s: %d, exactly the %v the order service (Middleware(own, %v)) needs, "+
						"and menu and payment took 10ms each; the checkout ended after %v with %s, having sent %d request(s) "+
						"to the menu service.\nneed is the least the work can be done in: a budget equal to it fits. Refuse "+
						"only a budget below need (budget < need, not <=).",
						fooddelivery.HeaderTimeoutMs, need.Milliseconds(), need, need, time.Since(began), outcome(err), labtest.MenuCalls(sys))
				}
				assert.Equal(t, 1, sys.Ledger.ChargesFor(placed.ID), "step 2: the order is charged exactly once")
			})
		})
	}
}

func TestStep2NothingLeftIsNotSent(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		const left = 30 * time.Millisecond
		sys := start(t, nil)

		ctx, cancel := context.WithTimeout(context.Background(), left)
		defer cancel()
		sent := &wire{}
		wrap := func(rt http.RoundTripper) http.RoundTripper { return deadlines.Transport(rt, hop) }
		began := time.Now()
		_, err := gatewayWith(t, sys, sent, wrap).PlaceOrder(ctx, "alice", pizza)
		took := time.Since(began)
		atOrder, reached := sent.first("order")
		if err == nil || reached || took > 0 {
			got := "was not sent"
			if reached {
				got = "still went out with " + header(atOrder)
			}
			t.Fatalf("step 2: the gateway had %v left, less than the %v a hop takes; its request %s, and the gateway "+
				"waited %v for %s.\nA request that cannot arrive in time is not sent at all (not even to be refused): "+
				"your Transport fails at once with an error wrapping context.DeadlineExceeded.", left, hop, got, took, outcome(err))
		}
		if !errors.Is(err, fooddelivery.ErrTimeout) {
			t.Fatalf("step 2: the gateway had %v left and its request was rightly not sent, but PlaceOrder returned %v, "+
				"which is not a timeout. Wrap context.DeadlineExceeded in the error your Transport returns (%%w).", left, err)
		}

		// The same, with your Transport called directly and a request body.
		var called bool
		rt := deadlines.Transport(baseFunc(func(r *http.Request) (*http.Response, error) {
			called = true
			return nil, errors.New("the test's base transport was called")
		}), hop)
		ctx, cancel = context.WithTimeout(context.Background(), left)
		defer cancel()
		body := &closeRecorder{Reader: strings.NewReader(`{"card":"tok_visa"}`)}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, memnet.ServiceURL("payment")+"/charges", body)
		require.NoError(t, err, "step 2: building the test's request")
		_, err = rt.RoundTrip(req)
		if called || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("step 2: called directly with %v left, your Transport handed the request to base: %t, and returned %v. "+
				"It must return an error wrapping context.DeadlineExceeded without calling base.", left, called, err)
		}
		if !body.closed {
			t.Fatalf("step 2: called directly with %v left, your Transport rightly did not send a POST, but left its body "+
				"open. A RoundTripper always closes the request body, even when it fails without sending: close req.Body "+
				"when it is not nil.", left)
		}
	})
}
