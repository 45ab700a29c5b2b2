package fallback_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/system"
)

const estimate = "30-45 min (estimate)" // gateway.FormatETA of the default estimate

var publisherLeak = "the review publisher (a goroutine your code started) was still running: " +
	"the stop function Wrap returns must end it and wait for it"

func TestStep1StaleMenuWhileMenuIsDown(t *testing.T) {
	for _, o := range []outage{answers503, hangs} {
		t.Run("menu "+o.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 1, Stuck: "the home page was still waiting for the menu service"}, func(t *testing.T) {
				l := start(t)
				before := l.warm(t, 1)
				l.breakRoutes(t, o.fault, "menu", restaurantsRoute, menuRoute)
				asked := l.received("menu", restaurantsRoute) + l.received("menu", menuRoute)

				resp, v, took := l.home(t, 1, "")
				asked = l.received("menu", restaurantsRoute) + l.received("menu", menuRoute) - asked
				if v.Home == nil || took > pageLimit {
					t.Fatalf("step 1: the menu service %s; the home page took %v and came back with %s.\n"+
						"A moment ago the gateway read every restaurant and menu: remember them, and when the menu service "+
						"does not answer within fallback.ReadBudget, serve those instead of failing the page (within %v).",
						o.name, took, summary(resp), pageLimit)
				}
				require.Len(t, v.Home.Restaurants, 6, "step 1: the last known list had six restaurants")
				for i, r := range v.Home.Restaurants {
					want := before.Home.Restaurants[i]
					if !sameMenu(r.Menu, want.Menu) || !r.MenuStale {
						t.Fatalf("step 1: the menu service %s; restaurant %s showed %d dishes with menuStale=%v. "+
							"Want the last known menu (%d dishes, same prices) marked stale (Menu.Stale = true), "+
							"so the app can say that prices may have changed.", o.name, r.ID, len(r.Menu), r.MenuStale, len(want.Menu))
					}
				}
				if want := int64(1 + len(v.Home.Restaurants)); asked > want {
					t.Fatalf("step 1: the menu service %s; one home page sent it %d requests, where one for the list and one "+
						"per menu make %d. The fallback asked the failed service again: serve the cache instead, the "+
						"service that just failed is the last one to ask (and each extra call adds its wait to the page).",
						o.name, asked, want)
				}
			})
		})
	}
}

func TestStep1NothingCachedIsNotInvented(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		l := start(t) // no warm-up: the gateway has never seen a menu
		l.breakRoutes(t, answers503.fault, "menu", restaurantsRoute, menuRoute)

		resp, _ := l.query(t, 1, "", `{ restaurants { id name } }`, nil)
		var v struct {
			Restaurants []restaurantView `json:"restaurants"`
		}
		if resp.Decode(&v) == nil {
			t.Fatalf("step 1: the gateway had never read the restaurant list and the menu service was down, yet restaurants "+
				"came back with %d entries (%s). A fallback serves the last known data, never made-up data: "+
				"with nothing cached, let the call fail.", len(v.Restaurants), summary(resp))
		}
		if code := codeAt(resp, "restaurants"); code != gateway.CodeUnavailable {
			t.Fatalf("step 1: with nothing cached and the menu service answering 503, restaurants failed with code %s; "+
				"want %s: nothing stale was served, so pass the menu service's error on.", code, gateway.CodeUnavailable)
		}
	})
}

