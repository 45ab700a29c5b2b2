package order

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/internal/recent"
)

// DefaultMaxOrders is how many orders a Store keeps by default: the
// 20,000 most recent, a few MiB, about a day of a workshop's load (-load
// 20 places about 3 orders a second).
const DefaultMaxOrders = 20_000

// Store holds the order service's orders, in memory: a restart loses them.
// It keeps the Max most recent ones (by when they were first stored); an
// older one is dropped, and GET /orders/{id} answers 404 "order_expired"
// for it. It is safe for concurrent use; the zero value is not usable,
// call NewStore.
type Store struct {
	// Prefix starts every id NewID returns; "" means "ord-". Set it
	// before the first NewID.
	Prefix string
	// Max is how many orders the store keeps; 0 means DefaultMaxOrders.
	// Set it before the first Put.
	Max int
	// Journal, when set, makes the store durable: Put commits each order
	// to it before it returns, and fails when it cannot. Load it into the
	// store (Journal.Load) before setting it. nil means memory only.
	Journal *Journal

	mu      sync.Mutex
	seq     int
	orders  *recent.Map[string, entry]
	dropped int // the highest number of an id dropped so far
}

type entry struct {
	order fooddelivery.Order
	at    time.Time
}

// NewStore returns an empty store.
func NewStore() *Store { return &Store{} }

// NewID returns a fresh order id, Prefix and a number ("ord-1",
// "ord-2", ...), unique within the store; a Prefix that names the run
// (system.Config.OrderIDPrefix) makes it unique across runs too.
func (s *Store) NewID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.prefix() + strconv.Itoa(s.seq)
}

func (s *Store) prefix() string {
	if s.Prefix == "" {
		return "ord-"
	}
	return s.Prefix
}

// kept returns s.orders, made on first use.
func (s *Store) kept() *recent.Map[string, entry] {
	if s.orders == nil {
		max := s.Max
		if max <= 0 {
			max = DefaultMaxOrders
		}
		s.orders = recent.NewMap[string, entry](max)
	}
	return s.orders
}

// Put stores o under o.ID, stamped with the current time (time.Now, so
// virtual time in a synctest bubble); a second Put of the same id
// replaces the order and keeps the first time. When the store is full
// the oldest order is dropped. With a Journal the order is committed to
// it first; when that fails nothing changes and the error is returned.
func (s *Store) Put(o fooddelivery.Order) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.kept().Get(o.ID)
	if !ok {
		e.at = time.Now()
	}
	if s.Journal != nil {
		if err := s.Journal.put(o, e.at, s.kept().Max()); err != nil {
			return fmt.Errorf("order %s was not stored: %w", o.ID, err)
		}
	}
	s.store(o, e)
	return nil
}

// restore puts o, first stored at at, read back from a Journal.
func (s *Store) restore(o fooddelivery.Order, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.store(o, entry{at: at})
}

// store keeps o in e (e.at set). The caller holds s.mu.
func (s *Store) store(o fooddelivery.Order, e entry) {
	e.order = o
	if old, dropped := s.kept().Put(o.ID, e); dropped {
		if n, ok := s.number(old); ok && n > s.dropped {
			s.dropped = n
		}
	}
}

// number returns the number in one of s's ids.
func (s *Store) number(id string) (int, bool) {
	rest, ok := strings.CutPrefix(id, s.prefix())
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

// Get returns the order id; ok is false if there is none.
func (s *Store) Get(id string) (o fooddelivery.Order, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.kept().Get(id)
	return e.order, ok
}

// Expired reports whether id is one of the store's own ids whose order
// may have been dropped to keep within Max: an id of this run no newer
// than the newest dropped. Get of it returns false.
func (s *Store) Expired(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.number(id)
	_, kept := s.kept().Get(id)
	return ok && !kept && n <= s.dropped
}

// Orders returns every stored order, oldest first, whatever its status.
func (s *Store) Orders() []fooddelivery.Order {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]fooddelivery.Order, 0, s.kept().Len())
	s.kept().Each(func(_ string, e entry) { out = append(out, e.order) })
	return out
}

// Limit returns how many orders the store keeps at most: Max, or
// DefaultMaxOrders.
func (s *Store) Limit() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kept().Max()
}

// Len returns how many orders are stored, whatever their status: at most
// Max.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kept().Len()
}

// DailyReport sums up one UTC day of orders (GET /reports/daily).
type DailyReport struct {
	Day           string `json:"day"`           // YYYY-MM-DD, UTC
	Orders        int    `json:"orders"`        // orders placed (status PLACED)
	PaymentFailed int    `json:"paymentFailed"` // orders whose payment failed
	RevenueCents  int    `json:"revenueCents"`  // total of the placed orders, in cents
	Couriers      int    `json:"couriers"`      // placed orders with a courier assigned
}

// Report returns the report of the UTC day that contains day, over the
// orders the store keeps. Orders count on the day they were first stored.
func (s *Store) Report(day time.Time) DailyReport {
	day = day.UTC()
	start := time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, time.UTC)
	end := start.AddDate(0, 0, 1)
	rep := DailyReport{Day: start.Format(time.DateOnly)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kept().Each(func(_ string, e entry) {
		if e.at.Before(start) || !e.at.Before(end) {
			return
		}
		switch e.order.Status {
		case fooddelivery.OrderPlaced:
			rep.Orders++
			rep.RevenueCents += e.order.TotalCents
			if e.order.CourierID != "" {
				rep.Couriers++
			}
		case fooddelivery.OrderPaymentKO:
			rep.PaymentFailed++
		}
	})
	return rep
}
