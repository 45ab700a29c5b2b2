package fallback_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	fallback "github.com/gophereats/resilience/labs/07-fallback"
)

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

// TestStep2DefaultETANamesItsRestaurant calls the ETA wrapper directly:
// the default estimate is the restaurant's, and says so.
func TestStep2DefaultETANamesItsRestaurant(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2}, func(t *testing.T) {
		l := start(t)
		v := l.warm(t, 2)
		l.breakRoutes(t, answers503.fault, "courier", etaRoute)
		for _, r := range v.Home.Restaurants {
			eta, err := l.deps.ETA.ETA(context.Background(), r.ID)
			want := fallback.DefaultETA
			want.RestaurantID = r.ID
			if eta != want {
				t.Fatalf("step 2: the courier service answered 503; the ETA of restaurant %q came back with RestaurantID %q, "+
					"%v to %v, estimated=%v (error: %v). Want fallback.DefaultETA (%v to %v, estimated) with "+
					"RestaurantID %q: an estimate must say which restaurant it is for.", r.ID, eta.RestaurantID,
					eta.Min, eta.Max, eta.Estimated, err, want.Min, want.Max, r.ID)
			}
		}
	})
}
