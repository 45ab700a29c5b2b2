package payment

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gophereats/resilience/fooddelivery"
)

// A ledger keeps its Max most recent charges and counts them all: the
// totals and the orders charged twice are right however many charges have
// left it, and memory stays bounded.
func TestLedgerKeepsTheMostRecentChargesAndCountsThemAll(t *testing.T) {
	l := &Ledger{Max: 3}
	for _, order := range []string{"ord-1", "ord-1", "ord-2", "ord-3", "ord-4", "ord-4"} {
		l.record(fooddelivery.ChargeRequest{OrderID: order, AmountCents: 100}, "")
	}
	assert.Equal(t, 6, l.Total(), "every charge counts")
	assert.Equal(t, 600, l.TotalCents())
	assert.Equal(t, 2, l.OrdersChargedMoreThanOnce(), "ord-1 and ord-4, though ord-1's charges have left the ledger")
	var ids []string
	for _, c := range l.Charges() {
		ids = append(ids, c.ID)
	}
	assert.Equal(t, []string{"ch_4", "ch_5", "ch_6"}, ids, "the 3 most recent, oldest first")
	assert.Equal(t, 0, l.ChargesFor("ord-1"), "ord-1's charges are no longer kept")
	assert.Equal(t, 2, l.ChargesFor("ord-4"))
	assert.Len(t, l.perOrder, 2, "the per-order counts of dropped charges go too")

	d := NewLedger()
	for range 3 * DefaultMaxCharges {
		d.record(fooddelivery.ChargeRequest{OrderID: "ord-x", AmountCents: 1}, "")
	}
	assert.Len(t, d.Charges(), DefaultMaxCharges, "a default ledger keeps DefaultMaxCharges")
}
