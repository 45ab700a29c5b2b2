package idempotency_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/courier"
	"github.com/gophereats/resilience/fooddelivery/dispatch"
	"github.com/gophereats/resilience/fooddelivery/labtest"
)

func TestStep5RedeliveredMessageAssignsOneCourier(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
		const orders = 10
		fleet := dispatch.NewFleet(courier.NewBoard())
		crashed := 0
		crashes := map[string]bool{"ord-1": true, "ord-4": true, "ord-7": true, "ord-10": true}
		q := &dispatch.Queue{CrashAfterHandling: func(m dispatch.Message) bool {
			crash := crashes[m.OrderID] && m.Receives == 1 // after the first delivery only
			if crash {
				crashed++
			}
			return crash
		}}
		publish(q, orders)
		consume(t, q, 1, fleet)

		if n, example := doubleDispatched(fleet, orders); n > 0 {
			t.Fatalf("step 5: the consumer crashed %s after sending a courier and before deleting the message; "+
				"the queue delivered those messages again (%d deliveries for %d orders) and %s two couriers (%s). "+
				"A redelivered order must get the courier it already has.", count(crashed, "time", "times"), q.Received(), orders,
				count(n, "order got", "orders got"), example)
		}
		require.Zero(t, unserved(fleet, orders), "step 5: every order must get a courier")
		for i := range orders {
			id := fmt.Sprint("ord-", i+1)
			sent := fleet.Couriers(id)[0]
			if a, ok := fleet.Board.Assignment(id); !ok || a.CourierID != sent {
				recorded := "has no assignment for it"
				if ok {
					recorded = "names " + a.CourierID
				}
				t.Fatalf("step 5: %s was sent courier %s, but the courier board %s. The memory of which courier an order has "+
					"lives only in this process: a real crash restarts it empty, and the consumer on another machine never sees it, "+
					"so the redelivery sends a second courier. Record the order's courier on the board every worker shares "+
					"(fleet.Board.Assign), then send that courier.", id, sent, recorded)
			}
		}
	})
}

func TestStep5DeadLetterReplayAssignsOneCourier(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
		fleet := dispatch.NewFleet(courier.NewBoard())
		crashLoop := true // the consumer crashes after every delivery of ord-1
		q := &dispatch.Queue{CrashAfterHandling: func(m dispatch.Message) bool { return crashLoop && m.OrderID == "ord-1" }}
		publish(q, 3)
		consume(t, q, 1, fleet)
		dead := q.DeadLetters()
		require.Len(t, dead, 1, "step 5: ord-1's message must end in the dead-letter queue after %d receives", dispatch.DefaultMaxReceives)

		crashLoop = false // the bug is fixed; an operator redrives the dead letters
		q.Redrive()
		consume(t, q, 1, fleet)
		cs := fleet.Couriers("ord-1")
		if len(cs) == 0 {
			t.Fatalf("step 5: ord-1's message (%s) was received %d times and dead-lettered, then redriven as a new message; "+
				"no courier was ever sent to %s for it: AssignCourier returned nil without sending, so the queue deleted it.",
				dead[0].ID, dead[0].Receives, dead[0].RestaurantID)
		}
		if len(cs) != 1 {
			t.Fatalf("step 5: ord-1's message (%s) was received %d times and dead-lettered, then redriven as a new message; "+
				"%s sent to %s (%s). A replay from the dead-letter queue carries a new message id: "+
				"deduplicate on the order, not on the message.", dead[0].ID, dead[0].Receives, count(len(cs), "courier was", "couriers were"), dead[0].RestaurantID, strings.Join(cs, ", "))
		}
	})
}

func TestStep5SlowHandlerRedeliveredAssignsOneCourier(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
		const orders = 3
		fleet := dispatch.NewFleet(courier.NewBoard())
		fleet.SendLatency = 45 * time.Second // longer than the visibility timeout
		q := &dispatch.Queue{VisibilityTimeout: 30 * time.Second}
		publish(q, orders)
		consume(t, q, 2, fleet)

		if n, example := doubleDispatched(fleet, orders); n > 0 {
			t.Fatalf("step 5: pushing a job to a courier's phone took %v, longer than the queue's %v visibility timeout, "+
				"so a second worker received each message while the first was still sending (%d deliveries for %d orders); "+
				"%s two couriers (%s). Checking \"already sent?\" before a slow send is check-then-act: "+
				"record the order's courier atomically first (the courier board's Assign), then send.",
				fleet.SendLatency, q.VisibilityTimeout, q.Received(), orders, count(n, "order got", "orders got"), example)
		}
		if n := unserved(fleet, orders); n > 0 {
			t.Fatalf("step 5: with sends taking %v, %d of %d orders never got a courier, after %d deliveries and %d "+
				"dead letters: the queue deleted their messages without a courier sent. AssignCourier may return nil "+
				"only once the order's courier was sent.",
				fleet.SendLatency, n, orders, q.Received(), len(q.DeadLetters()))
		}
	})
}

func TestStep5FailedSendIsRetried(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 5}, func(t *testing.T) {
		const orders = 4
		fleet := dispatch.NewFleet(courier.NewBoard())
		fleet.FailNext(2) // the phones of the first two orders' couriers are unreachable once
		q := &dispatch.Queue{}
		publish(q, orders)
		consume(t, q, 1, fleet)

		if n := unserved(fleet, orders); n > 2 {
			t.Fatalf("step 5: two pushes to couriers' phones failed, yet %d of %d orders never got a courier (%d deliveries): "+
				"more than the failed pushes, so AssignCourier returned nil for messages it sent no courier for at all.",
				n, orders, q.Received())
		} else if n > 0 {
			t.Fatalf("step 5: two pushes to couriers' phones failed; %d of %d orders never got a courier (%d deliveries). "+
				"AssignCourier must return the error, so the message stays in the queue and is delivered again.",
				n, orders, q.Received())
		}
		if n, example := doubleDispatched(fleet, orders); n > 0 {
			t.Fatalf("step 5: after failed pushes were retried, %s two couriers (%s)", count(n, "order got", "orders got"), example)
		}
	})
}
