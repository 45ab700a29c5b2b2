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

func TestStep1BudgetTravelsDownstream(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		w := &wire{}
		sys := start(t, w)
		require.NoError(t, sys.Faults.Set("menu", "GET /restaurants/{id}/menu", faults.Fault{Latency: 300 * time.Millisecond}))
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Latency: 200 * time.Millisecond}))

		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		began := time.Now()
		_, err := gateway(t, sys).PlaceOrder(ctx, "alice", pizza)
		require.NoError(t, err, "step 1: menu took 300ms and payment 200ms, well within the gateway's %v budget, yet the checkout failed", budget)

		gatewayDeadline := began.Add(budget)
		atOrder, _ := w.first("order")
		checkBudget(t, "the order service", atOrder, began, gatewayDeadline.Add(-hop),
			fmt.Sprintf("the gateway gives up at %v and one hop allowance (%v) goes to the network", budget, hop))
		atMenu, ok := w.first("menu")
		require.True(t, ok, "step 1: the checkout succeeded without asking the menu service for prices")
		checkBudget(t, "the menu service", atMenu, began, gatewayDeadline.Add(-2*hop),
			"the order service's own deadline is the gateway's less a hop, and it is one more hop away")
		atPayment, ok := w.first("payment")
		require.True(t, ok, "step 1: the checkout succeeded without a payment call")
		checkBudget(t, "the payment service", atPayment, began, gatewayDeadline.Add(-2*hop),
			"the 300ms spent on the menu are gone: the budget only shrinks along a request")
	})
}

func TestStep1OrderServiceHonoursTheCallersBudget(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "PlaceOrder was still waiting for the hanging payment service"}, func(t *testing.T) {
		const callers = 1500 * time.Millisecond
		sys := start(t, nil)
		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Hang: hang}))

		began := time.Now()
		_, err := placeWithHeader(context.Background(), sys, strconv.Itoa(int(callers.Milliseconds())))
		took := time.Since(began)
		if took > callers+slack || took < callers-slack || !errors.Is(err, fooddelivery.ErrTimeout) {
			hint := lostDeadline(took)
			if hint == "" {
				hint = " Read the header in your Middleware and put that deadline on the request's context."
			}
			t.Fatalf("step 1: the caller sent %s: %d and payment hung; the order service answered after %v with %v.\n"+
				"It must work for the caller's %v and no longer (its own %v is only for callers that send no budget), "+
				"then answer 504 (a timeout).%s",
				fooddelivery.HeaderTimeoutMs, callers.Milliseconds(), took, err, callers, own, hint)
		}
	})
}

func TestStep1NoHeaderMeansTheServicesOwnBudget(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "PlaceOrder was still waiting for the hanging payment service"}, func(t *testing.T) {
		w := &wire{}
		sys := start(t, w)
		// A gateway whose context has no deadline has no budget to send.
		sent := &wire{}
		wrap := func(rt http.RoundTripper) http.RoundTripper { return deadlines.Transport(rt, hop) }
		placed, err := gatewayWith(t, sys, sent, wrap).PlaceOrder(context.Background(), "alice", pizza)
		atOrder, _ := sent.first("order")
		if err != nil || atOrder.sent {
			got := header(atOrder)
			t.Fatalf("step 1: the gateway's context has no deadline; your Transport sent %s and the healthy checkout "+
				"ended with %s.\nWith no deadline there is nothing to send: your Transport passes the request on unchanged "+
				"(check the ok of req.Context().Deadline()), and the order service then works within its own %v.",
				got, outcome(err), own)
		}
		assert.Equal(t, 1, sys.Ledger.ChargesFor(placed.ID), "step 1: the order is charged exactly once")
		atPayment, _ := w.first("payment")
		checkBudget(t, "the payment service", atPayment, atPayment.at, atPayment.at.Add(own-hop),
			fmt.Sprintf("without a header from its caller the order service works within its own %v", own))

		require.NoError(t, sys.Faults.Set("payment", "POST /charges", faults.Fault{Hang: hang}))
		began := time.Now()
		_, err = placeWithHeader(context.Background(), sys, "")
		took := time.Since(began)
		if took > own+slack || took < own-slack || !errors.Is(err, fooddelivery.ErrTimeout) {
			t.Fatalf("step 1: the caller sent no budget and payment hung; the order service answered after %v with %v. "+
				"Without a header it must work for its own %v, then answer 504 (a timeout).%s", took, err, own, lostDeadline(took))
		}
	})
}

