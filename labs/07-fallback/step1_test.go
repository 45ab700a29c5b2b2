package fallback_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
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

// TestStep1RefusedMenuFallsBack lays a layer below the fallbacks that
// refuses every menu read the way the patterns of labs 04 to 06 do: an
// open circuit breaker, a full bulkhead, a service that says it is
// overloaded. Each is an outage the fallback covers.
func TestStep1RefusedMenuFallsBack(t *testing.T) {
	refusals := []struct {
		what, sentinel string
		err            error
	}{
		{"an open circuit breaker (lab 05)", "fooddelivery.ErrCircuitOpen",
			fmt.Errorf("menu: %w (until 12:10:30)", fooddelivery.ErrCircuitOpen)},
		{"a full bulkhead (lab 06)", "fooddelivery.ErrBulkheadFull",
			fmt.Errorf("%w: menu has all 10 slots in use (waited 0s)", fooddelivery.ErrBulkheadFull)},
		{"an overloaded menu service (503, don't retry)", "fooddelivery.ErrOverloaded",
			&fooddelivery.CallError{Service: "menu", Status: 503, DontRetry: true, Err: fooddelivery.ErrOverloaded}},
	}
	for _, r := range refusals {
		t.Run(r.what, func(t *testing.T) {
			labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
				refusing := &refusingMenu{}
				l := startBelow(t, func(d gateway.Deps) gateway.Deps {
					refusing.MenuReader = d.Menu
					d.Menu = refusing
					return d
				})
				before := l.warm(t, 1)
				refusing.refuse.Store(&r.err)

				resp, v, took := l.home(t, 1, "")
				if v.Home == nil || len(v.Home.Restaurants) != len(before.Home.Restaurants) {
					n := 0
					if v.Home != nil {
						n = len(v.Home.Restaurants)
					}
					t.Fatalf("step 1: %s below your fallbacks refused every menu read (an error wrapping %s); the home page "+
						"took %v and came back with %s and %d of the %d restaurants it showed a moment ago. A refused call "+
						"is an outage too: fooddelivery.ErrCircuitOpen, ErrBulkheadFull and ErrOverloaded are fallback cues "+
						"like ErrTimeout and ErrUnavailable, so serve the last known list and menus.",
						r.what, r.sentinel, took, summary(resp), n, len(before.Home.Restaurants))
				}
				for i, got := range v.Home.Restaurants {
					if want := before.Home.Restaurants[i]; !sameMenu(got.Menu, want.Menu) || !got.MenuStale {
						t.Fatalf("step 1: %s below your fallbacks refused every menu read; restaurant %s showed %d dishes "+
							"with menuStale=%v. Want the last known menu (%d dishes) marked stale: a refusal is a fallback "+
							"cue like a timeout.", r.what, got.ID, len(got.Menu), got.MenuStale, len(want.Menu))
					}
				}
			})
		})
	}
}

// TestStep1CacheIsNotTheCallersSlice edits what the menu wrapper returned,
// the way a caller may (a discount, a sort), and checks that the cache
// still serves what the menu service said. Slices share their array: a
// cache that keeps the slice it returns, or returns the slice it keeps,
// lets any caller rewrite it.
func TestStep1CacheIsNotTheCallersSlice(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 1}, func(t *testing.T) {
		const edited = 1 // cents: the price a careless caller writes into its copy
		l := start(t)
		ctx := context.Background()
		list, err := l.deps.Menu.Restaurants(ctx)
		require.NoError(t, err, "step 1: with the menu service healthy, Restaurants must succeed")
		m, err := l.deps.Menu.Menu(ctx, system.SampleRestaurant)
		require.NoError(t, err, "step 1: with the menu service healthy, Menu must succeed")
		require.NotEmpty(t, list, "step 1: the healthy menu service lists restaurants")
		wantList, wantPrice := slices.Clone(list), priceOf(m.Dishes, system.SampleDish)
		require.NotZero(t, wantPrice, "step 1: the healthy menu lists the margherita")

		// The caller edits what it was given.
		for i := range m.Dishes {
			m.Dishes[i].PriceCents = edited
		}
		list[0].Name = "Edited by a caller"
		l.breakRoutes(t, answers503.fault, "menu", restaurantsRoute, menuRoute)
		for round, after := range []string{"the first caller edited the menu it got from the healthy service",
			"the previous caller edited the stale menu the cache served it"} {
			stale, err := l.deps.Menu.Menu(ctx, system.SampleRestaurant)
			if got := priceOf(stale.Dishes, system.SampleDish); got != wantPrice {
				t.Fatalf("step 1: %s (every price set to %d cent); then the menu service answered 503 and the cache "+
					"served the margherita at %d cents (%d dishes, error: %v), where the service had said %d. The cache "+
					"shares its slice with its callers: store a copy (slices.Clone) and serve a copy, so nobody "+
					"changes the cache behind your back.", after, edited, got, len(stale.Dishes), err, wantPrice)
			}
			for i := range stale.Dishes {
				stale.Dishes[i].PriceCents = edited
			}
			served, err := l.deps.Menu.Restaurants(ctx)
			if !slices.Equal(served, wantList) {
				first := "none"
				if len(served) > 0 {
					first = fmt.Sprintf("%q", served[0].Name)
				}
				t.Fatalf("step 1: a caller renamed the first of the %d restaurants it got to %q (round %d); then the "+
					"menu service answered 503 and the cache served %d restaurants, the first named %s (error: %v), "+
					"where the service had said %q. Store a copy of the list (slices.Clone) and serve a copy.",
					len(wantList), "Edited by a caller", round+1, len(served), first, err, wantList[0].Name)
			}
			if len(served) > 0 {
				served[0].Name = "Edited by a caller"
			}
		}
	})
}