func TestStep1PricesConfirmedAtCheckout(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1, Stuck: "a request was still waiting for the menu service"}, func(t *testing.T) {
		const oldPrice, newPrice = 1150, 1290
		l := start(t)
		l.warm(t, 1)
		l.breakRoutes(t, answers503.fault, "menu", restaurantsRoute, menuRoute)

		_, v, _ := l.home(t, 1, "")
		if shown := priceShown(v); shown != oldPrice {
			t.Fatalf("step 1: while the menu service was down the home page showed the margherita at %d cents "+
				"(0: no menu); want the last known price, %d, from the gateway's cache.", shown, oldPrice)
		}
		// The restaurant raises the price while the menu service is down.
		require.True(t, l.sys.Catalog.SetPrice(system.SampleRestaurant, system.SampleDish, newPrice))
		_, p, _ := l.placeOrder(t, 1, alice, "tok_visa")
		if p.PlaceOrder != nil || l.sys.Ledger.Total() != 0 {
			t.Fatalf("step 1: the menu service was down, so nobody could confirm the prices, yet an order was placed "+
				"and %d charges were made. A checkout must never be priced from the cache.", l.sys.Ledger.Total())
		}

		l.sys.Faults.ClearAll()
		_, p, _ = l.placeOrder(t, 1, alice, "tok_visa")
		require.NotNil(t, p.PlaceOrder, "step 1: with every service healthy again, the order must be placed")
		require.Equal(t, 2*newPrice, p.PlaceOrder.TotalCents, "step 1: checkout charges the confirmed price (2 x %d), not the cached one", newPrice)
		_, v, _ = l.home(t, 1, "")
		if shown, stale := priceShown(v), menuStale(v); shown != newPrice || stale {
			t.Fatalf("step 1: the menu service was back, yet the home page showed the margherita at %d cents with menuStale=%v; "+
				"want the fresh price %d, not stale. Ask the menu service first and fall back only when it fails: "+
				"the cache is for outages.", shown, stale, newPrice)
		}
	})
}

// priceShown is the margherita's price on a home view, 0 if not shown.
func priceShown(v homeView) int {
	if v.Home == nil {
		return 0
	}
	for _, r := range v.Home.Restaurants {
		for _, d := range r.Menu {
			if d.ID == system.SampleDish {
				return d.PriceCents
			}
		}
	}
	return 0
}

func menuStale(v homeView) bool {
	if v.Home == nil {
		return false
	}
	for _, r := range v.Home.Restaurants {
		if r.ID == system.SampleRestaurant {
			return r.MenuStale
		}
	}
	return false
}

func TestStep2DefaultETAWhenCourierIsDownOrSlow(t *testing.T) {
	slow := outage{"takes 5s", faults.Fault{Latency: 5 * time.Second}}
	for _, o := range []outage{answers503, hangs, slow} {
		t.Run("ETA "+o.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 2, Stuck: "the home page was still waiting for the courier service"}, func(t *testing.T) {
				l := start(t)
				l.warm(t, 2)
				l.breakRoutes(t, o.fault, "courier", etaRoute)

				resp, v, took := l.home(t, 2, "")
				if v.Home == nil || took > pageLimit {
					t.Fatalf("step 2: the courier service's ETA endpoint %s; the home page took %v and came back with %s. "+
						"Bound the wait for an ETA with fallback.ReadBudget and show the default instead (within %v).",
						o.name, took, summary(resp), pageLimit)
				}
				for _, r := range v.Home.Restaurants {
					if r.ETA == nil || *r.ETA != estimate {
						got := "null"
						if r.ETA != nil {
							got = fmt.Sprintf("%q", *r.ETA)
						}
						t.Fatalf("step 2: the courier service's ETA endpoint %s; restaurant %s showed eta %s; want %q: "+
							"fallback.DefaultETA for that restaurant, marked as an estimate.", o.name, r.ID, got, estimate)
					}
				}
			})
		})
	}
}

func TestStep2LiveETAWhenCourierIsHealthy(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		l := start(t)
		v := l.warm(t, 2)
		for _, r := range v.Home.Restaurants {
			if r.ETA == nil || strings.HasSuffix(*r.ETA, "(estimate)") {
				t.Fatalf("step 2: the courier service was healthy, yet restaurant %s showed eta %v: show the live estimate "+
					"whenever there is one; the default is for outages.", r.ID, r.ETA)
			}
		}
	})
}

