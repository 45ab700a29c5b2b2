// Package payment is the payment service of the food-delivery system: it
// charges cards and keeps a ledger of the charges it executed, which tests
// read to count double charges.
//
// By default the service does not act on fooddelivery.HeaderIdempotencyKey:
// every accepted POST /charges executes a new charge. It does check the
// key's form (fooddelivery.CheckIdempotencyKey) and refuses a malformed
// one, so that no client is misled into thinking a key protects it.
// Recognising repeated requests is the subject of lab 08, which plugs a
// KeyStore into Deps.Keys.
package payment

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/internal/recent"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

// DeclinedCard is the card token the service always declines (HTTP 402,
// code "card_declined").
const DeclinedCard = "tok_declined"

// testCards are the tokens the service charges; see TestCards.
var testCards = []string{"tok_visa", "tok_mastercard"}

// TestCards returns the card tokens the service charges, in a new slice:
// "tok_visa" and "tok_mastercard", test tokens in the style of Stripe's
// test mode. DeclinedCard is known too and always declined; any other
// token is refused with HTTP 402, code "card_unknown", and nothing is
// charged. The gateway's schema lists the same tokens in the description
// of PlaceOrderInput.card, and a test keeps the two in step.
func TestCards() []string { return append([]string(nil), testCards...) }

// unknownCardMessage is the message of a 402 "card_unknown" for card.
func unknownCardMessage(card string) string {
	return "card " + fooddelivery.Quote(card) + " is not a card this service knows; the test cards are " +
		strings.Join(testCards, " and ") + " (charged) and " + DeclinedCard + " (always declined); nothing was charged"
}

// Deps is everything the payment service needs.
type Deps struct {
	// Instance names the instance and carries its metrics, concurrency
	// limit and fault hook; every route is wrapped by Instance.Route.
	// Required.
	Instance *fooddelivery.Instance
	// Ledger records the charges the service executes. Required.
	Ledger *Ledger
	// Keys (lab 08) makes POST /charges idempotent: every request is
	// checked against this store by its fooddelivery.HeaderIdempotencyKey
	// and replayed, refused (400, 409, 422) or run (see KeyStore). nil
	// means the key is not acted on (its form is still checked) and every
	// accepted request charges.
	Keys KeyStore
	// Processor (lab 08) models the card processor that POST /charges
	// calls after the idempotency check: latency, outages, a call count.
	// nil means an instant processor that never fails.
	Processor *Processor
	// Callers, when set, is the ground truth of when each request's
	// original caller gave up (by fooddelivery.HeaderRequestID): a charge
	// executed after that moment counts in WorkAfterCallerLeft even when
	// this request's own context is still live (a caller that left
	// without hanging up). nil means the request's context tells.
	Callers *fooddelivery.Callers
}

// New returns the payment service's handler:
//
//	POST /charges            ChargeRequest -> 201 Charge
//	                         400 "bad_request": malformed JSON, missing orderId or card, amountCents <= 0
//	                         402 "card_declined": card DeclinedCard (nothing is charged)
//	                         402 "card_unknown": a card that is neither in TestCards nor DeclinedCard
//	                             (nothing is charged)
//	                         400 "idempotency_key_invalid": more than one Idempotency-Key header, or a key
//	                             that breaks fooddelivery.CheckIdempotencyKey (with or without Deps.Keys)
//	                         with Deps.Keys: 400 "idempotency_key_missing", 409 "idempotency_key_in_use",
//	                         422 "idempotency_key_reused", or a stored response replayed with
//	                         HeaderReplayed (see KeyStore); with Deps.Processor: 503 "processor_unavailable"
//	GET  /charges?orderId=   200 []Charge executed for that order (every charge when orderId is absent)
//
// New panics if d.Instance or d.Ledger is nil (a wiring error).
func New(d Deps) http.Handler {
	if d.Instance == nil || d.Ledger == nil {
		panic("payment: New needs Deps.Instance and Deps.Ledger")
	}
	r := chi.NewRouter()
	routes(r, d)
	return r
}

