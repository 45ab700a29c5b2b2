package fallback

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/order"
)

// PublishEvery is how often deferred reviews are offered to the review
// store again.
const PublishEvery = time.Second

// reviewQueue passes reviews to the review store and, when the store cannot
// take one, accepts it anyway, keeps it in memory and publishes it once the
// store is back. One goroutine publishes, oldest first; a review leaves the
// queue only after the store took it (or refused it for good), so each is
// published exactly once, provided a failed attempt stored nothing.
type reviewQueue struct {
	next    fooddelivery.ReviewStore
	gameDay *fooddelivery.GameDay
	ctx     context.Context // cancelled by stop
	cancel  context.CancelFunc
	done    chan struct{} // closed when the publisher has returned

	mu      sync.Mutex
	pending []fooddelivery.Review
	seq     int
}

func newReviewQueue(next fooddelivery.ReviewStore, gameDay *fooddelivery.GameDay) *reviewQueue {
	ctx, cancel := context.WithCancel(context.Background())
	q := &reviewQueue{next: next, gameDay: gameDay, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go q.run()
	return q
}

func (q *reviewQueue) SubmitReview(ctx context.Context, r fooddelivery.Review) (fooddelivery.Review, error) {
	stored, err := call(ctx, q.gameDay, fooddelivery.FeatureReviews, WriteBudget,
		func(ctx context.Context) (fooddelivery.Review, error) { return q.next.SubmitReview(ctx, r) })
	if !fallBack(ctx, err) {
		return stored, err
	}
	q.mu.Lock()
	q.seq++
	r.ID = fmt.Sprintf("pending-%d", q.seq)
	q.pending = append(q.pending, r)
	q.mu.Unlock()
	return r, &gateway.FallbackError{Code: gateway.CodeDeferred, Err: err,
		Message: "thank you: your review is saved and will appear in a few minutes"}
}

// run publishes deferred reviews every PublishEvery until stop.
func (q *reviewQueue) run() {
	defer close(q.done)
	tick := time.NewTicker(PublishEvery)
	defer tick.Stop()
	for {
		select {
		case <-q.ctx.Done():
			return
		case <-tick.C:
			q.publish()
		}
	}
}

// publish offers the deferred reviews to the store, oldest first, and stops
// at the first one the store cannot take yet.
func (q *reviewQueue) publish() {
	for !q.gameDay.Forced(fooddelivery.FeatureReviews) {
		q.mu.Lock()
		if len(q.pending) == 0 {
			q.mu.Unlock()
			return
		}
		r := q.pending[0] // only this goroutine removes reviews
		q.mu.Unlock()

		r.ID = ""
		ctx, cancel := context.WithTimeout(q.ctx, WriteBudget)
		_, err := q.next.SubmitReview(ctx, r)
		cancel()
		final := errors.Is(err, fooddelivery.ErrNotFound) || errors.Is(err, fooddelivery.ErrRejected)
		if err != nil && !final {
			return // still down (or stopping): keep it for the next round
		}
		q.mu.Lock()
		q.pending = q.pending[1:]
		q.mu.Unlock()
	}
}

// stop ends the publisher and waits for it.
func (q *reviewQueue) stop() {
	q.cancel()
	<-q.done
}

// checkout gives placing an order a budget and turns an outage behind it
// (the order service, or the menu or payment service it calls) into a
// fast, clear answer. What it may tell the customer depends on what it
// knows: only when it is certain nothing was charged (notCharged) does it
// say so (NOT_CHARGED); whenever the charge may have happened, it says the
// order could not be confirmed (NOT_CONFIRMED). See NOTES.md.
type checkout struct {
	next    fooddelivery.OrderService
	gameDay *fooddelivery.GameDay
}

// Messages a customer can act on.
const (
	notChargedMessage   = "your order was not placed and your card was not charged: ordering is having trouble right now; please try again in a few minutes"
	notConfirmedMessage = "we could not confirm your order in time: it may still go through, so check your orders before you try again"
)

func (c checkout) PlaceOrder(ctx context.Context, user string, in fooddelivery.PlaceOrderInput) (fooddelivery.Order, error) {
	o, err := call(ctx, c.gameDay, fooddelivery.FeatureCheckout, CheckoutBudget,
		func(ctx context.Context) (fooddelivery.Order, error) { return c.next.PlaceOrder(ctx, user, in) })
	if !fallBack(ctx, err) {
		return o, err // placed, or the order service's own verdict (a declined card, an unknown dish)
	}
	if !notCharged(err) {
		return fooddelivery.Order{}, &gateway.FallbackError{Code: gateway.CodeNotConfirmed, Err: err, Message: notConfirmedMessage}
	}
	return fooddelivery.Order{}, &gateway.FallbackError{Code: gateway.CodeNotCharged, Err: err, Message: notChargedMessage}
}

// notCharged reports whether a failed checkout certainly charged nothing:
// the request never reached the order service (game day, a refused
// connection: fooddelivery.Unsent), or the order service answered with an
// outage it did not get past before charging. No answer at all (a reset,
// an EOF), a timeout (ours, or the order service's payment call), and the
// order service's order.CodePaymentUnconfirmed (payment's answer was lost
// after the charge was sent) all leave the charge possible.
func notCharged(err error) bool {
	if fooddelivery.Unsent(err) {
		return true
	}
	var ce *fooddelivery.CallError
	if errors.Is(err, fooddelivery.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		!errors.As(err, &ce) || ce.Status == 0 {
		return false
	}
	return ce.Code != order.CodePaymentUnconfirmed
}

func (c checkout) Order(ctx context.Context, id string) (fooddelivery.Order, error) {
	return c.next.Order(ctx, id)
}

// failClosed bounds the auth check and, when it cannot be made, denies:
// any error other than a refused token makes the gateway answer
// AUTH_UNAVAILABLE without doing anything.
type failClosed struct {
	next    fooddelivery.Authorizer
	gameDay *fooddelivery.GameDay
}

func (a failClosed) Authorize(ctx context.Context, token string) (string, error) {
	user, err := call(ctx, a.gameDay, fooddelivery.FeatureAuth, AuthBudget,
		func(ctx context.Context) (string, error) { return a.next.Authorize(ctx, token) })
	if err != nil {
		return "", err
	}
	return user, nil
}
