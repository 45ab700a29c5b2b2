package fallback_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/system"
)

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
