package system

import (
	"context"
	"sync"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/dispatch"
)

// CourierDispatch configures the courier-assignment pipeline (lab 08's
// consumer, set with Config.CourierDispatch). Once the order service has
// a courier assigned to a new order (by the courier service), it publishes
// an "order placed" message on Queue; Workers goroutines receive each
// delivery and hand it to Consumer, which sends a courier to the
// restaurant through the fleet. Deliveries are at least once (package
// dispatch), so a consumer that is not idempotent sends a second courier.
type CourierDispatch struct {
	// Consumer handles one delivery: lab 08's AssignCourier, or
	// dispatch.NaiveAssignCourier. It gets the system's fleet, whose
	// Board is System.Board. Returning nil deletes the message; an error
	// leaves it for another delivery. Required.
	Consumer func(ctx context.Context, fleet *dispatch.Fleet, m dispatch.Message) error
	// Queue is the queue the order service publishes on, with its
	// settings (visibility timeout, simulated crashes) already set; the
	// system only publishes and consumes. nil means a zero dispatch.Queue
	// (SQS's defaults, no crashes).
	Queue *dispatch.Queue
	// Workers is how many deliveries are handled at once. Zero means 2.
	Workers int
}

// Dispatch is the running courier-assignment pipeline (System.Dispatch).
type Dispatch struct {
	Queue *dispatch.Queue
	// Fleet is the couriers' phones: Fleet.Couriers(orderID) lists the
	// couriers sent to an order (more than one is a second trip).
	Fleet *dispatch.Fleet

	consumer func(ctx context.Context, fleet *dispatch.Fleet, m dispatch.Message) error
	workers  int
	wake     chan struct{} // one pending wake-up: a message was published
	cancel   context.CancelFunc
	done     sync.WaitGroup
}

// startDispatch starts the pipeline cfg describes, if any, and returns the
// order service's courier client: next, publishing every assignment it
// makes on the pipeline's queue. With cfg nil it returns next unchanged.
func (s *System) startDispatch(cfg *CourierDispatch, next fooddelivery.CourierAssigner) fooddelivery.CourierAssigner {
	if cfg == nil {
		return next
	}
	q := cfg.Queue
	if q == nil {
		q = &dispatch.Queue{}
	}
	workers := cfg.Workers
	if workers <= 0 {
		workers = 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Dispatch{Queue: q, Fleet: dispatch.NewFleet(s.Board), consumer: cfg.Consumer,
		workers: workers, wake: make(chan struct{}, 1), cancel: cancel}
	d.done.Go(func() { d.run(ctx) })
	s.Dispatch = d
	s.stops = append(s.stops, d.stop)
	return publishing{next: next, d: d}
}

// run consumes the queue each time a message is published, until ctx is
// done. Queue.Consume returns once the queue is empty; a message published
// after that leaves a wake-up behind, so none is missed.
func (d *Dispatch) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		}
		d.Queue.Consume(ctx, d.workers, func(ctx context.Context, m dispatch.Message) error {
			return d.consumer(ctx, d.Fleet, m)
		})
	}
}

func (d *Dispatch) publish(orderID, restaurantID string) {
	d.Queue.Publish(orderID, restaurantID)
	select {
	case d.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// stop ends the consumer and waits for it; messages still in the queue
// are dropped.
func (d *Dispatch) stop() {
	d.cancel()
	d.done.Wait()
}

// publishing is the order service's courier client with the pipeline
// behind it: an assignment that succeeded is announced on the queue.
type publishing struct {
	next fooddelivery.CourierAssigner
	d    *Dispatch
}

func (p publishing) Assign(ctx context.Context, orderID, restaurantID string) (fooddelivery.Assignment, error) {
	a, err := p.next.Assign(ctx, orderID, restaurantID)
	if err == nil {
		p.d.publish(orderID, restaurantID)
	}
	return a, err
}
