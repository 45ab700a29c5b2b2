// Package order is the order service of the food-delivery system: it
// prices an order from the menu service, charges the card through the
// payment service, asks the courier service for a courier, and stores the
// order. Its dependencies are the integration points the labs protect.
package order

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

// CodePaymentUnconfirmed is the error code of POST /orders (HTTP 502) when
// the order service sent the charge to payment and got no answer back (the
// connection reset or closed before the response): payment may have
// charged the card, so nobody can say "not charged".
const CodePaymentUnconfirmed = "payment_unconfirmed"

// CodeOrderExpired is the error code of GET /orders/{id} (HTTP 404) for
// an order of this run that the store no longer keeps (Store.Max).
const CodeOrderExpired = "order_expired"

// MaxQuantity is the largest quantity of one dish an order may ask for,
// on one line or summed over the lines that name the dish.
const MaxQuantity = 50

// MaxLines is the most lines an order may have, as sent: 50. A real
// basket has a handful of dishes and even a large office order stays far
// below; the cap bounds the work one request can ask of the service
// (merging, pricing, storing) and, with MaxQuantity, the size of an order.
const MaxLines = 50

// Deps is everything the order service needs.
type Deps struct {
	// Instance names the instance and carries its metrics, concurrency
	// limit and fault hook; every route is wrapped by Instance.Route.
	// Required.
	Instance *fooddelivery.Instance
	// Store holds the orders. Required.
	Store *Store
	// Menu prices orders (usually a *menu.Client). Required.
	Menu fooddelivery.MenuReader
	// Payment charges cards (usually a *payment.Client). Required.
	Payment fooddelivery.Payer
	// Courier assigns couriers (usually a *courier.Client). nil means no
	// courier is ever assigned; a failed assignment does not fail the
	// order either.
	Courier fooddelivery.CourierAssigner
	// Callers, when set, is the ground truth for "work after the caller
	// left" (lab 02): POST /orders looks its request id up there instead
	// of asking its own context, and also counts, in WastedWork, the part
	// of a dependency call that was still running when the caller left.
	// nil means the request's context tells (a call started after it was
	// done is wasted).
	Callers *fooddelivery.Callers
}

// New returns the order service's handler:
//
//	POST /orders          PlaceOrderInput, user in fooddelivery.HeaderUser -> 201 Order (status PLACED)
//	                      401 "unauthenticated": no user
//	                      400 "bad_request": malformed JSON, no restaurantId or card, no items,
//	                          more than MaxLines lines, a line's quantity outside 1..MaxQuantity,
//	                          more than MaxQuantity of one dish over all its lines
//	                      422 "invalid_order": unknown restaurant or dish (nothing is charged)
//	                      402 "payment_declined": payment refused the card (declined, or a card it
//	                          does not know); the message carries payment's code and message
//	                      504 "<dep>_timeout", 502 "<dep>_unavailable", 503 "<dep>_overloaded"
//	                          (with fooddelivery.HeaderDontRetry), for dep "menu" or "payment":
//	                          see fooddelivery.WriteDependencyError
//	                      502 CodePaymentUnconfirmed: the charge request was sent and no answer came
//	                          back (a reset, an EOF): the card may have been charged
//	GET  /orders/{id}     200 Order; 404 "order_not_found"; 404 CodeOrderExpired for an order of
//	                          this run the store no longer keeps (Store.Max, DefaultMaxOrders)
//	GET  /reports/daily   ?day=YYYY-MM-DD (UTC; default today) -> 200 DailyReport; 400 "bad_request"
//
// Lines that name the same dish are merged into one line with the summed
// quantity, placed where the dish first appears: the order that is priced,
// charged and stored has one line per dish.
//
// POST /orders calls its dependencies with the request's context, so a
// caller that gives up cancels them. An order whose payment failed is
// stored with status PAYMENT_FAILED. A failed courier assignment leaves the
// order placed without a courier. New panics if a required dependency is
// nil (a wiring error).
func New(d Deps) http.Handler {
	if d.Instance == nil || d.Store == nil || d.Menu == nil || d.Payment == nil {
		panic("order: New needs Deps.Instance, Deps.Store, Deps.Menu and Deps.Payment")
	}
	r := chi.NewRouter()
	routes(r, d)
	return r
}

