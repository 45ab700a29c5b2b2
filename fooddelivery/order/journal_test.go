package order_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/order"
)

// open opens the journal at path into a new store, as a restart does.
func open(t *testing.T, path string, max int) (*order.Store, *order.Journal) {
	t.Helper()
	j, err := order.OpenJournal(path)
	require.NoError(t, err)
	s := order.NewStore()
	s.Max = max
	require.NoError(t, j.Load(s))
	s.Journal = j
	return s, j
}

// A restart on the same journal finds every order, with its last status,
// within the store's bound, oldest dropped first.
func TestJournalKeepsOrdersAcrossARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "order.db")
	s, j := open(t, path, 3)
	for _, id := range []string{"ord-a-1", "ord-a-2", "ord-a-3", "ord-a-4"} {
		require.NoError(t, s.Put(fooddelivery.Order{ID: id, User: "alice", Status: fooddelivery.OrderPaymentKO}))
	}
	require.NoError(t, s.Put(fooddelivery.Order{ID: "ord-a-2", User: "alice", Status: fooddelivery.OrderPlaced, ChargeID: "ch_9"}))
	j.Close()

	s, j = open(t, path, 3)
	defer j.Close()
	assert.Equal(t, 3, s.Len(), "at most Max orders on disk")
	_, ok := s.Get("ord-a-1")
	assert.False(t, ok, "the oldest order was dropped")
	o, ok := s.Get("ord-a-2")
	require.True(t, ok, "an order placed before the restart is found after it")
	assert.Equal(t, fooddelivery.OrderPlaced, o.Status, "with its last status")
	assert.Equal(t, "ch_9", o.ChargeID)
	var ids []string
	for _, o := range s.Orders() {
		ids = append(ids, o.ID)
	}
	assert.Equal(t, []string{"ord-a-2", "ord-a-3", "ord-a-4"}, ids, "oldest first, by when each was first stored")
}

func TestOrderJournalRefusesFilesItCannotRead(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "order.db")
	require.NoError(t, os.WriteFile(garbage, []byte("not a journal"), 0o600))
	_, err := order.OpenJournal(garbage)
	assert.ErrorContains(t, err, garbage)
	assert.ErrorContains(t, err, "move it away")
	data, _ := os.ReadFile(garbage)
	assert.Equal(t, "not a journal", string(data), "the file is left as it was")
}
