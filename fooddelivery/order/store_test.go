package order_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/menu"
	"github.com/gophereats/resilience/fooddelivery/order"
	"github.com/gophereats/resilience/fooddelivery/payment"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

// A store keeps its Max most recent orders; GET /orders/{id} of an older
// one says it is no longer kept, and of an id never issued, that there is
// no such order. Memory stays bounded however many orders are placed.
func TestStoreKeepsTheMostRecentOrders(t *testing.T) {
	s := order.NewStore()
	s.Prefix = "ord-run1-"
	s.Max = 3
	var ids []string
	for i := range 5 {
		id := s.NewID()
		ids = append(ids, id)
		s.Put(fooddelivery.Order{ID: id, User: "alice", TotalCents: 100 * (i + 1)})
	}
	assert.Equal(t, 3, s.Len(), "5 orders placed, 3 kept")
	var kept []string
	for _, o := range s.Orders() {
		kept = append(kept, o.ID)
	}
	assert.Equal(t, ids[2:], kept, "the 3 most recent, oldest first")

	h := order.New(order.Deps{Instance: fooddelivery.NewInstance("order", 10, metrics.NewMetrics()), Store: s,
		Menu: menu.NewClient(http.DefaultClient, "http://menu.invalid"), Payment: payment.NewClient(http.DefaultClient, "http://payment.invalid")})
	get := func(id string) (int, fooddelivery.ErrorBody) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/orders/"+id, nil))
		var body fooddelivery.ErrorBody
		if w.Code != http.StatusOK {
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), "an error body: %s", w.Body)
		}
		return w.Code, body
	}
	status, body := get(ids[0])
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, order.CodeOrderExpired, body.Code, "the oldest order was dropped")
	assert.Contains(t, body.Message, "keeps its 3 most recent orders")
	status, _ = get(ids[4])
	assert.Equal(t, http.StatusOK, status, "the newest is kept")
	for _, id := range []string{"ord-run1-99", "ord-run0-1", "nope"} {
		status, body = get(id)
		assert.Equal(t, http.StatusNotFound, status, id)
		assert.Equal(t, "order_not_found", body.Code, "%s was never an order of this store", id)
	}
	s.Put(fooddelivery.Order{ID: ids[4], User: "alice", Status: fooddelivery.OrderPlaced})
	assert.Equal(t, 3, s.Len(), "putting a kept order again drops nothing")
}

// 100,000 orders into a store of the default size: it keeps
// DefaultMaxOrders of them.
func TestStoreIsBoundedByDefault(t *testing.T) {
	s := order.NewStore()
	for range 100_000 {
		s.Put(fooddelivery.Order{ID: s.NewID()})
	}
	assert.Equal(t, order.DefaultMaxOrders, s.Len())
	assert.Equal(t, order.DefaultMaxOrders, s.Limit())
	_, ok := s.Get("ord-" + strconv.Itoa(100_000))
	assert.True(t, ok, "the last order is kept")
}
