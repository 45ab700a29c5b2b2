// Package plan describes, as one value, which resilience pattern runs at
// each integration point of the food-delivery system and with which
// settings: the timeouts, the deadline budget, which layer retries and how,
// the retry budget, the circuit breakers, the bulkhead's compartments, the
// fallbacks, the idempotency keys and the hedged menu reads.
//
// A Plan is plain data: it imports no pattern. The composition that turns
// it into a running system (internal/compose) plugs each lab's reference
// solution, or a learner's lab code where it is built in, at its point
// with these settings. Labs() is the plan every lab's README teaches (what
// go run ./cmd/fooddelivery -lab all=solution runs); lab 10, the game day,
// asks the learner to write their own.
//
// The zero Plan is the system as it is: no timeouts, no retries, no
// breaker, no compartments, no fallbacks, no keys, no hedges. Every field
// says what its zero value means.
package plan

import (
	"errors"
	"fmt"
	"time"
)

// Plan is what runs at every integration point. Write it as a struct
// literal a person can read top to bottom.
type Plan struct {
	// Payment is the order service's calls to the payment service: one
	// charge per checkout.
	Payment Payment
	// Deadlines, when set, propagates the caller's remaining time from the
	// gateway through the order service to its calls (lab 02). nil means
	// no deadline on the wire: each service waits as long as its own
	// clients let it.
	Deadlines *Deadlines
	// Gateway is the gateway's own limit and its calls to its
	// dependencies.
	Gateway Gateway
	// IdempotencyKeys gives every order's charge one Idempotency-Key, kept
	// by the payment service for 24 hours (lab 08), so a retried charge
	// whose first answer was lost is replayed, not charged again. false
	// means charges carry no key: the payment service charges every
	// request it receives, and retry loops that need a key to replay a
	// POST (the client's, Retries with neither EveryLayer nor Budget)
	// send the charge once.
	IdempotencyKeys bool
}

// Payment is the order service's payment client and what wraps it.
type Payment struct {
	// Timeout bounds one payment call, connect included (lab 01's client,
	// which connects within 300 ms). Zero means no timeout: a hung payment
	// holds the checkout until its caller gives up.
	Timeout time.Duration
	// Retries says who retries a failed charge, how often and how fast.
	// The zero Retries makes one attempt.
	Retries Retries
	// Breaker, when set, is a circuit breaker around the order service's
	// payment calls (lab 05): it judges each charge once, retries
	// included, and refuses charges at once while open. nil means none.
	Breaker *Breaker
}

// Retries are the retry loops of a checkout.
type Retries struct {
	// Attempts is the most attempts per charge at each retrying layer, the
	// first included. Zero or 1 means no retries.
	Attempts int
	// BaseDelay and MaxDelay shape the full-jitter backoff between
	// attempts: before retry n a uniform draw in
	// [0, min(MaxDelay, BaseDelay*2^(n-1))) (Brooker, "Exponential Backoff
	// And Jitter", 2015). Zero means 100 ms and 2 s.
	BaseDelay, MaxDelay time.Duration
	// EveryLayer makes the gateway's order client and the order service
	// retry a failed checkout too, each up to Attempts times and whatever
	// the failure, as loops added layer by layer do: with payment down one
	// tap reaches it up to Attempts^3 times. false means only the layer
	// next to payment retries.
	EveryLayer bool
	// Budget, when set, bounds the retries of the layer next to payment
	// (lab 04's budget). nil means no budget: every retryable failure is
	// retried up to Attempts. With neither Budget nor EveryLayer the
	// payment client's transport retries (lab 03), and only requests it
	// may repeat: a charge needs IdempotencyKeys for that.
	//
	// What each layer retries. The transport (no Budget, no EveryLayer):
	// a failed connection or exchange, and the statuses 429, 502, 503
	// and 504, never a 500 or another 4xx. The budgeted loop (Budget): a
	// timeout, and every answer the client reads as unavailable, 500,
	// 502, 503 and 429 included (fooddelivery.ReadError), never an
	// overload signal, an open breaker, a full compartment or a refused
	// request. EveryLayer: every failure.
	Budget *RetryBudget
}

// RetryBudget bounds retries to a share of requests, as a token bucket:
// each request earns Ratio of a retry, each second earns MinPerSecond, and
// at most Max unspent retries are kept (the SRE book's 10%, chapter 22;
// Finagle's RetryBudget has the same three parts).
type RetryBudget struct {
	// Ratio is the retries earned per request, from 0 to 1 (0.1: 10%).
	Ratio float64
	// MinPerSecond is the retries earned per second whatever the traffic,
	// so that a quiet client can still retry. Zero means none.
	MinPerSecond float64
	// Max is the most retries saved up. It must be at least 1.
	Max float64
}

