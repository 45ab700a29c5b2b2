package payment_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
)

// An order counts once however many extra charges it has; orders charged
// once do not count.
func TestOrdersChargedMoreThanOnceCountsOrdersNotCharges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, 0, nil)
		assert.Zero(t, h.ledger.OrdersChargedMoreThanOnce(), "an empty ledger")

		charge := func(order string) {
			t.Helper()
			_, err := h.client.Charge(t.Context(), fooddelivery.ChargeRequest{OrderID: order, AmountCents: 100, Card: "tok_visa"})
			require.NoError(t, err, "charging %s", order)
		}
		charge("ord-1")
		charge("ord-2")
		assert.Zero(t, h.ledger.OrdersChargedMoreThanOnce(), "two orders charged once each")

		charge("ord-1")
		assert.Equal(t, 1, h.ledger.OrdersChargedMoreThanOnce(), "ord-1 charged twice")
		charge("ord-1")
		assert.Equal(t, 1, h.ledger.OrdersChargedMoreThanOnce(), "a third charge of ord-1 does not count again")
		charge("ord-2")
		assert.Equal(t, 2, h.ledger.OrdersChargedMoreThanOnce(), "ord-1 and ord-2")

		_, err := h.client.Charge(t.Context(), fooddelivery.ChargeRequest{OrderID: "ord-3", AmountCents: 100, Card: "tok_declined"})
		require.Error(t, err)
		_, err = h.client.Charge(t.Context(), fooddelivery.ChargeRequest{OrderID: "ord-3", AmountCents: 100, Card: "tok_declined"})
		require.Error(t, err)
		assert.Equal(t, 2, h.ledger.OrdersChargedMoreThanOnce(), "declined attempts charge nothing")
		assert.Equal(t, 5, h.ledger.Total(), "charges executed in all")
	})
}