func routes(r chi.Router, d Deps) {
	in := d.Instance
	r.Method("POST", "/orders", in.Route("POST /orders", handlePlaceOrder(d, in.Metrics.Route(in.Name, "POST /orders"))))
	r.Method("GET", "/orders/{id}", in.Route("GET /orders/{id}", handleGetOrder(d.Store)))
	r.Method("GET", "/reports/daily", in.Route("GET /reports/daily", handleDailyReport(d.Store)))
}

func handlePlaceOrder(d Deps, stats *metrics.RouteStats) http.Handler {
	// downstream runs one call to a dependency; a call started after the
	// caller gave up is counted as work nobody waits for.
	downstream := func(r *http.Request, call func()) {
		if d.Callers != nil {
			start := time.Now()
			call()
			end := time.Now()
			gone, left := d.Callers.Gone(r.Header.Get(fooddelivery.HeaderRequestID))
			if !left || !gone.Before(end) {
				return
			}
			if !gone.After(start) {
				stats.WorkAfterCallerLeft.Add(1)
			}
			stats.WastedWork.Add(int64(end.Sub(later(start, gone))))
			return
		}
		ctx := r.Context()
		if ctx.Err() == nil {
			call()
			return
		}
		start := time.Now()
		call()
		stats.WorkAfterCallerLeft.Add(1)
		stats.WastedWork.Add(int64(time.Since(start)))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		user := r.Header.Get(fooddelivery.HeaderUser)
		if user == "" {
			fooddelivery.WriteError(w, http.StatusUnauthorized, "unauthenticated", "no user in "+fooddelivery.HeaderUser)
			return
		}
		var in fooddelivery.PlaceOrderInput
		if err := fooddelivery.ReadJSON(w, r, &in); err != nil {
			fooddelivery.WriteError(w, http.StatusBadRequest, "bad_request", "body is not a JSON order: "+err.Error())
			return
		}
		items, why := validate(in)
		if why != "" {
			fooddelivery.WriteError(w, http.StatusBadRequest, "bad_request", why)
			return
		}
		in.Items = items

		var menu fooddelivery.Menu
		var err error
		downstream(r, func() { menu, err = d.Menu.Menu(ctx, in.RestaurantID) })
		if errors.Is(err, fooddelivery.ErrNotFound) {
			fooddelivery.WriteError(w, http.StatusUnprocessableEntity, "invalid_order", "no restaurant "+fooddelivery.Quote(in.RestaurantID))
			return
		}
		if err != nil {
			fooddelivery.WriteDependencyError(w, r, "menu", err)
			return
		}
		total, why := price(menu, in.Items)
		if why != "" {
			fooddelivery.WriteError(w, http.StatusUnprocessableEntity, "invalid_order", why)
			return
		}

		o := fooddelivery.Order{
			ID:           d.Store.NewID(),
			User:         user,
			RestaurantID: in.RestaurantID,
			Items:        in.Items,
			TotalCents:   total,
		}
		var charge fooddelivery.Charge
		downstream(r, func() {
			charge, err = d.Payment.Charge(ctx, fooddelivery.ChargeRequest{OrderID: o.ID, AmountCents: total, Card: in.Card})
		})
		if err != nil {
			o.Status = fooddelivery.OrderPaymentKO
			if serr := d.Store.Put(o); serr != nil {
				fooddelivery.WriteError(w, http.StatusInternalServerError, "order_store_failed",
					"the payment failed and order "+o.ID+" could not be recorded either; nothing to retry with this id")
				return
			}
			if errors.Is(err, fooddelivery.ErrRejected) {
				why := "declined"
				var ce *fooddelivery.CallError
				if errors.As(err, &ce) && ce.Message != "" {
					why = ce.Code + ": " + ce.Message // the payment service's own words, without the call chain
				}
				fooddelivery.WriteError(w, http.StatusPaymentRequired, "payment_declined",
					"the payment was refused ("+why+"), so order "+o.ID+" is recorded as "+string(fooddelivery.OrderPaymentKO))
				return
			}
			var ce *fooddelivery.CallError
			if errors.Is(err, fooddelivery.ErrUnavailable) && errors.As(err, &ce) && ce.Status == 0 &&
				!fooddelivery.Unsent(err) && r.Context().Err() == nil {
				fooddelivery.WriteError(w, http.StatusBadGateway, CodePaymentUnconfirmed,
					"the charge request reached payment and no answer came back: the card may have been charged")
				return
			}
			fooddelivery.WriteDependencyError(w, r, "payment", err)
			return
		}
		o.ChargeID = charge.ID

		if d.Courier != nil {
			var a fooddelivery.Assignment
			downstream(r, func() { a, err = d.Courier.Assign(ctx, o.ID, o.RestaurantID) })
			if err == nil {
				o.CourierID = a.CourierID
			}
		}
		o.Status = fooddelivery.OrderPlaced
		if err := d.Store.Put(o); err != nil {
			fooddelivery.WriteError(w, http.StatusInternalServerError, "order_store_failed",
				"order "+o.ID+" was charged ("+o.ChargeID+") but could not be stored, so it is not confirmed; contact support with the order id")
			return
		}
		fooddelivery.WriteJSON(w, http.StatusCreated, o)
	})
}

