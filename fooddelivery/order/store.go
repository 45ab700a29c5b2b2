package order

import (
	"strconv"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
)

// Store holds the order service's orders. It is safe for concurrent use;
// the zero value is not usable, call NewStore.
type Store struct {
	// Prefix starts every id NewID returns; "" means "ord-". Set it
	// before the first NewID.
	Prefix string

	mu     sync.Mutex
	seq    int
	orders map[string]entry
	ids    []string // in creation order
}

type entry struct {
	order fooddelivery.Order
	at    time.Time
}

// NewStore returns an empty store.
func NewStore() *Store { return &Store{orders: map[string]entry{}} }

// NewID returns a fresh order id, Prefix and a number ("ord-1",
// "ord-2", ...), unique within the store; a Prefix that names the run
// (system.Config.OrderIDPrefix) makes it unique across runs too.
func (s *Store) NewID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	p := s.Prefix
	if p == "" {
		p = "ord-"
	}
	return p + strconv.Itoa(s.seq)
}

// Put stores o under o.ID, stamped with the current time (time.Now, so
// virtual time in a synctest bubble); a second Put of the same id
// replaces the order and keeps the first time.
func (s *Store) Put(o fooddelivery.Order) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.orders[o.ID]
	if !ok {
		e.at = time.Now()
		s.ids = append(s.ids, o.ID)
	}
	e.order = o
	s.orders[o.ID] = e
}

// Get returns the order id; ok is false if there is none.
func (s *Store) Get(id string) (o fooddelivery.Order, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.orders[id]
	return e.order, ok
}

// Orders returns every stored order, oldest first, whatever its status.
func (s *Store) Orders() []fooddelivery.Order {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]fooddelivery.Order, 0, len(s.ids))
	for _, id := range s.ids {
		out = append(out, s.orders[id].order)
	}
	return out
}

// Len returns how many orders are stored, whatever their status.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ids)
}

// DailyReport sums up one UTC day of orders (GET /reports/daily).
type DailyReport struct {
	Day           string `json:"day"`           // YYYY-MM-DD, UTC
	Orders        int    `json:"orders"`        // orders placed (status PLACED)
	PaymentFailed int    `json:"paymentFailed"` // orders whose payment failed
	RevenueCents  int    `json:"revenueCents"`  // total of the placed orders, in cents
	Couriers      int    `json:"couriers"`      // placed orders with a courier assigned
}

// Report returns the report of the UTC day that contains day. Orders
// count on the day they were first stored.
func (s *Store) Report(day time.Time) DailyReport {
	day = day.UTC()
	start := time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, time.UTC)
	end := start.AddDate(0, 0, 1)
	rep := DailyReport{Day: start.Format(time.DateOnly)}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range s.ids {
		e := s.orders[id]
		if e.at.Before(start) || !e.at.Before(end) {
			continue
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
	}
	return rep
}