func routes(r chi.Router, d Deps) {
	in := d.Instance
	charge := d.Processor.wrap(handleCharge(d.Ledger, d.Keys != nil, d.Callers, in.Metrics.Route(in.Name, "POST /charges")))
	if d.Keys != nil {
		charge = idempotent(d.Keys, charge)
	}
	charge = checkKey(charge)
	r.Method("POST", "/charges", in.Route("POST /charges", charge))
	r.Method("GET", "/charges", in.Route("GET /charges", handleListCharges(d.Ledger)))
}

func handleCharge(l *Ledger, keyed bool, callers *fooddelivery.Callers, stats *metrics.RouteStats) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req fooddelivery.ChargeRequest
		if err := fooddelivery.ReadJSON(w, r, &req); err != nil {
			fooddelivery.WriteError(w, http.StatusBadRequest, "bad_request", "body is not a JSON charge request: "+err.Error())
			return
		}
		switch {
		case req.OrderID == "":
			fooddelivery.WriteError(w, http.StatusBadRequest, "bad_request", "orderId is required")
			return
		case req.Card == "":
			fooddelivery.WriteError(w, http.StatusBadRequest, "bad_request", "card is required")
			return
		case req.AmountCents <= 0:
			fooddelivery.WriteError(w, http.StatusBadRequest, "bad_request",
				"amountCents must be positive, got "+strconv.Itoa(req.AmountCents))
			return
		case req.Card == DeclinedCard:
			fooddelivery.WriteError(w, http.StatusPaymentRequired, "card_declined", "the card was declined; nothing was charged")
			return
		case !slices.Contains(testCards, req.Card):
			fooddelivery.WriteError(w, http.StatusPaymentRequired, "card_unknown", unknownCardMessage(req.Card))
			return
		}
		gone, left := callers.Gone(r.Header.Get(fooddelivery.HeaderRequestID))
		if r.Context().Err() != nil || (left && !gone.After(time.Now())) {
			// The caller has already given up: this charge is work nobody
			// waits for (and money nobody knows was taken).
			stats.WorkAfterCallerLeft.Add(1)
		}
		key := ""
		if keyed {
			key = r.Header.Get(fooddelivery.HeaderIdempotencyKey)
		}
		if l.Journal != nil && key != "" {
			// The key store, in memory, may have started empty after a
			// restart: the journal remembers what the key already charged.
			switch c, ok, err := l.Journal.Replay(key, req); {
			case errors.Is(err, ErrKeyMismatch):
				fooddelivery.WriteError(w, http.StatusUnprocessableEntity, "idempotency_key_reused",
					"this idempotency key was used for a different charge")
				return
			case err != nil:
				fooddelivery.WriteError(w, http.StatusInternalServerError, "ledger_unavailable",
					"the payment ledger could not be read, so nothing was charged; try again with the same key")
				return
			case ok:
				w.Header().Set(HeaderReplayed, "true")
				tracing.Event(r.Context(), tracing.EventReplay)
				fooddelivery.WriteJSON(w, http.StatusCreated, c)
				return
			}
		}
		c, err := l.record(req, key)
		if err != nil {
			fooddelivery.WriteError(w, http.StatusInternalServerError, "ledger_write_failed",
				"the charge could not be stored, so nothing was charged; try again with the same key")
			return
		}
		fooddelivery.WriteJSON(w, http.StatusCreated, c)
	})
}

func handleListCharges(l *Ledger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		orderID := r.URL.Query().Get("orderId")
		charges := l.Charges()
		out := make([]fooddelivery.Charge, 0, len(charges))
		for _, c := range charges {
			if orderID == "" || c.OrderID == orderID {
				out = append(out, c)
			}
		}
		fooddelivery.WriteJSON(w, http.StatusOK, out)
	})
}

