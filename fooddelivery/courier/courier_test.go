package courier_test

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/courier"
	"github.com/gophereats/resilience/fooddelivery/internal/servetest"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

type harness struct {
	metrics *metrics.Metrics
	board   *courier.Board
	client  *courier.Client
}

func start(t *testing.T, board *courier.Board) *harness {
	t.Helper()
	h := &harness{metrics: metrics.NewMetrics(), board: board}
	_, hc := servetest.Serve(t, "courier", courier.New(courier.Deps{Instance: fooddelivery.NewInstance("courier", 10, h.metrics), Board: board}))
	h.client = courier.NewClient(hc, memnet.ServiceURL("courier"))
	return h
}

func TestETAIsAFixedWindowPerRestaurant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, courier.NewBoard())

		for _, id := range []string{"luigis", "sakura", "taco-loco", "burger-barn"} {
			eta, err := h.client.ETA(t.Context(), id)
			require.NoError(t, err, "ETA for %s", id)
			again, err := h.client.ETA(t.Context(), id)
			require.NoError(t, err, "ETA for %s again", id)
			assert.Equal(t, eta, again, "the estimate for %s is the same on every call", id)
			assert.Equal(t, id, eta.RestaurantID, "ETA's restaurant")
			assert.GreaterOrEqual(t, eta.Min, 20*time.Minute, "earliest delivery for %s", id)
			assert.LessOrEqual(t, eta.Max, 40*time.Minute, "latest delivery for %s", id)
			assert.Less(t, eta.Min, eta.Max, "the window for %s is not empty", id)
			assert.False(t, eta.Estimated, "a live estimate is not a default")
		}
	})
}

func TestAssignIsIdempotentPerOrderAndSpreadsLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, courier.NewBoard("ann", "ben"))

		a1, err := h.client.Assign(t.Context(), "ord-1", "luigis")
		require.NoError(t, err, "assigning ord-1")
		again, err := h.client.Assign(t.Context(), "ord-1", "luigis")
		require.NoError(t, err, "assigning ord-1 again (a redelivered message)")
		a2, err := h.client.Assign(t.Context(), "ord-2", "sakura")
		require.NoError(t, err, "assigning ord-2")

		assert.Equal(t, a1, again, "the same order keeps its courier")
		assert.Equal(t, "ann", a1.CourierID, "the first order goes to the first free courier")
		assert.Equal(t, "ben", a2.CourierID, "the second order goes to the courier with fewer orders")
		assert.Len(t, h.board.Assignments(), 2, "two orders, two assignments: the repeat created none")
		assert.Equal(t, int64(3), h.metrics.Route("courier", "POST /assignments").Received.Load(), "assignment requests received")

		_, err = h.client.Assign(t.Context(), "", "luigis")
		assert.ErrorIs(t, err, fooddelivery.ErrRejected, "an assignment without an order id is rejected")
	})
}

func TestBoardWritesUseOptimisticConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, courier.NewBoard())

		row, err := h.client.Row(t.Context(), "dinner-rush")
		require.NoError(t, err, "reading a fresh row")
		assert.Equal(t, courier.Row{Row: "dinner-rush"}, row, "a row never written has version 0 and no value")

		won, err := h.client.PutRow(t.Context(), "dinner-rush", 0, "app-1")
		require.NoError(t, err, "the first write at version 0 wins")
		assert.Equal(t, int64(1), won.Version, "version after one write")

		_, err = h.client.PutRow(t.Context(), "dinner-rush", 0, "app-2")
		require.ErrorIs(t, err, fooddelivery.ErrRejected, "a write with a stale version is rejected")
		assert.True(t, courier.IsVersionConflict(err), "the rejection is a version conflict: %v", err)
		assert.Equal(t, "app-1", h.board.Row("dinner-rush").Value, "the losing write changed nothing")
	})
}

func TestConcurrentClaimsAllLandWhenWritersReReadOnConflict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, courier.NewBoard())
		const writers = 5

		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				for {
					row, err := h.client.Row(t.Context(), "r")
					if !assert.NoError(t, err, "writer %d reading", i) {
						return
					}
					_, err = h.client.PutRow(t.Context(), "r", row.Version, "claimed")
					if err == nil {
						return
					}
					if !assert.True(t, courier.IsVersionConflict(err), "writer %d: only conflicts are expected, got %v", i, err) {
						return
					}
				}
			})
		}
		wg.Wait()

		assert.Equal(t, int64(writers), h.board.Row("r").Version, "each of the %d writers landed exactly one write", writers)
		assert.Equal(t, int64(writers), h.board.Writes(), "writes accepted by the board")
	})
}

func TestVersionConflictEchoesTheRowNameTruncated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, courier.NewBoard())
		row := strings.Repeat("r", 50_000)
		_, err := h.client.PutRow(t.Context(), row, 0, "app-1")
		require.NoError(t, err, "the first write wins")

		_, err = h.client.PutRow(t.Context(), row, 0, "app-2")

		require.True(t, courier.IsVersionConflict(err), "a stale write conflicts: %.300v", err)
		var ce *fooddelivery.CallError
		require.True(t, errors.As(err, &ce))
		assert.Contains(t, ce.Message, "(50000 bytes)", "the message says how long the row name was")
		assert.Less(t, len(ce.Message), 200, "the row name comes back truncated: %s", ce.Message)
	})
}

// The board holds at most MaxRows rows of at most MaxRowValueBytes each:
// a client cannot fill the service's memory by writing rows.
func TestBoardRowsAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, courier.NewBoard())
		_, err := h.client.PutRow(t.Context(), "big", 0, strings.Repeat("v", courier.MaxRowValueBytes+1))
		var ce *fooddelivery.CallError
		require.True(t, errors.As(err, &ce), "a value one byte too long is refused: %v", err)
		assert.Equal(t, "value_too_large", ce.Code)
		for i := range courier.MaxRows {
			_, err := h.client.PutRow(t.Context(), "row-"+strconv.Itoa(i), 0, "x")
			require.NoError(t, err, "row %d of %d", i+1, courier.MaxRows)
		}
		_, err = h.client.PutRow(t.Context(), "one-more", 0, "x")
		require.True(t, errors.As(err, &ce), "a new row past MaxRows is refused: %v", err)
		assert.Equal(t, "board_full", ce.Code)
		_, err = h.client.PutRow(t.Context(), "row-0", 1, "y")
		assert.NoError(t, err, "a row already there can still be written")
	})
}

// Assignments are kept for the DefaultMaxAssignments most recent orders.
func TestAssignmentsAreBounded(t *testing.T) {
	b := courier.NewBoard()
	for i := range courier.DefaultMaxAssignments + 10 {
		b.Assign("ord-" + strconv.Itoa(i))
	}
	assert.Len(t, b.Assignments(), courier.DefaultMaxAssignments)
	_, ok := b.Assignment("ord-0")
	assert.False(t, ok, "the oldest assignment was dropped")
	_, ok = b.Assignment("ord-" + strconv.Itoa(courier.DefaultMaxAssignments+9))
	assert.True(t, ok, "the newest is kept")
}
