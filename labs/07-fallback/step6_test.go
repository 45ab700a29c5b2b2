package fallback_test

import (
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/system"
)

func TestStep6AuthDownDeniesEveryone(t *testing.T) {
	for _, o := range []outage{answers503, hangs} {
		t.Run("auth "+o.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 6, Stuck: "a request was still waiting for the auth service"}, func(t *testing.T) {
				l := start(t)
				l.breakRoutes(t, o.fault, "auth", authRoute)

				var requests, through int
				var slowest time.Duration
				for _, token := range []string{alice, mallory} {
					resp, p, took := l.placeOrder(t, 6, token, "tok_visa")
					requests, slowest = requests+1, max(slowest, took)
					if p.PlaceOrder != nil || codeAt(resp, "placeOrder") != gateway.CodeAuthUnavailable {
						through++
					}
					resp, s, took := l.submitReview(t, 6, token, system.SampleRestaurant, "from "+token)
					requests, slowest = requests+1, max(slowest, took)
					if s.SubmitReview != nil || codeAt(resp, "submitReview") != gateway.CodeAuthUnavailable {
						through++
					}
				}
				orders := l.received("order", ordersRoute)
				time.Sleep(publishWithin) // a review let through might be published later
				if through > 0 || orders > 0 || l.sys.Reviews.Len() > 0 {
					t.Fatalf("step 6: the auth service %s. Of %d requests that need a signed-in user (orders and reviews as "+
						"alice and as %s, a token auth never issued), %d were let through: %d reached the order service, "+
						"%d reviews were stored. When sign-in cannot be checked the only safe answer is no: return the "+
						"error and the gateway denies with %s (fail closed).",
						o.name, requests, mallory, through, orders, l.sys.Reviews.Len(), gateway.CodeAuthUnavailable)
				}
				if slowest > pageLimit {
					t.Fatalf("step 6: the auth service %s; requests were denied, but only after %v. Bound the auth check "+
						"with fallback.AuthBudget so a denial is quick too (within %v).", o.name, slowest, pageLimit)
				}
			})
		})
	}
}

func TestStep6RefusedTokenIsUnauthenticated(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 6}, func(t *testing.T) {
		l := start(t)
		resp, p, _ := l.placeOrder(t, 6, mallory, "tok_visa")
		if code := codeAt(resp, "placeOrder"); p.PlaceOrder != nil || code != gateway.CodeUnauthenticated {
			t.Fatalf("step 6: auth was healthy and refused %s, yet placeOrder came back with code %s (placed: %v); "+
				"want %s: a refused token is refused, whatever the fallbacks do.", mallory, code, p.PlaceOrder != nil, gateway.CodeUnauthenticated)
		}
	})
}
