package payment_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/payment"
)

// service starts a payment service on the journal at path, with an
// empty key store (in memory, as after a restart), and returns it with
// its ledger and a function that stops it (as a crash would: the journal
// is closed, nothing else is kept).
func service(t *testing.T, path string) (http.Handler, *payment.Ledger, func()) {
	t.Helper()
	j, err := payment.OpenJournal(path)
	require.NoError(t, err)
	ledger := &payment.Ledger{Journal: j}
	require.NoError(t, j.Load(ledger))
	h := payment.New(payment.Deps{Instance: fooddelivery.NewInstance("payment", 0, nil), Ledger: ledger, Keys: &memoStore{}})
	return h, ledger, func() { j.Close() }
}

// A restart on the same journal keeps every charge, continues their ids,
// and replays a key's charge although the key store starts empty: a
// retry after the crash charges nothing twice.
func TestJournalKeepsChargesAndKeysAcrossARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "payment.db")
	h, ledger, stop := service(t, path)
	req := fooddelivery.ChargeRequest{OrderID: "ord-1", AmountCents: 2300, Card: "tok_visa"}
	require.Equal(t, http.StatusCreated, post(h, "key-1", req).Code)
	require.Equal(t, http.StatusCreated, post(h, "key-2", fooddelivery.ChargeRequest{OrderID: "ord-2", AmountCents: 900, Card: "tok_visa"}).Code)
	require.Equal(t, 2, ledger.Total())
	stop()

	h, ledger, stop = service(t, path)
	defer stop()
	assert.Equal(t, 2, ledger.Total(), "the restart read both charges back")
	assert.Equal(t, 3200, ledger.TotalCents())
	assert.Equal(t, 1, ledger.ChargesFor("ord-1"))

	w := post(h, "key-1", req)
	assert.Equal(t, http.StatusCreated, w.Code)
	assert.Equal(t, "true", w.Header().Get(payment.HeaderReplayed), "the retry after the restart is a replay")
	assert.JSONEq(t, `{"id":"ch_1","orderId":"ord-1","amountCents":2300,"status":"succeeded"}`, w.Body.String(), "of the charge made before it")
	assert.Equal(t, 1, ledger.ChargesFor("ord-1"), "one charge for the order, not two")
	assert.Equal(t, 0, ledger.OrdersChargedMoreThanOnce())

	w = post(h, "key-1", fooddelivery.ChargeRequest{OrderID: "ord-1", AmountCents: 9999, Card: "tok_visa"})
	assert.Equal(t, http.StatusUnprocessableEntity, w.Code, "the key with another amount is a reused key, after the restart too")

	w = post(h, "key-3", fooddelivery.ChargeRequest{OrderID: "ord-3", AmountCents: 100, Card: "tok_visa"})
	require.Equal(t, http.StatusCreated, w.Code)
	assert.Contains(t, w.Body.String(), `"id":"ch_3"`, "charge ids continue after the restart: none is given twice")
}

// Without idempotency keys a retry after the restart is a second charge,
// and the ledger read back from the journal sees it.
func TestJournalShowsADoubleChargeWithoutKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "payment.db")
	j, err := payment.OpenJournal(path)
	require.NoError(t, err)
	ledger := &payment.Ledger{Journal: j}
	h := payment.New(payment.Deps{Instance: fooddelivery.NewInstance("payment", 0, nil), Ledger: ledger})
	req := fooddelivery.ChargeRequest{OrderID: "ord-1", AmountCents: 2300, Card: "tok_visa"}
	require.Equal(t, http.StatusCreated, post(h, "key-1", req).Code)
	j.Close()

	j, err = payment.OpenJournal(path)
	require.NoError(t, err)
	defer j.Close()
	ledger = &payment.Ledger{Journal: j}
	require.NoError(t, j.Load(ledger))
	h = payment.New(payment.Deps{Instance: fooddelivery.NewInstance("payment", 0, nil), Ledger: ledger})
	require.Equal(t, http.StatusCreated, post(h, "key-1", req).Code)
	assert.Equal(t, 2, ledger.ChargesFor("ord-1"))
	assert.Equal(t, 1, ledger.OrdersChargedMoreThanOnce(), "the order charged before and after the restart is charged twice")
}

// The journal keeps the most recent charges and keys within its bounds,
// and a key older than its lifetime charges again, as the IETF draft
// allows for an expired key.
func TestJournalBoundsChargesAndKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "payment.db")
	j, err := payment.OpenJournal(path)
	require.NoError(t, err)
	j.MaxCharges, j.MaxKeys = 5, 3
	ledger := &payment.Ledger{Journal: j}
	h := payment.New(payment.Deps{Instance: fooddelivery.NewInstance("payment", 0, nil), Ledger: ledger, Keys: &memoStore{}})
	for i := range 8 {
		id := string(rune('a' + i))
		require.Equal(t, http.StatusCreated, post(h, "key-"+id, fooddelivery.ChargeRequest{OrderID: "ord-" + id, AmountCents: 100, Card: "tok_visa"}).Code)
	}
	n, err := j.Keys()
	require.NoError(t, err)
	assert.Equal(t, 3, n, "at most MaxKeys keys on disk")
	j.Close()

	j, err = payment.OpenJournal(path)
	require.NoError(t, err)
	defer j.Close()
	restored := &payment.Ledger{Journal: j}
	require.NoError(t, j.Load(restored))
	assert.Len(t, restored.Charges(), 5, "at most MaxCharges charges on disk, the newest")
	assert.Equal(t, "ord-d", restored.Charges()[0].OrderID)
	_, ok, err := j.Replay("key-a", fooddelivery.ChargeRequest{OrderID: "ord-a", AmountCents: 100, Card: "tok_visa"})
	require.NoError(t, err)
	assert.False(t, ok, "the oldest key was evicted")
	_, ok, _ = j.Replay("key-h", fooddelivery.ChargeRequest{OrderID: "ord-h", AmountCents: 100, Card: "tok_visa"})
	assert.True(t, ok, "the newest key is kept")
	j.KeyTTL = time.Nanosecond
	_, ok, _ = j.Replay("key-h", fooddelivery.ChargeRequest{OrderID: "ord-h", AmountCents: 100, Card: "tok_visa"})
	assert.False(t, ok, "a key older than KeyTTL is not replayed")
}

// A file the journal cannot read fails the start with its path and what
// to do; it is never overwritten with an empty journal.
func TestJournalRefusesFilesItCannotRead(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	require.NoError(t, os.WriteFile(garbage, []byte("this is not a bbolt file, but it is somebody's data"), 0o600))
	_, err := payment.OpenJournal(garbage)
	require.Error(t, err)
	assert.ErrorContains(t, err, garbage)
	assert.ErrorContains(t, err, "move it away")
	data, _ := os.ReadFile(garbage)
	assert.Equal(t, "this is not a bbolt file, but it is somebody's data", string(data), "the file is left as it was")

	other := filepath.Join(dir, "other.db")
	db, err := bolt.Open(other, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("meta"))
		if err != nil {
			return err
		}
		return b.Put([]byte("layout"), []byte("fooddelivery-order-1"))
	}))
	db.Close()
	_, err = payment.OpenJournal(other)
	assert.ErrorContains(t, err, `its layout is "fooddelivery-order-1"`)

	path := filepath.Join(dir, "payment.db")
	j, err := payment.OpenJournal(path)
	require.NoError(t, err)
	defer j.Close()
	_, err = payment.OpenJournal(path)
	assert.ErrorContains(t, err, "is locked by another process", "a second payment service on the same file")
}