// Breaker is a count-based circuit breaker's settings (lab 05).
type Breaker struct {
	// Window is the number of most recent calls whose failure rate is
	// judged. It must be at least 1.
	Window int
	// FailureRate opens the breaker when at least this share of the
	// window's calls failed, from 0 to 1. Zero means 0.5.
	FailureRate float64
	// MinCalls is how many calls the window must hold before the rate is
	// trusted. Zero, or more than Window, means Window.
	MinCalls int
	// OpenFor is how long the breaker stays open before a trial call. Zero
	// means 30 s (Envoy's base ejection time).
	OpenFor time.Duration
	// HalfOpenCalls is how many trial calls must succeed to close. Zero
	// means 1.
	HalfOpenCalls int
}

// Deadlines are lab 02's deadline propagation settings: the header
// X-Timeout-Ms carries the remaining milliseconds.
type Deadlines struct {
	// OwnBudget is the order service's budget when its caller sent none.
	// It must be positive.
	OwnBudget time.Duration
	// Need is the least remaining time a checkout needs to start; with
	// less the order service answers 504 at once, calling nothing. Zero
	// means every request starts.
	Need time.Duration
	// Hop is taken off the budget at every outgoing call, for the network
	// hop. Zero means nothing is taken off.
	Hop time.Duration
}

// Gateway is the gateway's limit and its guards.
type Gateway struct {
	// Limit is how many requests the gateway serves at once before it
	// refuses more (OVERLOADED). Zero means the system's default, 200.
	// Lab 10's game day runs on a platform whose capacity is fixed (the
	// gateway serves 30 at once): it refuses a plan with a Limit.
	Limit int
	// Compartments, when set, gives each of the gateway's dependencies its
	// own slots (lab 06's bulkhead). nil means none: a hung dependency can
	// take every one of the gateway's Limit slots.
	Compartments *Compartments
	// OrdersBreaker, when set, puts a circuit breaker per endpoint on the
	// gateway's calls to the order service (lab 05). nil means none.
	OrdersBreaker *Breaker
	// Fallbacks turns on lab 07's fallbacks: the last known menu (marked
	// stale), a default delivery estimate, popular dishes instead of
	// recommendations, deferred reviews and clear checkout errors, each
	// dependency called with its own budget (300 ms for reads, 2 s for a
	// checkout). false means plain calls: a failing dependency fails its
	// fields.
	Fallbacks bool
	// AuthFailOpen lets a request in as the user its token names when the
	// auth service cannot be asked (down, slow or overloaded). false means
	// such a request is denied: it fails closed. It applies with or
	// without Fallbacks.
	AuthFailOpen bool
	// Hedge, when set, hedges the gateway's menu reads to the next replica
	// (lab 09). nil means each read goes to one replica.
	Hedge *Hedge
}

// Compartments are the bulkhead's slots per dependency of the gateway. A
// compartment with 0 slots is not guarded.
type Compartments struct {
	// Orders is the slots for checkouts and order lookups (the order
	// service).
	Orders int
	// Menu is the slots for restaurant lists and menus (the menu
	// replicas). One slot covers a read and its hedge.
	Menu int
	// Courier is the slots for delivery estimates (the courier service).
	Courier int
	// Wait is how long a call waits for a slot before it is refused
	// (BULKHEAD_FULL). Zero means no wait.
	Wait time.Duration
}

// Hedge is lab 09's hedged menu reads.
type Hedge struct {
	// Window is how many recent reads the delay is a percentile of. It
	// must be at least 1.
	Window int
	// Percentile is the share of reads the delay waits for, from 0 to 1
	// exclusive (0.95: the running p95).
	Percentile float64
	// FirstDelay is the delay before any read was seen. It must be
	// positive.
	FirstDelay time.Duration
	// Ratio is the hedges earned per read (0.1: at most about 10% more
	// reads).
	Ratio float64
	// Burst is the most hedges saved up for a stall. It must be at least 1.
	Burst int
}

// ErrInvalid is wrapped by every error Check returns.
var ErrInvalid = errors.New("plan: invalid setting")

// Bounds of the settings Check accepts: beyond them a plan would take
// the machine's memory (a window of a billion reads) or never act.
const (
	// MaxWindow bounds Breaker.Window and Hedge.Window: 100000 calls.
	MaxWindow = 100000
	// MaxSlots bounds each compartment and the gateway's Limit: 100000.
	MaxSlots = 100000
	// MaxTokens bounds RetryBudget.Max, RetryBudget.MinPerSecond and
	// Hedge.Burst: 100000.
	MaxTokens = 100000
	// MinRatio is the smallest ratio a budget earns with, other than 0:
	// below it a request's share is lost to rounding.
	MinRatio = 1e-6
	// MaxDuration bounds every duration of a plan: one hour.
	MaxDuration = time.Hour
)

