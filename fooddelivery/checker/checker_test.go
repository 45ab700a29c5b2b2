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
	"github.com/gophereats/resilience/fooddelivery/order"
	"github.com/gophereats/resilience/fooddelivery/payment"
)

// fakeStore is a ledger and an order store in memory.
type fakeStore struct {
	charges map[string]int
	orders  map[string]string // id -> status
	dropped map[string]bool   // ids the order service dropped to stay within its bound
	full    bool              // the ledger is at its bound
	down    bool
}

func (f fakeStore) ReadLedger(context.Context) (Ledger, error) {
	if f.down {
		return Ledger{}, errors.New("connection refused")
	}
	return Ledger{Charges: f.charges, Full: f.full}, nil
}

func (f fakeStore) ReadOrder(_ context.Context, id string) (string, Presence, error) {
	if s, ok := f.orders[id]; ok {
		return s, Kept, nil
	}
	if f.dropped[id] {
		return "", NoLongerKept, nil
	}
	return "", Missing, nil
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
	r, err := Check(context.Background(), acks, st, Options{})
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
		orders: map[string]string{"o-1": fooddelivery.OrderPlaced}}, Options{})
	require.NoError(t, err)
	assert.True(t, r.OK())
	assert.Equal(t, "checker: 1 checkouts answered placed, 1 orders charged: 0 double charges, 0 lost paid orders, 0 reused ids", r.String())
}

func TestCheckRefusesToJudgeWhatItCannotRead(t *testing.T) {
	_, err := Check(context.Background(), NewAcks(), fakeStore{down: true}, Options{})
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

// What the stores dropped to stay within their bounds is not judged: an
// order the order service no longer keeps is neither lost nor owed a
// refund, and a placed order without a charge in a full ledger may have
// had its charge dropped.
func TestCheckDoesNotJudgeWhatTheStoresDropped(t *testing.T) {
	acks := NewAcks()
	for _, id := range []string{"o-1", "o-2", "o-3"} {
		acks.Placed(id)
	}
	st := fakeStore{
		charges: map[string]int{"o-3": 1, "o-9": 1},
		orders:  map[string]string{"o-2": fooddelivery.OrderPlaced, "o-3": fooddelivery.OrderPlaced},
		dropped: map[string]bool{"o-1": true, "o-9": true},
		full:    true,
	}
	r, err := Check(context.Background(), acks, st, Options{})
	require.NoError(t, err)
	assert.Zero(t, r.LostPaidOrders, "o-1 was dropped by the order service, o-2's charge may be one the full ledger dropped: %v", r.LostIDs)
	assert.Zero(t, r.ChargedNotPlaced, "o-9's order was dropped: no refund can be said to be owed")
	assert.Equal(t, 3, r.Unjudged)
	assert.Equal(t, []string{"o-1", "o-2", "o-9"}, r.UnjudgedIDs)
	assert.True(t, r.OK())
	assert.Contains(t, r.String(), "3 no longer judged")

	st.full = false
	r, err = Check(context.Background(), acks, st, Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"o-2"}, r.LostIDs, "with a ledger that dropped nothing, a placed order without a charge is lost")
}

// The charges of an earlier run on the same data are counted apart and
// not judged: its double charges are not this run's.
func TestCheckLeavesEarlierRunsAlone(t *testing.T) {
	acks := NewAcks()
	acks.Placed("new-1")
	st := fakeStore{charges: map[string]int{"old-1": 2, "old-2": 1, "new-1": 1},
		orders: map[string]string{"new-1": fooddelivery.OrderPlaced, "old-1": fooddelivery.OrderPlaced}}
	r, err := Check(context.Background(), acks, st, Options{ThisRun: func(id string) bool { return strings.HasPrefix(id, "new-") }})
	require.NoError(t, err)
	assert.Zero(t, r.DoubleCharges, "old-1's two charges were an earlier run's")
	assert.Zero(t, r.ChargedNotPlaced, "old-2 was an earlier run's")
	assert.Equal(t, 2, r.EarlierRuns)
	assert.Equal(t, 1, r.Charged)
	assert.Contains(t, r.String(), "2 orders of earlier runs not judged")
}