func TestStep3PopularDishesInsteadOfRecommendations(t *testing.T) {
	cases := []struct {
		name  string
		route string
		fault faults.Fault
	}{
		{"recommendations answer 503", recsRoute, answers503.fault},
		{"the whole menu service hangs", "", hangs.fault},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 3, Stuck: "the home page was still waiting for the menu service"}, func(t *testing.T) {
				l := start(t)
				v := l.warm(t, 3)
				personal := catalogIDs(l.sys.Catalog.Recommendations("alice"))
				require.Equal(t, personal, dishIDs(v.Home.Recommendations), "step 3: while healthy, alice gets her personal recommendations")
				popular := catalogIDs(l.sys.Catalog.Popular())
				l.breakRoutes(t, c.fault, "menu", c.route)
				before := l.received("menu", popularRoute)

				resp, took := l.query(t, 3, alice, `{ home { recommendations { id name } } }`, nil)
				var got homeView
				_ = resp.Decode(&got)
				var ids []string
				if got.Home != nil {
					ids = dishIDs(got.Home.Recommendations)
				}
				if !slices.Equal(ids, popular) || took > pageLimit {
					t.Fatalf("step 3: %s; alice's recommendations came back after %v as %v (%s); want the popular dishes %v "+
						"within %v.", c.name, took, ids, summary(resp), popular, pageLimit)
				}
				if asked := l.received("menu", popularRoute) - before; asked > 0 {
					t.Fatalf("step 3: %s, and the fallback asked the menu service for the popular list %d times: a fallback "+
						"must not depend on the component that failed (here the same service). Keep the last popular list "+
						"the gateway saw and serve that.", c.name, asked)
				}
			})
		})
	}
}

func TestStep3AnonymousVisitorsGetPopularDishesInTime(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3, Stuck: "the home page was still waiting for the popular list"}, func(t *testing.T) {
		l := start(t)
		l.warm(t, 3) // an anonymous view: the gateway has seen the popular list
		popular := catalogIDs(l.sys.Catalog.Popular())
		l.breakRoutes(t, hangs.fault, "menu", popularRoute)

		resp, v, took := l.home(t, 3, "")
		var ids []string
		if v.Home != nil {
			ids = dishIDs(v.Home.Recommendations)
		}
		if took > pageLimit || !slices.Equal(ids, popular) {
			t.Fatalf("step 3: the menu service's popular list hangs; an anonymous visitor's home page (whose "+
				"recommendations come from Popular) took %v and showed %v (%s); want the popular dishes %v within %v. "+
				"Popular is a read like the others: bound it with fallback.ReadBudget, and when it fails serve the last "+
				"popular list you kept.", took, ids, summary(resp), popular, pageLimit)
		}
	})
}

// storeDownAfter is how long the review store stays down after a review
// was deferred, so that the publisher's first attempts meet it down.
const storeDownAfter = 3 * time.Second

func TestStep4ReviewAcceptedWhileStoreIsDown(t *testing.T) {
	for _, o := range []outage{answers503, hangs} {
		t.Run("store "+o.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 4, Stuck: "a review was still waiting for the review store", Leak: publisherLeak}, func(t *testing.T) {
				const text = "Best margherita in town"
				l := start(t)
				l.breakRoutes(t, o.fault, "menu", reviewsRoute)

				resp, s, took := l.submitReview(t, 4, alice, system.SampleRestaurant, text)
				if s.SubmitReview == nil || s.SubmitReview.Text != text || took > pageLimit {
					t.Fatalf("step 4: the review store %s; submitReview answered after %v with %s. Accept the review: "+
						"answer with it as submitted (within %v) and keep it to publish when the store is back.",
						o.name, took, summary(resp), pageLimit)
				}
				require.Zero(t, l.sys.Reviews.Len(), "step 4: the store was down, so nothing can be stored yet")

				time.Sleep(storeDownAfter) // the publisher meets the store down too
				l.sys.Faults.ClearAll()
				time.Sleep(publishWithin)
				if n := l.reviewsWithText(system.SampleRestaurant, text); n == 0 {
					t.Fatalf("step 4: the review store %s for %v more after the review was accepted; %v after it came back, "+
						"the review had not been stored. Publish deferred reviews from a goroutine that tries again every "+
						"second or so, each attempt bounded by fallback.WriteBudget (an attempt that waits on a hanging "+
						"store holds up every review behind it).", o.name, storeDownAfter, publishWithin)
				} else if n > 1 {
					t.Fatalf("step 4: the review store %s for %v more after the review was accepted; %v after it came back, "+
						"the review had been stored %d times; want exactly once. Only one goroutine may publish, and a "+
						"review leaves the queue as soon as the store took it.", o.name, storeDownAfter, publishWithin, n)
				}
				time.Sleep(time.Minute)
				if n := l.reviewsWithText(system.SampleRestaurant, text); n != 1 {
					t.Fatalf("step 4: a minute later the review had been stored %d times: once the store took it, "+
						"a review must leave the queue.", n)
				}
			})
		})
	}
}