// Check reports the first setting of p that the system cannot run, naming
// the field, the value and what it must be; NaN, infinities and values
// beyond the bounds above are refused too. A nil error means the plan can
// run.
func (p Plan) Check() error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("%w: %s is %v; %s", ErrInvalid, field, v, want)
	}
	long := func(d time.Duration) bool { return d < 0 || d > MaxDuration }
	if long(p.Payment.Timeout) {
		return bad("Payment.Timeout", p.Payment.Timeout, "it must be 0 (no timeout) to 1h")
	}
	r := p.Payment.Retries
	switch {
	case r.Attempts < 0 || r.Attempts > 10:
		return bad("Payment.Retries.Attempts", r.Attempts, "it must be 0 to 10 (0 or 1: no retries)")
	case long(r.BaseDelay) || long(r.MaxDelay):
		return bad("Payment.Retries.BaseDelay/MaxDelay", fmt.Sprintf("%v/%v", r.BaseDelay, r.MaxDelay), "they must be 0 (the defaults) to 1h")
	}
	if b := r.Budget; b != nil {
		switch {
		case !within(b.Ratio, 0, 1) || (b.Ratio > 0 && b.Ratio < MinRatio):
			return bad("Payment.Retries.Budget.Ratio", b.Ratio, "it must be 0, or 0.000001 to 1 (0.1: 10% of requests)")
		case !within(b.MinPerSecond, 0, MaxTokens):
			return bad("Payment.Retries.Budget.MinPerSecond", b.MinPerSecond, "it must be 0 to 100000")
		case !within(b.Max, 1, MaxTokens):
			return bad("Payment.Retries.Budget.Max", b.Max, "it must be 1 to 100000")
		}
	}
	if err := p.Payment.Breaker.check("Payment.Breaker"); err != nil {
		return err
	}
	if d := p.Deadlines; d != nil {
		switch {
		case d.OwnBudget <= 0 || d.OwnBudget > MaxDuration:
			return bad("Deadlines.OwnBudget", d.OwnBudget, "it must be positive, at most 1h")
		case d.Need < 0 || d.Need >= d.OwnBudget:
			return bad("Deadlines.Need", d.Need, "it must be 0 or more and below OwnBudget")
		case d.Hop < 0 || d.Hop >= d.OwnBudget:
			return bad("Deadlines.Hop", d.Hop, "it must be 0 or more and below OwnBudget")
		}
	}
	g := p.Gateway
	if g.Limit < 0 || g.Limit > MaxSlots {
		return bad("Gateway.Limit", g.Limit, "it must be 0 (the default, 200) to 100000")
	}
	if c := g.Compartments; c != nil {
		switch {
		case c.Orders < 0 || c.Menu < 0 || c.Courier < 0 || c.Orders > MaxSlots || c.Menu > MaxSlots || c.Courier > MaxSlots:
			return bad("Gateway.Compartments", fmt.Sprintf("%d/%d/%d slots", c.Orders, c.Menu, c.Courier), "slots must be 0 (unguarded) to 100000")
		case long(c.Wait):
			return bad("Gateway.Compartments.Wait", c.Wait, "it must be 0 (no wait) to 1h")
		}
	}
	if err := g.OrdersBreaker.check("Gateway.OrdersBreaker"); err != nil {
		return err
	}
	if h := g.Hedge; h != nil {
		switch {
		case h.Window < 1 || h.Window > MaxWindow:
			return bad("Gateway.Hedge.Window", h.Window, "it must be 1 to 100000")
		case !(h.Percentile > 0 && h.Percentile < 1):
			return bad("Gateway.Hedge.Percentile", h.Percentile, "it must be between 0 and 1 (0.95: the p95)")
		case h.FirstDelay <= 0 || h.FirstDelay > MaxDuration:
			return bad("Gateway.Hedge.FirstDelay", h.FirstDelay, "it must be positive, at most 1h")
		case !within(h.Ratio, MinRatio, 1):
			return bad("Gateway.Hedge.Ratio", h.Ratio, "it must be 0.000001 to 1 (a hedge budget that earns nothing never hedges: set Hedge to nil for that)")
		case h.Burst < 1 || h.Burst > MaxTokens:
			return bad("Gateway.Hedge.Burst", h.Burst, "it must be 1 to 100000")
		}
	}
	return nil
}

// within reports whether lo <= x <= hi; false for NaN.
func within(x, lo, hi float64) bool { return x >= lo && x <= hi }

func (b *Breaker) check(field string) error {
	if b == nil {
		return nil
	}
	switch {
	case b.Window < 1 || b.Window > MaxWindow:
		return fmt.Errorf("%w: %s.Window is %d; it must be 1 to 100000", ErrInvalid, field, b.Window)
	case !within(b.FailureRate, 0, 1):
		return fmt.Errorf("%w: %s.FailureRate is %v; it must be 0 (half) to 1", ErrInvalid, field, b.FailureRate)
	case b.MinCalls < 0 || b.OpenFor < 0 || b.HalfOpenCalls < 0:
		return fmt.Errorf("%w: %s has a negative setting (%+v)", ErrInvalid, field, *b)
	case b.MinCalls > MaxWindow || b.HalfOpenCalls > MaxWindow || b.OpenFor > MaxDuration:
		return fmt.Errorf("%w: %s has a setting beyond its bound (%+v): MinCalls and HalfOpenCalls at most 100000, OpenFor at most 1h", ErrInvalid, field, *b)
	}
	return nil
}