// Ledger is the payment service's record of executed charges, in the order
// they were executed, in memory (a restart loses it, unless Journal keeps
// it on disk): the Max most recent
// charges, and counts of them all. It is safe for concurrent use. The
// zero value is ready to use.
type Ledger struct {
	// Max is how many charges the ledger keeps for Charges and ChargesFor;
	// 0 means DefaultMaxCharges. Set it before the first charge. Total,
	// TotalCents and OrdersChargedMoreThanOnce count every charge.
	Max int
	// Journal, when set, makes the ledger durable: each charge is
	// committed to it, with its idempotency key, before the charge is
	// answered; a charge it cannot store is not made. Load it into the
	// ledger (Journal.Load) before the first charge. nil means memory only.
	Journal *Journal

	mu      sync.Mutex
	charges *recent.List[fooddelivery.Charge]
	seq     int // charges executed
	cents   int // their sum
	// perOrder counts the kept charges of each order; twice counts the
	// orders whose count reached 2, so that OrdersChargedMoreThanOnce is
	// cheap.
	perOrder map[string]int
	twice    int
}

// DefaultMaxCharges is how many charges a Ledger keeps by default: the
// 20,000 most recent. A double charge is seen when both charges are among
// them (a retry comes seconds after the first, not 20,000 charges later).
const DefaultMaxCharges = 20_000

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{} }

// kept returns l.charges, made on first use.
func (l *Ledger) kept() *recent.List[fooddelivery.Charge] {
	if l.charges == nil {
		max := l.Max
		if max <= 0 {
			max = DefaultMaxCharges
		}
		l.charges = recent.NewList[fooddelivery.Charge](max)
		l.perOrder = map[string]int{}
	}
	return l.charges
}

// record executes a charge: it appends a succeeded Charge with a fresh id
// ("ch_1", "ch_2", ...) and returns it. With a Journal the charge, and key
// with it ("" for none), are committed first; when that fails nothing is
// charged and the error is returned. When the ledger is full the oldest
// charge is dropped.
func (l *Ledger) record(req fooddelivery.ChargeRequest, key string) (fooddelivery.Charge, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := fooddelivery.Charge{
		ID:          "ch_" + strconv.Itoa(l.seq+1),
		OrderID:     req.OrderID,
		AmountCents: req.AmountCents,
		Status:      "succeeded",
	}
	if l.Journal != nil {
		if err := l.Journal.commit(l.seq+1, c, key, req); err != nil {
			return fooddelivery.Charge{}, err
		}
	}
	l.add(c, l.seq+1)
	return c, nil
}

// restore adds c, charge number seq, read back from a Journal.
func (l *Ledger) restore(c fooddelivery.Charge, seq int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.add(c, seq)
}

// add appends c as charge number seq. The caller holds l.mu.
func (l *Ledger) add(c fooddelivery.Charge, seq int) {
	l.seq = max(l.seq, seq)
	l.cents += c.AmountCents
	if old, dropped := l.kept().Add(c); dropped {
		if l.perOrder[old.OrderID]--; l.perOrder[old.OrderID] <= 0 {
			delete(l.perOrder, old.OrderID)
		}
	}
	l.perOrder[c.OrderID]++
	if l.perOrder[c.OrderID] == 2 {
		l.twice++
	}
}

// OrdersChargedMoreThanOnce returns how many orders were charged two or
// more times: each counts once, however many extra charges it has. It
// takes constant time, so a metrics reader may call it on every scrape
// (metrics.Metrics.ReportChargedTwice).
func (l *Ledger) OrdersChargedMoreThanOnce() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.twice
}

// ChargesFor returns how many of the kept charges were executed for
// orderID (0 for an unknown order; more than 1 is a double charge).
func (l *Ledger) ChargesFor(orderID string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.kept()
	return l.perOrder[orderID]
}

// Total returns how many charges were executed, for all orders together.
func (l *Ledger) Total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// TotalCents returns the sum of the amounts charged, in cents.
func (l *Ledger) TotalCents() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cents
}

// Charges returns a copy of the kept charges (the Max most recent),
// oldest first (empty, not nil, when there are none).
func (l *Ledger) Charges() []fooddelivery.Charge {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.kept().All()
}