func TestStep4FlakyRecoveryPublishesEachReviewOnce(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4, Leak: publisherLeak}, func(t *testing.T) {
		const reviews = 8
		const flaky = 20 * time.Second
		l := start(t)
		l.breakRoutes(t, answers503.fault, "menu", reviewsRoute)
		for i := range reviews {
			_, s, _ := l.submitReview(t, 4, alice, system.SampleRestaurant, fmt.Sprintf("review %d", i))
			require.NotNil(t, s.SubmitReview, "step 4: a review submitted while the store is down must be accepted")
		}
		// The store comes back unreliable: half of its answers are errors.
		l.breakRoutes(t, faults.Fault{Status: 503, Probability: 0.5}, "menu", reviewsRoute)
		time.Sleep(flaky)
		l.sys.Faults.ClearAll()
		time.Sleep(publishWithin)

		lost, doubled, stored := 0, 0, l.sys.Reviews.Len()
		for i := range reviews {
			switch n := l.reviewsWithText(system.SampleRestaurant, fmt.Sprintf("review %d", i)); {
			case n == 0:
				lost++
			case n > 1:
				doubled++
			}
		}
		if lost > 0 || doubled > 0 {
			t.Fatalf("step 4: %d reviews were accepted while the store was down; it came back unreliable (half of its "+
				"answers errors) for %v, then healthy. %d were never published and %d were published more than once "+
				"(%d stored in all). Each must be published exactly once: take a review off the queue only after the "+
				"store took it, and keep every one it did not.", reviews, flaky, lost, doubled, stored)
		}
	})
}

func TestStep4RefusedReviewIsNotDeferred(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 4, Leak: publisherLeak}, func(t *testing.T) {
		l := start(t)
		resp, s, _ := l.submitReview(t, 4, alice, "no-such-restaurant", "Where is it?")
		if code := codeAt(resp, "submitReview"); s.SubmitReview != nil || code != gateway.CodeNotFound {
			t.Fatalf("step 4: a review of a restaurant that does not exist came back with %s (code %s at submitReview); "+
				"want null and %s. Defer only when the store cannot answer, never its own refusal.",
				summary(resp), code, gateway.CodeNotFound)
		}
		time.Sleep(publishWithin)
		require.Zero(t, l.sys.Reviews.Len(), "step 4: a refused review is never stored")
	})
}

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
	}{
		{"payment hangs", "payment", chargesRoute, hangs.fault, gateway.CodeNotConfirmed,
			"the gateway stopped waiting (fooddelivery.ErrTimeout), so it cannot know whether the card was charged"},
		{"payment refuses connections", "payment", "", faults.Fault{Connect: memnet.Refused}, gateway.CodeNotCharged,
			"the order service answered that payment was unavailable (fooddelivery.ErrUnavailable): no charge was made"},
		{"the menu service hangs, so prices cannot be confirmed", "menu", menuRoute, hangs.fault, gateway.CodeNotConfirmed,
			"the gateway stopped waiting (fooddelivery.ErrTimeout); from where it stands the order's fate is unknown"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 5, Stuck: "placeOrder was still waiting"}, func(t *testing.T) {
				l := start(t)
				l.breakRoutes(t, c.fault, c.service, c.route)

				resp, p, took := l.placeOrder(t, 5, alice, "tok_visa")
				require.Nil(t, p.PlaceOrder, "step 5: %s, so no order can be placed", c.name)
				if code := codeAt(resp, "placeOrder"); took > checkoutLimit || code != c.want {
					t.Fatalf("step 5: %s; placeOrder answered after %v with code %s. A customer at checkout needs a fast, "+
						"clear answer within %v: bound the call with fallback.CheckoutBudget and answer code %s: %s.",
						c.name, took, code, checkoutLimit, c.want, c.why)
				}
				msg := strings.ToLower(resp.ErrorAt("placeOrder").Message)
				for _, words := range mustSay[c.want] {
					if !strings.Contains(msg, words) {
						t.Fatalf("step 5: %s; placeOrder answered %s with the message %q, which does not say %q. "+
							"The customer acts on this message: with %s it must say %s.",
							c.name, c.want, firstWords(msg, 80), words, c.want, strings.Join(quoted(mustSay[c.want]), ", "))
					}
				}
				require.Zero(t, l.sys.Ledger.Total(), "step 5: %s: nothing may be charged", c.name)
			})
		})
	}
}

