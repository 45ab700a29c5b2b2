package breaker_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/system"
	breaker "github.com/gophereats/resilience/labs/05-breaker"
)

func TestStep5BrokenReportingLeavesOrderingAlone(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
		sys := labtest.StartSystem(t, system.Config{})
		orders := breaker.NewOrderClient(sys.Orders(), breaker.Settings{Name: "order", Logger: quiet})
		require.NoError(t, sys.Faults.Set("order", "GET /reports/daily", faults.Fault{Status: http.StatusInternalServerError}),
			"setting up the fault")

		for range 10 {
			_, err := orders.DailyReport(context.Background(), time.Time{})
			require.Error(t, err, "step 5: the reporting endpoint answers 500, yet a report arrived")
		}
		reports := sys.Metrics.Route("order", "GET /reports/daily").Received.Load()
		if reports != 5 {
			t.Fatalf("step 5: the daily-report endpoint answered 500; %d of 10 report requests reached it. Its breaker "+
				"must open after 5 failures in a row and spare the failing endpoint the other 5.", reports)
		}

		var failed []error
		var placed fooddelivery.Order
		for range 3 {
			o, err := orders.PlaceOrder(context.Background(), "alice", pizza)
			if err != nil {
				failed = append(failed, err)
			} else {
				placed = o
			}
		}
		if len(failed) > 0 {
			t.Fatalf("step 5: only the reporting endpoint was broken, yet %d of 3 orders failed (first error: %v). "+
				"One breaker shared by every endpoint lets a broken report cut off ordering: give each endpoint its own.",
				len(failed), failed[0])
		}
		_, err := orders.Order(context.Background(), placed.ID)
		require.NoError(t, err, "step 5: only reporting was broken, yet looking up an order failed")

		// Now looking orders up breaks; placing them must go on.
		require.NoError(t, sys.Faults.Set("order", "GET /orders/{id}", faults.Fault{Status: http.StatusInternalServerError}),
			"setting up the fault")
		lookups := sys.Metrics.Route("order", "GET /orders/{id}").Received.Load()
		for range 5 {
			orders.Order(context.Background(), placed.ID)
		}
		lookups = sys.Metrics.Route("order", "GET /orders/{id}").Received.Load() - lookups
		if _, err := orders.PlaceOrder(context.Background(), "alice", pizza); err != nil {
			t.Fatalf("step 5: GET /orders/{id} answered 500; 5 lookups were made and %d of them reached it. Then placing an "+
				"order (POST /orders) failed: %v. Placing and looking up are two endpoints: each needs its own breaker.", lookups, err)
		}
	})
}
