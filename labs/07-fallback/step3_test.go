package fallback_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
)

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

// TestStep3PopularCacheIsNotTheCallersSlice edits the popular dishes the
// wrapper returned, the way a caller may, and checks that the kept list,
// served by Popular and by the Recommendations fallback, still says what
// the menu service said.
func TestStep3PopularCacheIsNotTheCallersSlice(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 3}, func(t *testing.T) {
		const edited = 1 // cents: the price a careless caller writes into its copy
		l := start(t)
		ctx := context.Background()
		list, err := l.deps.Recs.Popular(ctx)
		require.NoError(t, err, "step 3: with the menu service healthy, Popular must succeed")
		require.NotEmpty(t, list, "step 3: the healthy menu service lists popular dishes")
		want := slices.Clone(list)
		for i := range list {
			list[i].PriceCents = edited
		}
		l.breakRoutes(t, answers503.fault, "menu", popularRoute, recsRoute)
		after := "the first caller edited the popular list it got from the healthy service"
		for _, m := range []struct {
			name string
			call func() ([]fooddelivery.Dish, error)
		}{
			{"Popular", func() ([]fooddelivery.Dish, error) { return l.deps.Recs.Popular(ctx) }},
			{"Recommendations", func() ([]fooddelivery.Dish, error) { return l.deps.Recs.Recommendations(ctx, "alice") }},
			{"Popular", func() ([]fooddelivery.Dish, error) { return l.deps.Recs.Popular(ctx) }},
		} {
			served, err := m.call()
			if !slices.Equal(served, want) {
				got := 0
				if len(served) > 0 {
					got = served[0].PriceCents
				}
				t.Fatalf("step 3: %s (every price set to %d cent); then the menu service answered 503 and %s served "+
					"%d dishes, the first at %d cents (error: %v), where the service had listed %d, the first at %d cents. "+
					"The kept popular list shares its slice with its callers: keep a copy (slices.Clone) and serve a copy.",
					after, edited, m.name, len(served), got, firstWords(fmt.Sprint(err), 80), len(want), want[0].PriceCents)
			}
			for i := range served {
				served[i].PriceCents = edited
			}
			after = "the previous caller edited the list " + m.name + " served it from the cache"
		}
	})
}
