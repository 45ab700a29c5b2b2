package bulkhead_test

import (
	"testing"

	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	bulkhead "github.com/gophereats/resilience/labs/06-bulkhead"
)

func TestStep2BrowsingUnaffectedWhilePaymentHangs(t *testing.T) {
	labtest.Run(t, labtest.Options{Step: 2, Stuck: "checkouts or browses were still waiting in the gateway"}, func(t *testing.T) {
		r := rush(t, 2, bulkhead.Compartments(compartments, 0), true)

		if r.browseOK != r.browses {
			t.Errorf("step 2: while payment hung, %d of %d menu/courier requests failed (mostly: %s). Checkouts waiting on payment held "+
				"the gateway's slots: its order service peaked at %d checkouts in flight.\n"+
				"With a checkout compartment of %d slots, hung checkouts can hold at most %d of the gateway's %d slots and browsing keeps working.",
				r.browses-r.browseOK, r.browses, r.mainFailure(), r.orderPeak, ordersSlots, ordersSlots, gatewayLimit)
		}
		if limit := browseLatency * 12 / 10; r.browseP99 > limit {
			t.Errorf("step 2: while payment hung, the 99th percentile of menu/courier requests was %v; healthy it is %v, and it must stay within %v.",
				r.browseP99, browseLatency, limit)
		}
		if want := r.checkouts - ordersSlots; r.refusedFast < want || r.orderPeak > ordersSlots {
			t.Errorf("step 2: payment hung during %d checkouts; %d were refused at once with %s and the order service peaked at %d checkouts in flight.\n"+
				"Expected: at most %d (the checkout compartment) reach the order service and hang; the other %d are refused at once.",
				r.checkouts, r.refusedFast, gateway.CodeBulkheadFull, r.orderPeak, ordersSlots, want)
		}
	})
}
