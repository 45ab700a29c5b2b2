package checker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
)

// fakeStore is a ledger and an order store in memory.
type fakeStore struct {
	charges map[string]int
	orders  map[string]string // id -> status
	down    bool
}

func (f fakeStore) Charges(context.Context) (map[string]int, error) {
	if f.down {
		return nil, errors.New("connection refused")
	}
	return f.charges, nil
}

func (f fakeStore) OrderStatus(_ context.Context, id string) (string, bool, error) {
	s, ok := f.orders[id]
	return s, ok, nil
}

func TestCheckFindsEachBrokenPromise(t *testing.T) {
	acks := NewAcks()
	for _, id := range []string{"o-1", "o-2", "o-3", "o-4", "o-5", "o-5"} {
		acks.Placed(id)
	}
	st := fakeStore{
		// o-2 charged twice; o-3 placed but never charged; o-6 charged for
		// an order whose charge failed as far as the order service knows.
		charges: map[string]int{"o-1": 1, "o-2": 2, "o-4": 1, "o-5": 1, "o-6": 1},
		// o-4 is gone (a restart lost it)
		orders: map[string]string{"o-1": fooddelivery.OrderPlaced, "o-2": fooddelivery.OrderPlaced, "o-3": fooddelivery.OrderPlaced,
			"o-5": fooddelivery.OrderPlaced, "o-6": fooddelivery.OrderPaymentKO},
	}
	r, err := Check(context.Background(), acks, st, 0)
	require.NoError(t, err)
	assert.Equal(t, 5, r.Placed, "o-5 acknowledged twice counts once")
	assert.Equal(t, 5, r.Charged)
	assert.Equal(t, 1, r.DoubleCharges)
	assert.Equal(t, []string{"o-2"}, r.DoubleChargedIDs)
	assert.Equal(t, 2, r.LostPaidOrders)
	assert.Equal(t, []string{"o-3", "o-4"}, r.LostIDs, "unpaid o-3 and vanished o-4")
	assert.Equal(t, 1, r.ReusedIDs)
	assert.Equal(t, []string{"o-5"}, r.ReusedIDList)
	assert.Equal(t, 1, r.ChargedNotPlaced)
	assert.Equal(t, []string{"o-6"}, r.ChargedNotPlacedIDs)
	assert.False(t, r.OK())
	s := r.String()
	for _, want := range []string{"5 checkouts answered placed", "1 double charges", "2 lost paid orders", "1 reused ids",
		"1 charged but not placed", "DOUBLE CHARGES (o-2)", "idempotency key", "LOST (o-3, o-4)", "REUSED (o-5)"} {
		assert.Contains(t, s, want)
	}
}

func TestCheckPassesAKeptPromiseAndSaysSo(t *testing.T) {
	acks := NewAcks()
	acks.Placed("o-1")
	acks.Placed("")
	r, err := Check(context.Background(), acks, fakeStore{charges: map[string]int{"o-1": 1},
		orders: map[string]string{"o-1": fooddelivery.OrderPlaced}}, 0)
	require.NoError(t, err)
	assert.True(t, r.OK())
	assert.Equal(t, "checker: 1 checkouts answered placed, 1 orders charged: 0 double charges, 0 lost paid orders, 0 reused ids", r.String())
}

func TestCheckRefusesToJudgeWhatItCannotRead(t *testing.T) {
	_, err := Check(context.Background(), NewAcks(), fakeStore{down: true}, 0)
	require.ErrorContains(t, err, "payment's ledger: connection refused")
}

func TestAcksKeepTheMostRecent(t *testing.T) {
	acks := NewAcks()
	for i := range MaxAcks + 5 {
		acks.Placed(fmt.Sprintf("o-%d", i))
	}
	ids, reused, n := acks.snapshot()
	assert.Len(t, ids, MaxAcks)
	assert.Equal(t, "o-5", ids[0], "the five oldest are dropped")
	assert.Empty(t, reused)
	assert.Zero(t, n)
	assert.Len(t, acks.count, MaxAcks, "counts of dropped ids go too")
}

func TestHTTPStoreReadsTheServicesRoutes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "127.0.0.1:9", r.Host)
		switch {
		case r.URL.Path == "/charges":
			fooddelivery.WriteJSON(w, http.StatusOK, []fooddelivery.Charge{{OrderID: "o-1"}, {OrderID: "o-1"}, {OrderID: "o-2"}})
		case r.URL.Path == "/orders/o-1":
			fooddelivery.WriteJSON(w, http.StatusOK, fooddelivery.Order{ID: "o-1", Status: fooddelivery.OrderPlaced})
		case strings.HasPrefix(r.URL.Path, "/orders/"):
			fooddelivery.WriteError(w, http.StatusNotFound, "order_not_found", "no order")
		default:
			fooddelivery.WriteError(w, http.StatusServiceUnavailable, "down", "restarting")
		}
	}))
	defer srv.Close()
	st := HTTPStore{Client: srv.Client(), Payment: srv.URL, Order: srv.URL, Host: "127.0.0.1:9"}
	per, err := st.Charges(context.Background())
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"o-1": 2, "o-2": 1}, per)
	status, found, err := st.OrderStatus(context.Background(), "o-1")
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, fooddelivery.OrderPlaced, status)
	_, found, err = st.OrderStatus(context.Background(), "o-9")
	require.NoError(t, err)
	assert.False(t, found)
	_, _, err = HTTPStore{Client: srv.Client(), Order: srv.URL + "/x", Host: "127.0.0.1:9"}.OrderStatus(context.Background(), "o-1")
	require.ErrorContains(t, err, "503 Service Unavailable: ")
}

// lateStore has order o-2 placed from the second lookup on: a checkout
// in flight when the check began.
type lateStore struct {
	fakeStore
	lookups map[string]int
}

func (l lateStore) OrderStatus(ctx context.Context, id string) (string, bool, error) {
	if l.lookups[id]++; id == "o-2" && l.lookups[id] > 1 {
		return fooddelivery.OrderPlaced, true, nil
	}
	return l.fakeStore.OrderStatus(ctx, id)
}

func TestCheckGivesACheckoutInFlightTimeToBePlaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := lateStore{fakeStore{charges: map[string]int{"o-2": 1, "o-3": 1}, orders: map[string]string{"o-3": fooddelivery.OrderPaymentKO}}, map[string]int{}}
		start := time.Now()
		r, err := Check(context.Background(), NewAcks(), st, 3*time.Second)
		require.NoError(t, err)
		assert.Equal(t, 3*time.Second, time.Since(start), "one settle between the two looks")
		assert.Equal(t, []string{"o-3"}, r.ChargedNotPlacedIDs, "o-2 was placed by the second look; o-3's charge failed for the order service")
		assert.True(t, r.OK(), "money taken for no order is reported, not a broken promise to a customer")
	})
}
