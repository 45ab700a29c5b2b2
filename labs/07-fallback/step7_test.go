package fallback_test

import (
	"testing"

	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/system"
)

func TestStep7DegradedFieldsCarryErrors(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 7, Stuck: "the home page was still waiting"}, func(t *testing.T) {
		l := start(t)
		l.warm(t, 7)
		l.breakRoutes(t, answers503.fault, "menu", restaurantsRoute, menuRoute, recsRoute)
		l.breakRoutes(t, answers503.fault, "courier", etaRoute)

		resp, v, _ := l.home(t, 7, alice)
		if v.Home == nil || len(v.Home.Restaurants) != 6 || len(v.Home.Recommendations) == 0 {
			t.Fatalf("step 7: with menu, courier and recommendations down, the home page must render from the fallbacks of steps 1-3; got %s", summary(resp))
		}
		want := homeExpectations(gateway.CodeStale, gateway.CodeEstimated, gateway.CodeDegraded)
		if bad := mismatches(resp, want); len(bad) > 0 {
			t.Fatalf("step 7: the home page rendered from fallbacks, but the errors do not say which fields degraded: %s.\n"+
				"Return the fallback's value together with a *gateway.FallbackError: Code gateway.CodeStale for cached "+
				"restaurants and menus, CodeEstimated for the default ETA, CodeDegraded for popular dishes. The gateway "+
				"keeps the value and reports the error at that field's path.", firstFew(bad))
		}
	})
}

func TestStep7OnlyDegradedFieldsCarryErrors(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 7, Stuck: "the home page was still waiting"}, func(t *testing.T) {
		l := start(t)
		l.warm(t, 7)
		l.breakRoutes(t, answers503.fault, "courier", etaRoute)

		resp, v, _ := l.home(t, 7, alice)
		if bad := mismatches(resp, homeExpectations("", gateway.CodeEstimated, "")); v.Home == nil || len(bad) > 0 {
			t.Fatalf("step 7: only the courier service was down, so only the six ETAs degraded; the response had %s: %s. "+
				"Each default ETA carries %s; every other field is normal and carries no error.",
				summary(resp), firstFew(bad), gateway.CodeEstimated)
		}
	})
}

func TestStep7DeferredReviewCarriesError(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 7, Leak: publisherLeak}, func(t *testing.T) {
		l := start(t)
		l.breakRoutes(t, answers503.fault, "menu", reviewsRoute)
		resp, s, _ := l.submitReview(t, 7, alice, system.SampleRestaurant, "Lovely crust")
		if code := codeAt(resp, "submitReview"); s.SubmitReview == nil || code != gateway.CodeDeferred {
			t.Fatalf("step 7: the review store was down; submitReview came back with %s (code %s at submitReview). "+
				"Want the review as accepted, with a %s error saying it will appear later.", summary(resp), code, gateway.CodeDeferred)
		}
	})
}
