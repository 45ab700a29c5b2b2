package courier

import (
	"errors"
	"slices"
	"strconv"
	"sync"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/internal/recent"
)

// Row is one row of the dispatch board: a value guarded by a version for
// optimistic concurrency. A row that was never written has version 0 and
// an empty value; every successful write increments the version by 1.
type Row struct {
	Row     string `json:"row"`
	Version int64  `json:"version"`
	Value   string `json:"value"`
}

// Bounds of a Board, so that a service left running, or a client writing
// rows, holds a bounded amount of memory.
const (
	// DefaultMaxAssignments is how many assignments a board keeps: the
	// 20,000 most recent. An older order assigned again gets a new
	// courier.
	DefaultMaxAssignments = 20_000
	// MaxRows is how many rows the dispatch board holds; writing a new
	// row past it is refused (ErrBoardFull).
	MaxRows = 1000
	// MaxRowValueBytes is the longest value a row takes, in bytes.
	MaxRowValueBytes = 4096
)

// ErrBoardFull: a write to a new row of a board that holds MaxRows rows.
var ErrBoardFull = errors.New("courier: the dispatch board is full")

// Board is the courier service's state, in memory (a restart loses it):
// its couriers, their assignments and the dispatch board's rows. It is
// safe for concurrent use; the zero value is not usable, call NewBoard.
type Board struct {
	mu          sync.Mutex
	couriers    []string
	load        map[string]int // assignments per courier
	assignments *recent.Map[string, fooddelivery.Assignment]
	rows        map[string]Row
}

// NewBoard returns a board with the given couriers; with none it has five,
// "courier-1" to "courier-5".
func NewBoard(couriers ...string) *Board {
	if len(couriers) == 0 {
		couriers = []string{"courier-1", "courier-2", "courier-3", "courier-4", "courier-5"}
	}
	return &Board{
		couriers:    slices.Clone(couriers),
		load:        map[string]int{},
		assignments: recent.NewMap[string, fooddelivery.Assignment](DefaultMaxAssignments),
		rows:        map[string]Row{},
	}
}

// Couriers returns the board's couriers in the order they were listed.
func (b *Board) Couriers() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.couriers)
}

// Assign assigns a courier to orderID: the free-est one (fewest
// assignments so far; ties go to the courier listed first). If orderID
// already has a courier, Assign returns that assignment and created is
// false: assigning is idempotent per order.
func (b *Board) Assign(orderID string) (a fooddelivery.Assignment, created bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if a, ok := b.assignments.Get(orderID); ok {
		return a, false
	}
	best := b.couriers[0]
	for _, c := range b.couriers[1:] {
		if b.load[c] < b.load[best] {
			best = c
		}
	}
	b.load[best]++
	a = fooddelivery.Assignment{OrderID: orderID, CourierID: best}
	b.assignments.Put(orderID, a)
	return a, true
}

// Assignment returns the assignment of orderID; ok is false if it has none.
func (b *Board) Assignment(orderID string) (a fooddelivery.Assignment, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.assignments.Get(orderID)
}

// Assignments returns every assignment kept (the DefaultMaxAssignments
// most recent), oldest first.
func (b *Board) Assignments() []fooddelivery.Assignment {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]fooddelivery.Assignment, 0, b.assignments.Len())
	b.assignments.Each(func(_ string, a fooddelivery.Assignment) { out = append(out, a) })
	return out
}

// Row returns the row named name (version 0 and an empty value if it was
// never written).
func (b *Board) Row(name string) Row {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rowLocked(name)
}

func (b *Board) rowLocked(name string) Row {
	r, ok := b.rows[name]
	if !ok {
		r = Row{Row: name}
	}
	return r
}

// Put writes value to row name if the row's version is still ifVersion
// (compare and swap). It returns the row as it is afterwards and whether
// the write happened; on a version mismatch nothing changes and the
// current row is returned. A write of a new row to a board of MaxRows
// rows returns ErrBoardFull and changes nothing. (The caller bounds the
// value by MaxRowValueBytes.)
func (b *Board) Put(name string, ifVersion int64, value string) (Row, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.rowLocked(name)
	if r.Version != ifVersion {
		return r, false, nil
	}
	if _, ok := b.rows[name]; !ok && len(b.rows) >= MaxRows {
		return r, false, ErrBoardFull
	}
	r.Version++
	r.Value = value
	b.rows[name] = r
	return r, true, nil
}

// Writes returns the sum of the versions of all rows: how many writes the
// board accepted.
func (b *Board) Writes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	var n int64
	for _, r := range b.rows {
		n += r.Version
	}
	return n
}

// etaFor is the courier service's estimate for a restaurant: a window of
// 10 to 15 minutes starting between 20 and 25 minutes, a pure function of
// the restaurant id (so it is the same on every call).
func etaFor(restaurantID string) fooddelivery.ETA {
	d := fooddelivery.Draw(0, "eta:"+restaurantID, 0)
	minMinutes := 20 + int(d*6)                                      // 20..25
	span := 10 + int(fooddelivery.Draw(0, "eta:"+restaurantID, 1)*6) // 10..15
	return fooddelivery.ETA{
		RestaurantID: restaurantID,
		Min:          minutes(minMinutes),
		Max:          minutes(minMinutes + span),
	}
}

func parseVersion(s string) (int64, bool) {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil && v >= 0
}