func quoted(ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = fmt.Sprintf("%q", w)
	}
	return out
}

// firstWords shortens s to about n bytes.
func firstWords(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func TestStep5DeclinedCardIsNotAnOutage(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
		l := start(t)
		resp, _, _ := l.placeOrder(t, 5, alice, "tok_declined")
		if code := codeAt(resp, "placeOrder"); code != gateway.CodeBadRequest {
			t.Fatalf("step 5: a declined card came back with code %s; want %s, the payment service's own verdict. "+
				"\"Try again later\" is for outages; a declined card needs another card.", code, gateway.CodeBadRequest)
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

// expectation is a field error the response must carry.
type expectation struct {
	path []any
	code string
}

// mismatches lists, in words, the expectations resp does not meet and the
// errors it has beyond them.
func mismatches(resp *gateway.Response, want []expectation) []string {
	var out []string
	for _, w := range want {
		if got := codeAt(resp, w.path...); got != w.code {
			out = append(out, fmt.Sprintf("%s: code %s, want %s", pathText(w.path), got, w.code))
		}
	}
	for _, e := range resp.Errors {
		if !slices.ContainsFunc(want, func(w expectation) bool { return slices.Equal(e.Path, w.path) }) {
			out = append(out, fmt.Sprintf("%s: code %s, want no error", pathText(e.Path), e.Code()))
		}
	}
	return out
}

func firstFew(s []string) string {
	if len(s) > 3 {
		return strings.Join(s[:3], "; ") + fmt.Sprintf("; and %d more", len(s)-3)
	}
	return strings.Join(s, "; ")
}

func homeExpectations(menu, eta, recs string) []expectation {
	var want []expectation
	if menu != "" {
		want = append(want, expectation{[]any{"home", "restaurants"}, menu})
	}
	for i := range 6 {
		if menu != "" {
			want = append(want, expectation{[]any{"home", "restaurants", i, "menu"}, menu})
		}
		if eta != "" {
			want = append(want, expectation{[]any{"home", "restaurants", i, "eta"}, eta})
		}
	}
	if recs != "" {
		want = append(want, expectation{[]any{"home", "recommendations"}, recs})
	}
	return want
}

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

// calls counts the requests that reached each dependency the fallbacks
// stand in for.
func (l *lab) calls() map[string]int64 {
	return map[string]int64{
		"the menu service (restaurants, menus, recommendations, popular)": l.received("menu", restaurantsRoute) +
			l.received("menu", menuRoute) + l.received("menu", recsRoute) + l.received("menu", popularRoute),
		"the courier service's ETA": l.received("courier", etaRoute),
		"the review store":          l.received("menu", reviewsRoute),
		"the order service":         l.received("order", ordersRoute),
	}
}

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
		for dep, n := range l.calls() {
			if d := n - before[dep]; d > 0 {
				called = append(called, fmt.Sprintf("%s %d time%s", dep, d, map[bool]string{true: "s"}[d > 1]))
			}
		}
		slices.Sort(called)
		if len(problems) > 0 || len(called) > 0 {
			t.Fatalf("step 8: the game-day switch forced every fallback on a healthy system. Fallbacks that did not answer: "+
				"%s. Calls the gateway still made: %s.\nEach wrapper must check gameDay.Forced(its feature) first and, when "+
				"forced, answer from its fallback exactly as if the dependency were down, without calling it (the review "+
				"publisher too: it waits while reviews are forced): that is how you learn before an incident that the fallback works.", orNone(firstFew(problems)), orNone(strings.Join(called, ", ")))
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

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
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
