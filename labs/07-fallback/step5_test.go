package fallback_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
)

// What a clear checkout failure must say, by code (README step 5); the
// words are checked case-insensitively.
var mustSay = map[string][]string{
	gateway.CodeNotCharged:   {"not placed", "not charged", "try again"},
	gateway.CodeNotConfirmed: {"could not confirm", "check your orders"},
}

func TestStep5CheckoutFailsFastAndClearly(t *testing.T) {
	cases := []struct {
		name           string
		service, route string
		fault          faults.Fault
		want           string // the code, and why it is that one
		why            string
		charged        int // charges the scenario makes before the answer is lost
	}{
		{"payment hangs", "payment", chargesRoute, hangs.fault, gateway.CodeNotConfirmed,
			"the gateway stopped waiting (fooddelivery.ErrTimeout), so it cannot know whether the card was charged", 0},
		{"payment refuses connections", "payment", "", faults.Fault{Connect: memnet.Refused}, gateway.CodeNotCharged,
			"the order service answered that payment was unavailable (fooddelivery.ErrUnavailable, code payment_unavailable): " +
				"it could not connect, so no charge was made", 0},
		{"the menu service hangs, so prices cannot be confirmed", "menu", menuRoute, hangs.fault, gateway.CodeNotConfirmed,
			"the gateway stopped waiting (fooddelivery.ErrTimeout); from where it stands the order's fate is unknown", 0},
		{"payment charges the card, then its answer to the order service is lost", "payment", chargesRoute,
			faults.Fault{LoseResponse: true}, gateway.CodeNotConfirmed,
			"the order service answered 502 with code order.CodePaymentUnconfirmed: it sent the charge and got no answer, " +
				"so the card may have been charged; NOT_CHARGED only when nothing can have been charged", 1},
		{"the order service charges the card, then its answer to the gateway is lost", "order", ordersRoute,
			faults.Fault{LoseResponse: true}, gateway.CodeNotConfirmed,
			"the gateway sent the order and got no answer at all (fooddelivery.ErrUnavailable without a status, " +
				"not a refused connection: fooddelivery.Unsent is false), so the order may have gone through", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 5, Stuck: "placeOrder was still waiting"}, func(t *testing.T) {
				l := start(t)
				l.breakRoutes(t, c.fault, c.service, c.route)

				resp, p, took := l.placeOrder(t, 5, alice, "tok_visa")
				require.Nil(t, p.PlaceOrder, "step 5: %s, so no order can be placed", c.name)
				code := codeAt(resp, "placeOrder")
				if took > checkoutLimit {
					t.Fatalf("step 5: %s; placeOrder answered after %v with code %s. A customer at checkout needs a fast, "+
						"clear answer within %v: bound the call with fallback.CheckoutBudget and answer code %s: %s.",
						c.name, took, code, checkoutLimit, c.want, c.why)
				}
				if code != c.want {
					t.Fatalf("step 5: %s; placeOrder answered after %v with code %s, and payment executed %d charges; "+
						"want code %s: %s.", c.name, took, code, l.sys.Ledger.Total(), c.want, c.why)
				}
				msg := strings.ToLower(resp.ErrorAt("placeOrder").Message)
				for _, words := range mustSay[c.want] {
					if !strings.Contains(msg, words) {
						t.Fatalf("step 5: %s; placeOrder answered %s after %v with the message %q, which does not say %q. "+
							"The customer acts on this message: with %s it must say %s.",
							c.name, c.want, took, firstWords(msg, 80), words, c.want, strings.Join(quoted(mustSay[c.want]), ", "))
					}
				}
				if charges := l.sys.Ledger.Total(); charges != c.charged {
					t.Fatalf("step 5: %s; payment executed %d charges, want %d: the checkout wrapper must not charge "+
						"(nor retry a charge) on its own.", c.name, charges, c.charged)
				}
			})
		})
	}
}

func TestStep5DeclinedCardIsNotAnOutage(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
		l := start(t)
		resp, _, took := l.placeOrder(t, 5, alice, "tok_declined")
		if code := codeAt(resp, "placeOrder"); code != gateway.CodeBadRequest {
			t.Fatalf("step 5: a declined card came back after %v with code %s (payment executed %d charges, "+
				"%d requests reached it); want %s, the payment service's own verdict. "+
				"\"Try again later\" is for outages; a declined card needs another card.",
				took, code, l.sys.Ledger.Total(), l.received("payment", chargesRoute), gateway.CodeBadRequest)
		}
	})
}

func TestStep5SlowButHealthyCheckoutSucceeds(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
		l := start(t)
		l.breakRoutes(t, faults.Fault{Latency: time.Second}, "payment", chargesRoute)
		resp, p, _ := l.placeOrder(t, 5, alice, "tok_visa")
		require.NotNil(t, p.PlaceOrder, "step 5: payment took 1s, well within the checkout budget, yet no order was placed (%s)", summary(resp))
		require.Equal(t, 1, l.sys.Ledger.ChargesFor(p.PlaceOrder.ID), "step 5: the order is charged exactly once")
	})
}