// validate returns in's items with the lines of each dish merged, or why
// in is malformed.
func validate(in fooddelivery.PlaceOrderInput) ([]fooddelivery.OrderItem, string) {
	switch {
	case in.RestaurantID == "":
		return nil, "restaurantId is required"
	case in.Card == "":
		return nil, "card is required"
	case len(in.Items) == 0:
		return nil, "an order needs at least one item"
	case len(in.Items) > MaxLines:
		return nil, "an order may have at most " + strconv.Itoa(MaxLines) + " lines, got " + strconv.Itoa(len(in.Items)) +
			"; put each dish on one line with its total quantity"
	}
	merged := make([]fooddelivery.OrderItem, 0, len(in.Items))
	at := make(map[string]int, len(in.Items)) // dish id -> index in merged
	lines := make(map[string]int, len(in.Items))
	for _, it := range in.Items {
		if it.Quantity < 1 || it.Quantity > MaxQuantity {
			return nil, "quantity of " + fooddelivery.Quote(it.DishID) + " must be between 1 and " +
				strconv.Itoa(MaxQuantity) + ", got " + strconv.Itoa(it.Quantity)
		}
		lines[it.DishID]++
		if i, ok := at[it.DishID]; ok {
			merged[i].Quantity += it.Quantity
			continue
		}
		at[it.DishID] = len(merged)
		merged = append(merged, it)
	}
	for _, it := range merged {
		if it.Quantity > MaxQuantity {
			return nil, "at most " + strconv.Itoa(MaxQuantity) + " of one dish per order: " + fooddelivery.Quote(it.DishID) +
				" is ordered " + strconv.Itoa(it.Quantity) + " times over " + strconv.Itoa(lines[it.DishID]) + " lines"
		}
	}
	return merged, ""
}

// price returns the total of items in cents from menu, or why an item
// cannot be priced.
func price(menu fooddelivery.Menu, items []fooddelivery.OrderItem) (int, string) {
	prices := make(map[string]int, len(menu.Dishes))
	for _, d := range menu.Dishes {
		prices[d.ID] = d.PriceCents
	}
	total := 0
	for _, it := range items {
		p, ok := prices[it.DishID]
		if !ok {
			return 0, "restaurant " + fooddelivery.Quote(menu.RestaurantID) + " has no dish " + fooddelivery.Quote(it.DishID)
		}
		total += p * it.Quantity
	}
	return total, ""
}

func handleGetOrder(s *Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		o, ok := s.Get(id)
		if !ok && s.Expired(id) {
			fooddelivery.WriteError(w, http.StatusNotFound, CodeOrderExpired, fmt.Sprintf(
				"order %s is no longer kept: the order service keeps its %d most recent orders, in memory", fooddelivery.Quote(id), s.Limit()))
			return
		}
		if !ok {
			fooddelivery.WriteError(w, http.StatusNotFound, "order_not_found", "no order "+fooddelivery.Quote(id))
			return
		}
		fooddelivery.WriteJSON(w, http.StatusOK, o)
	})
}

func handleDailyReport(s *Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		day := time.Now()
		if q := r.URL.Query().Get("day"); q != "" {
			var err error
			if day, err = time.Parse(time.DateOnly, q); err != nil {
				fooddelivery.WriteError(w, http.StatusBadRequest, "bad_request", "day must be YYYY-MM-DD, got "+fooddelivery.Quote(q))
				return
			}
		}
		fooddelivery.WriteJSON(w, http.StatusOK, s.Report(day))
	})
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
