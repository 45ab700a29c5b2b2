package fallback_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/system"
)

func TestStep8GameDayForcesEveryFallback(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 8, Leak: publisherLeak}, func(t *testing.T) {
		const text = "Came cold, still great"
		l := start(t)
		l.warm(t, 8)
		l.gameDay.Force(fooddelivery.FeatureMenu, fooddelivery.FeatureETA, fooddelivery.FeatureRecommendations,
			fooddelivery.FeatureReviews, fooddelivery.FeatureCheckout)
		before := l.calls()

		home, _, _ := l.home(t, 8, alice)
		anonymous, _, _ := l.home(t, 8, "") // Popular, not Recommendations
		review, _, _ := l.submitReview(t, 8, alice, system.SampleRestaurant, text)
		order, _, _ := l.placeOrder(t, 8, alice, "tok_visa")
		time.Sleep(publishWithin) // the game day goes on: the review publisher must wait too
		problems := mismatches(home, homeExpectations(gateway.CodeStale, gateway.CodeEstimated, gateway.CodeDegraded))
		if code := codeAt(anonymous, "home", "recommendations"); code != gateway.CodeStale {
			problems = append(problems, fmt.Sprintf("an anonymous visitor's home.recommendations (Popular): code %s, want %s "+
				"(the last popular list, served from memory)", code, gateway.CodeStale))
		}
		if code := codeAt(review, "submitReview"); code != gateway.CodeDeferred {
			problems = append(problems, fmt.Sprintf("submitReview: code %s, want %s", code, gateway.CodeDeferred))
		}
		if code := codeAt(order, "placeOrder"); code != gateway.CodeNotCharged {
			problems = append(problems, fmt.Sprintf("placeOrder: code %s, want %s", code, gateway.CodeNotCharged))
		}
		var called []string
		calls := int64(0)
		for dep, n := range l.calls() {
			if d := n - before[dep]; d > 0 {
				calls += d
				called = append(called, fmt.Sprintf("%s %d time%s", dep, d, map[bool]string{true: "s"}[d > 1]))
			}
		}
		slices.Sort(called)
		if len(problems) > 0 || len(called) > 0 {
			t.Fatalf("step 8: the game-day switch forced every fallback on a healthy system. %d fallbacks did not answer: "+
				"%s. The gateway still made %d calls: %s.\nEach wrapper must check gameDay.Forced(its feature) first and, when "+
				"forced, answer from its fallback exactly as if the dependency were down, without calling it (the review "+
				"publisher too: it waits while reviews are forced): that is how you learn before an incident that the fallback works.", len(problems), orNone(firstFew(problems)), calls, orNone(strings.Join(called, ", ")))
		}

		l.gameDay.Release()
		time.Sleep(publishWithin)
		if n := l.reviewsWithText(system.SampleRestaurant, text); n != 1 {
			t.Fatalf("step 8: %v after the game day ended, the review deferred during it had been stored %d times; want exactly once.",
				publishWithin, n)
		}
		if resp, _, _ := l.home(t, 8, alice); len(resp.Errors) > 0 {
			t.Fatalf("step 8: after the game day ended the home page still had %s; with the switch released every "+
				"dependency is called again.", summary(resp))
		}
	})
}

func TestStep8GameDayForcesAuthToDeny(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 8}, func(t *testing.T) {
		l := start(t)
		l.gameDay.Force(fooddelivery.FeatureAuth)
		before := l.received("auth", authRoute)

		resp, p, _ := l.placeOrder(t, 8, alice, "tok_visa")
		asked := l.received("auth", authRoute) - before
		if code := codeAt(resp, "placeOrder"); p.PlaceOrder != nil || code != gateway.CodeAuthUnavailable || asked > 0 {
			t.Fatalf("step 8: the game-day switch forced the auth fallback; placeOrder as alice came back with code %s "+
				"(placed: %v) and the auth service was asked %d times. Forced, the auth check must deny without asking, "+
				"exactly as when auth is down: return an error (fooddelivery.ErrForced) and the gateway answers %s.",
				code, p.PlaceOrder != nil, asked, gateway.CodeAuthUnavailable)
		}
	})
}