func TestStep1OtherSettingsAreHonoured(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		// Another service's settings: a 3s budget of its own, 80ms per hop.
		const own, need, hop = 3 * time.Second, 400 * time.Millisecond, 80 * time.Millisecond
		w, sent := &wire{}, &wire{}
		sys := startWith(t, w, 0, own, need, hop)
		wrap := func(rt http.RoundTripper) http.RoundTripper { return deadlines.Transport(rt, hop) }

		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		_, err := gatewayWith(t, sys, sent, wrap).PlaceOrder(ctx, "alice", pizza)
		atOrder, _ := sent.first("order")
		want := strconv.FormatInt((budget - hop).Milliseconds(), 10)
		if err != nil || atOrder.value != want {
			t.Fatalf("step 1: with Transport(base, %v) and a %v budget, the gateway sent %s and the healthy "+
				"checkout ended with %s. It must send %s: %s: %v less the hop allowance you were given, not the lab's 50ms.",
				hop, budget, header(atOrder), outcome(err), fooddelivery.HeaderTimeoutMs, want, budget)
		}

		_, err = placeWithHeader(context.Background(), sys, "")
		atPayment := w.last("payment")
		want = strconv.FormatInt((own - hop).Milliseconds(), 10)
		if err != nil || atPayment.value != want {
			t.Fatalf("step 1: with Middleware(%v, %v) and Transport(base, %v), a caller that sent no budget got %s, and "+
				"payment received %s. It must receive %s: %s: the service's own %v less one hop. Use the own and hop "+
				"arguments, not the lab's 10s and 50ms.",
				own, need, hop, outcome(err), header(atPayment), fooddelivery.HeaderTimeoutMs, want, own)
		}
	})
}

func TestStep1TransportWritesOnACopy(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		const left = time.Second + 500*time.Microsecond
		var sent *http.Request
		rt := deadlines.Transport(baseFunc(func(r *http.Request) (*http.Response, error) {
			sent = r
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
		}), hop)
		ctx, cancel := context.WithTimeout(context.Background(), left)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, memnet.ServiceURL("menu")+"/restaurants/r1/menu", nil)
		require.NoError(t, err, "step 1: building the test's request")

		resp, err := rt.RoundTrip(req)
		if err != nil || sent == nil {
			t.Fatalf("step 1: called directly with %v left, your Transport returned %v without handing the request "+
				"to base (sent: %t). With more than the %v hop allowance left, the request goes out.", left, err, sent != nil, hop)
		}
		resp.Body.Close()
		const want = "950"
		if got, ok := sent.Header[http.CanonicalHeaderKey(fooddelivery.HeaderTimeoutMs)]; !ok {
			t.Fatalf("step 1: called directly with %v left and a %v hop allowance, your Transport wrote no %s header; "+
				"it must write %q (see the first test of this step).", left, hop, fooddelivery.HeaderTimeoutMs, want)
		} else if strings.Join(got, ",") != want {
			t.Fatalf("step 1: called directly with %v left and a %v hop allowance, your Transport wrote %s: %q; it must "+
				"write %q: whole milliseconds, rounded down (rounding up promises the callee time the caller does not have).",
				left, hop, fooddelivery.HeaderTimeoutMs, strings.Join(got, ","), want)
		}
		if v, ok := req.Header[http.CanonicalHeaderKey(fooddelivery.HeaderTimeoutMs)]; ok || sent == req {
			t.Fatalf("step 1: after RoundTrip, the caller's own request carries %s: %q. A RoundTripper must not modify "+
				"the request it is given (its caller may reuse it, or still read it): set the header on "+
				"req.Clone(req.Context()) and send that.", fooddelivery.HeaderTimeoutMs, strings.Join(v, ","))
		}
		cancel() // the caller gives up
		if sent.Context().Err() == nil {
			deadline := "no deadline at all"
			if d, ok := sent.Context().Deadline(); ok {
				deadline = fmt.Sprintf("a deadline %v from now", time.Until(d))
			}
			t.Fatalf("step 1: called directly with %v left, the caller then cancelled its context, but the request your "+
				"Transport handed to base was not cancelled (its context has %s): it does not carry the caller's context, "+
				"so a caller who gives up cannot stop the call. Copy the request with req.Clone(req.Context()), not "+
				"http.NewRequest or a clone with context.Background().", left, deadline)
		}
	})
}

// TestStep1BadSettingsPanic checks that a configuration error is refused
// when the service is built, not discovered request by request: an own
// budget of zero or less would refuse (or expire) every request that
// carries no header, a negative need or hop has no meaning.
func TestStep1BadSettingsPanic(t *testing.T) {
	cases := []struct {
		name  string
		build func()
		note  string
	}{
		{"Middleware(0s, 250ms)", func() { deadlines.Middleware(0, need) },
			" With own 0 every caller that sends no budget is refused (or handed an expired context)."},
		{"Middleware(-10s, 250ms)", func() { deadlines.Middleware(-own, need) },
			" With a negative own every caller that sends no budget is refused (or handed an expired context)."},
		{"Middleware(10s, -1ms)", func() { deadlines.Middleware(own, -time.Millisecond) }, ""},
		{"Transport(base, -1ms)", func() { deadlines.Transport(http.DefaultTransport, -time.Millisecond) },
			" A negative hop allowance would promise the callee more time than the caller has."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
				panicked := func() (p any) {
					defer func() { p = recover() }()
					c.build()
					return nil
				}()
				if panicked == nil {
					t.Fatalf("step 1: %s returned without panicking. own must be above 0, need and hop at least 0: "+
						"anything else is a configuration error, and it must stop the service as it is built (panic), "+
						"not surface later as refused requests.%s", c.name, c.note)
				}
			})
		})
	}
}