// HTTPStore reads what ServeStore answers from another process's ledger
// and orders, and says what is wrong with an answer it cannot use.
func TestHTTPStoreReadsServeStore(t *testing.T) {
	l := payment.NewLedger()
	orders := order.NewStore()
	orders.Max = 1
	first := orders.NewID()
	require.NoError(t, orders.Put(fooddelivery.Order{ID: first, Status: fooddelivery.OrderPlaced}))
	second := orders.NewID()
	require.NoError(t, orders.Put(fooddelivery.Order{ID: second, Status: fooddelivery.OrderPlaced}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "127.0.0.1:9", r.Host)
		ServeStore(LocalStore{Ledger: l, Orders: orders}).ServeHTTP(w, r)
	}))
	defer srv.Close()
	st := HTTPStore{Client: srv.Client(), Payment: srv.URL, Order: srv.URL, PaymentHost: "127.0.0.1:9", OrderHost: "127.0.0.1:9"}
	led, err := st.ReadLedger(context.Background())
	require.NoError(t, err)
	assert.Empty(t, led.Charges)
	assert.False(t, led.Full)
	for id, want := range map[string]Presence{second: Kept, first: NoLongerKept, "ord-99": Missing} {
		status, p, err := st.ReadOrder(context.Background(), id)
		require.NoError(t, err)
		assert.Equal(t, want, p, "order %s", id)
		if want == Kept {
			assert.Equal(t, fooddelivery.OrderPlaced, status)
		}
	}
	_, _, err = HTTPStore{Client: srv.Client(), Order: srv.URL + "/x", OrderHost: "127.0.0.1:9"}.ReadOrder(context.Background(), "o-1")
	require.ErrorContains(t, err, "404 Not Found: ")
	_, err = HTTPStore{Client: srv.Client(), Payment: srv.URL, PaymentHost: "127.0.0.1:9"}.ReadLedger(context.Background())
	require.NoError(t, err)
	_, err = st.ReadLedger(context.Background())
	require.NoError(t, err)
	_, err = (LocalStore{}).ReadLedger(context.Background())
	require.ErrorContains(t, err, "not in this process")
}

// lateStore has order o-2 placed from the second lookup on: a checkout
// in flight when the check began.
type lateStore struct {
	fakeStore
	lookups map[string]int
}

func (l lateStore) ReadOrder(ctx context.Context, id string) (string, Presence, error) {
	if l.lookups[id]++; id == "o-2" && l.lookups[id] > 1 {
		return fooddelivery.OrderPlaced, Kept, nil
	}
	return l.fakeStore.ReadOrder(ctx, id)
}

func TestCheckGivesACheckoutInFlightTimeToBePlaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := lateStore{fakeStore{charges: map[string]int{"o-2": 1, "o-3": 1}, orders: map[string]string{"o-3": fooddelivery.OrderPaymentKO}}, map[string]int{}}
		start := time.Now()
		r, err := Check(context.Background(), NewAcks(), st, Options{Settle: 3 * time.Second})
		require.NoError(t, err)
		assert.Equal(t, 3*time.Second, time.Since(start), "one settle between the two looks")
		assert.Equal(t, []string{"o-3"}, r.ChargedNotPlacedIDs, "o-2 was placed by the second look; o-3's charge failed for the order service")
		assert.True(t, r.OK(), "money taken for no order is reported, not a broken promise to a customer")
	})
}

// A finding of more ids than a report lists says how many it left out.
func TestReportSaysHowManyItDidNotList(t *testing.T) {
	acks := NewAcks()
	charges := map[string]int{}
	orders := map[string]string{}
	for i := range 12 {
		id := fmt.Sprintf("o-%02d", i)
		acks.Placed(id)
		charges[id] = 2
		orders[id] = fooddelivery.OrderPlaced
	}
	r, err := Check(context.Background(), acks, fakeStore{charges: charges, orders: orders}, Options{})
	require.NoError(t, err)
	assert.Equal(t, 12, r.DoubleCharges)
	assert.Len(t, r.DoubleChargedIDs, 10)
	assert.Contains(t, r.String(), "o-09 and 2 more; GET /admin/check lists the first 10")
}
