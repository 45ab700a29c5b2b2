// Package dispatch is the food-delivery system's courier-assignment
// pipeline (lab 08): an in-process message queue with at-least-once
// delivery and a dead-letter queue, modelled on Amazon SQS, and the fleet
// of couriers that the consumer sends to restaurants.
//
// Delivery follows SQS: a received message stays in the queue, invisible
// for VisibilityTimeout; the consumer deletes it by returning nil. If the
// handler fails, or the consumer crashes before deleting it, the message
// is received again once the timeout has passed, by any worker, even while
// the first handler is still running. A message received more than
// MaxReceives times moves to the dead-letter queue; Redrive puts dead
// letters back as new messages. So a handler must expect the same order
// more than once.
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/courier"
)

// Defaults for a zero Queue: SQS's default visibility timeout (30 s) and a
// redrive policy of 5 receives.
const (
	DefaultVisibilityTimeout = 30 * time.Second
	DefaultMaxReceives       = 5
)

// Message is an "order placed" event: find a courier for the order.
type Message struct {
	// ID names this message: "msg-1", "msg-2", ... A message redriven
	// from the dead-letter queue gets a new ID, as a message republished
	// by an operator or a redrive tool does.
	ID           string
	OrderID      string
	RestaurantID string
	// Receives counts how often this message was received, this delivery
	// included (SQS's ApproximateReceiveCount): 1 on the first delivery.
	Receives int
}

// Handler processes one message. Returning nil deletes the message;
// an error leaves it in the queue, to be received again after the
// visibility timeout.
type Handler func(ctx context.Context, m Message) error

// Queue is an at-least-once message queue. Set its fields before the
// first Publish; the zero value is ready to use. It is safe for concurrent
// use.
type Queue struct {
	// VisibilityTimeout is how long a received message stays invisible
	// before it can be received again. Zero means
	// DefaultVisibilityTimeout.
	VisibilityTimeout time.Duration
	// MaxReceives is how often a message may be received before it moves
	// to the dead-letter queue. Zero means DefaultMaxReceives.
	MaxReceives int
	// CrashAfterHandling, when set, is asked after each delivery whose
	// handler returned nil; true simulates a consumer that crashed after
	// doing its work and before deleting the message, so the message comes
	// back after the visibility timeout. nil means no crashes.
	CrashAfterHandling func(m Message) bool

	mu       sync.Mutex
	seq      int
	pending  []*item
	dead     []Message
	received int
}

type item struct {
	m         Message
	visibleAt time.Time
	deleted   bool
}

// Publish adds an "order placed" message for orderID and returns it.
func (q *Queue) Publish(orderID, restaurantID string) Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.publishLocked(Message{OrderID: orderID, RestaurantID: restaurantID})
}

func (q *Queue) publishLocked(m Message) Message {
	q.seq++
	m.ID = "msg-" + strconv.Itoa(q.seq)
	m.Receives = 0
	q.pending = append(q.pending, &item{m: m, visibleAt: time.Now()})
	return m
}

// Consume runs workers goroutines (at least 1) that receive messages and
// call h, until no message is left in the queue (each was deleted or moved
// to the dead-letter queue) and every handler has returned, or until ctx
// is done (then it returns ctx's error).
func (q *Queue) Consume(ctx context.Context, workers int, h Handler) error {
	var wg sync.WaitGroup
	errs := make([]error, max(workers, 1))
	for i := range errs {
		wg.Go(func() { errs[i] = q.work(ctx, h) })
	}
	wg.Wait()
	if errors.Join(errs...) != nil {
		// A worker stops early only because ctx is done: report that once,
		// not once per worker.
		return ctx.Err()
	}
	return nil
}

func (q *Queue) work(ctx context.Context, h Handler) error {
	for {
		it, m, wait, ok := q.receive()
		if !ok {
			return nil
		}
		if it == nil {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
			continue
		}
		err := h(ctx, m)
		if err == nil && (q.CrashAfterHandling == nil || !q.CrashAfterHandling(m)) {
			q.delete(it)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// receive returns the first visible message (its item, and a copy of the
// message as delivered), marking it invisible, or how long to wait for
// one; ok is false when the queue is empty.
func (q *Queue) receive() (it *item, m Message, wait time.Duration, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		if len(q.pending) == 0 {
			return nil, Message{}, 0, false
		}
		now := time.Now()
		next := q.pending[0].visibleAt
		for _, p := range q.pending {
			if p.visibleAt.Before(next) {
				next = p.visibleAt
			}
			if !p.visibleAt.After(now) {
				it = p
				break
			}
		}
		if it == nil {
			return nil, Message{}, next.Sub(now), true
		}
		if it.m.Receives >= q.maxReceives() {
			q.remove(it)
			q.dead = append(q.dead, it.m)
			if len(q.dead) > MaxDeadLetters {
				q.dead = q.dead[1:] // the oldest goes; append reallocates, so the array stays bounded
			}
			it = nil
			continue
		}
		it.m.Receives++
		it.visibleAt = now.Add(q.visibility())
		q.received++
		return it, it.m, 0, true
	}
}

func (q *Queue) delete(it *item) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.remove(it)
}

func (q *Queue) remove(it *item) {
	if i := slices.Index(q.pending, it); i >= 0 {
		q.pending = slices.Delete(q.pending, i, i+1)
	}
}

func (q *Queue) visibility() time.Duration {
	if q.VisibilityTimeout > 0 {
		return q.VisibilityTimeout
	}
	return DefaultVisibilityTimeout
}

func (q *Queue) maxReceives() int {
	if q.MaxReceives > 0 {
		return q.MaxReceives
	}
	return DefaultMaxReceives
}

// MaxDeadLetters is how many messages the dead-letter queue keeps: the
// 10,000 most recent (SQS keeps a message for at most 14 days; this
// queue, in memory, keeps a count instead).
const MaxDeadLetters = 10_000

// DeadLetters returns the messages in the dead-letter queue (at most
// MaxDeadLetters, the most recent), oldest first.
func (q *Queue) DeadLetters() []Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.dead)
}

// Redrive moves every dead letter back into the queue as a new message
// (a new ID, Receives starting again from 0) and returns how many it
// moved.
func (q *Queue) Redrive() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.dead)
	for _, m := range q.dead {
		q.publishLocked(m)
	}
	q.dead = nil
	return n
}

// Received returns how many deliveries the queue made in all.
func (q *Queue) Received() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.received
}

// Fleet is the couriers' phones. Send pushes a pickup job to a courier,
// who then drives to the restaurant. Sending is not idempotent per order:
// every different courier sent for an order is one more trip to the same
// restaurant. The same courier sent twice for one order drives once (the
// phone shows one job per order). It is safe for concurrent use; the zero
// value is not usable, call NewFleet.
type Fleet struct {
	// Board is the courier service's board; its Assign is idempotent per
	// order.
	Board *courier.Board
	// SendLatency is how long a push takes before the courier has the
	// job. Set it before use. Zero means none.
	SendLatency time.Duration

	mu       sync.Mutex
	failNext int
	booked   map[string][]string // order id -> couriers a push was started to, distinct
	trips    map[string][]string // order id -> couriers whose push arrived, distinct
	jobs     map[string]int      // courier -> orders booked on them
	pushes   int
}

// ErrPhoneUnreachable is what Send returns during an outage (FailNext).
var ErrPhoneUnreachable = fmt.Errorf("courier phone unreachable: %w", fooddelivery.ErrUnavailable)

// NewFleet returns a fleet made of board's couriers. board is required.
func NewFleet(board *courier.Board) *Fleet {
	return &Fleet{Board: board, booked: map[string][]string{}, trips: map[string][]string{}, jobs: map[string]int{}}
}

// Freest returns the courier with the fewest orders booked on them so far,
// pushes still under way included (ties go to the courier the board lists
// first).
func (f *Fleet) Freest() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	cs := f.Board.Couriers()
	best := cs[0]
	for _, c := range cs[1:] {
		if f.jobs[c] < f.jobs[best] {
			best = c
		}
	}
	return best
}

// Send pushes the pickup job of m to courierID. The courier counts as
// busy with the order (for Freest) from the start of the push; the trip
// counts (for Couriers) once the push has arrived, SendLatency later.
// Send returns ctx's error if ctx ends first (the push never arrives), or
// ErrPhoneUnreachable during an outage (FailNext).
func (f *Fleet) Send(ctx context.Context, courierID string, m Message) error {
	f.mu.Lock()
	down := f.failNext > 0
	if down {
		f.failNext--
	} else if !slices.Contains(f.booked[m.OrderID], courierID) {
		f.booked[m.OrderID] = append(f.booked[m.OrderID], courierID)
		f.jobs[courierID]++
	}
	f.mu.Unlock()
	if down {
		return ErrPhoneUnreachable
	}
	if f.SendLatency > 0 {
		t := time.NewTimer(f.SendLatency)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pushes++
	if !slices.Contains(f.trips[m.OrderID], courierID) {
		f.trips[m.OrderID] = append(f.trips[m.OrderID], courierID)
	}
	return nil
}

// FailNext makes the next n calls of Send fail with ErrPhoneUnreachable.
func (f *Fleet) FailNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext = n
}

// Couriers returns the distinct couriers sent to orderID, in the order
// they were sent: more than one is two couriers driving to the same
// restaurant.
func (f *Fleet) Couriers(orderID string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.trips[orderID])
}

// Pushes returns how many jobs were pushed in all, repeats included.
func (f *Fleet) Pushes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pushes
}

// NaiveAssignCourier is the courier-assignment consumer of lab 08's story:
// every delivery of a message sends the least busy courier (Freest), so a
// redelivered or redriven message sends a second courier to the same
// restaurant. Lab 08 replaces it with a consumer keyed by the order.
func NaiveAssignCourier(ctx context.Context, fleet *Fleet, m Message) error {
	return fleet.Send(ctx, fleet.Freest(), m)
}
