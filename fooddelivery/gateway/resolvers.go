package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"strconv"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
)

// resolver computes one field of an object: parent is the Go value of the
// object (nil for the root), args the field's coerced arguments. It returns
// nil for null, a string, int or bool for a scalar, a slice for a list, or
// the Go value the object's own resolvers expect.
type resolver func(ctx context.Context, x *request, parent any, args map[string]any) (any, error)

// remote names the fields whose resolver calls another service: siblings
// among them run concurrently.
var remote = map[string]bool{
	"Query.restaurants":    true,
	"Query.restaurant":     true,
	"Query.order":          true,
	"Home.restaurants":     true,
	"Home.recommendations": true,
	"Restaurant.menu":      true,
	"Restaurant.menuStale": true,
	"Restaurant.eta":       true,
}

// restaurant is a Restaurant object: the menu is read at most once per
// restaurant and request, whether menu, menuStale or both are asked for,
// and so is the ETA, however many aliases ask for it.
type restaurant struct {
	fooddelivery.Restaurant
	menu func() (fooddelivery.Menu, error)
	eta  func() (fooddelivery.ETA, error)
}

// home is the Home object; its fields do the work.
type home struct{}

var resolvers map[string]resolver

func init() {
	resolvers = map[string]resolver{
		"Query.restaurants": func(_ context.Context, x *request, _ any, _ map[string]any) (any, error) {
			return x.restaurantsValue()
		},
		"Query.restaurant": func(_ context.Context, x *request, _ any, args map[string]any) (any, error) {
			id := str(args["id"])
			list, err := x.restaurantList()
			if list == nil || (err != nil && !fromFallback(err)) {
				return nil, err
			}
			for _, r := range list {
				if r.ID == id {
					return r, err // err: a fallback's list (lab 07)
				}
			}
			return nil, &codedError{code: CodeNotFound, msg: "there is no restaurant " + fooddelivery.Quote(id), err: fooddelivery.ErrNotFound}
		},
		"Query.home": func(context.Context, *request, any, map[string]any) (any, error) {
			return home{}, nil
		},
		"Query.order": func(ctx context.Context, x *request, _ any, args map[string]any) (any, error) {
			user, err := x.user()
			if err != nil {
				return nil, err
			}
			if x.s.d.Orders == nil {
				return nil, notConfigured("order service")
			}
			id := str(args["id"])
			o, err := x.s.d.Orders.Order(ctx, id)
			if err != nil {
				return nil, err
			}
			if o.User != user { // do not tell strangers the order exists
				return nil, &codedError{code: CodeNotFound, msg: "you have no order " + fooddelivery.Quote(id), err: fooddelivery.ErrNotFound}
			}
			return o, nil
		},

		"Mutation.placeOrder": func(ctx context.Context, x *request, _ any, args map[string]any) (any, error) {
			user, err := x.user()
			if err != nil {
				return nil, err
			}
			if x.s.d.Orders == nil {
				return nil, notConfigured("order service")
			}
			in, _ := args["input"].(map[string]any)
			po := fooddelivery.PlaceOrderInput{RestaurantID: str(in["restaurantId"]), Card: str(in["card"])}
			for _, it := range list(in["items"]) {
				m, _ := it.(map[string]any)
				qty, ok := integer(m["quantity"])
				if !ok {
					return nil, outOfRange("quantity", m["quantity"])
				}
				po.Items = append(po.Items, fooddelivery.OrderItem{DishID: str(m["dishId"]), Quantity: qty})
			}
			o, err := x.s.d.Orders.PlaceOrder(ctx, user, po)
			if err != nil { // never an order beside an error, not even a fallback's
				return nil, err
			}
			return o, nil
		},
		"Mutation.submitReview": func(ctx context.Context, x *request, _ any, args map[string]any) (any, error) {
			user, err := x.user()
			if err != nil {
				return nil, err
			}
			in, _ := args["input"].(map[string]any)
			stars, ok := integer(in["stars"])
			if !ok {
				return nil, outOfRange("stars", in["stars"])
			}
			rv := fooddelivery.Review{RestaurantID: str(in["restaurantId"]), User: user, Stars: stars, Text: str(in["text"])}
			if rv.Stars < 1 || rv.Stars > 5 {
				return nil, &codedError{code: CodeBadRequest, msg: fmt.Sprintf("stars must be 1 to 5, got %d", rv.Stars)}
			}
			if x.s.d.Reviews == nil {
				return nil, notConfigured("review store")
			}
			stored, err := x.s.d.Reviews.SubmitReview(ctx, rv)
			if err != nil && !fromFallback(err) {
				return nil, err
			}
			return stored, err // err: a fallback accepted it (lab 07)
		},

		"Home.restaurants": func(_ context.Context, x *request, _ any, _ map[string]any) (any, error) {
			return x.restaurantsValue()
		},
		"Home.recommendations": func(ctx context.Context, x *request, _ any, _ map[string]any) (any, error) {
			if x.s.d.Recs == nil {
				return nil, notConfigured("recommender")
			}
			if !x.authSent { // anonymous visitors get what is popular
				return nonNilDishes(x.s.d.Recs.Popular(ctx))
			}
			user, err := x.user()
			if err != nil {
				return nil, err
			}
			return nonNilDishes(x.s.d.Recs.Recommendations(ctx, user))
		},

		"Restaurant.id":      field(func(r *restaurant) any { return r.ID }),
		"Restaurant.name":    field(func(r *restaurant) any { return r.Name }),
		"Restaurant.cuisine": field(func(r *restaurant) any { return r.Cuisine }),
		"Restaurant.menu": func(_ context.Context, _ *request, parent any, _ map[string]any) (any, error) {
			m, err := parent.(*restaurant).menu()
			if err != nil && (m.Dishes == nil || !fromFallback(err)) {
				return nil, err
			}
			if m.Dishes == nil {
				return []fooddelivery.Dish{}, nil
			}
			return m.Dishes, err // err: a fallback's menu (lab 07)
		},
		"Restaurant.menuStale": func(_ context.Context, _ *request, parent any, _ map[string]any) (any, error) {
			m, err := parent.(*restaurant).menu()
			// A menu that could not be read is null with its own error on
			// Restaurant.menu; reporting it twice would not help anyone.
			return m.Stale && (err == nil || fromFallback(err)), nil
		},
		"Restaurant.eta": func(_ context.Context, x *request, parent any, _ map[string]any) (any, error) {
			if x.s.d.ETA == nil {
				return nil, notConfigured("courier service")
			}
			eta, err := parent.(*restaurant).eta()
			if err != nil && !fromFallback(err) {
				return nil, err
			}
			return FormatETA(eta), err // err: a fallback's estimate (lab 07)
		},

		"Dish.id":         field(func(d fooddelivery.Dish) any { return d.ID }),
		"Dish.name":       field(func(d fooddelivery.Dish) any { return d.Name }),
		"Dish.priceCents": field(func(d fooddelivery.Dish) any { return d.PriceCents }),

		"Order.id":           field(func(o fooddelivery.Order) any { return o.ID }),
		"Order.status":       field(func(o fooddelivery.Order) any { return o.Status }),
		"Order.totalCents":   field(func(o fooddelivery.Order) any { return o.TotalCents }),
		"Order.restaurantId": field(func(o fooddelivery.Order) any { return o.RestaurantID }),
		"Order.courierId": field(func(o fooddelivery.Order) any {
			if o.CourierID == "" {
				return nil
			}
			return o.CourierID
		}),
		"Order.items": field(func(o fooddelivery.Order) any {
			if o.Items == nil {
				return []fooddelivery.OrderItem{}
			}
			return o.Items
		}),
		"OrderLine.dishId":   field(func(it fooddelivery.OrderItem) any { return it.DishID }),
		"OrderLine.quantity": field(func(it fooddelivery.OrderItem) any { return it.Quantity }),

		"Review.id":           field(func(r fooddelivery.Review) any { return r.ID }),
		"Review.restaurantId": field(func(r fooddelivery.Review) any { return r.RestaurantID }),
		"Review.user":         field(func(r fooddelivery.Review) any { return r.User }),
		"Review.stars":        field(func(r fooddelivery.Review) any { return r.Stars }),
		"Review.text":         field(func(r fooddelivery.Review) any { return r.Text }),
	}
	maps.Copy(resolvers, introspectionResolvers())
}

// field makes a resolver that reads a value from a parent of type T.
func field[T any](get func(T) any) resolver {
	return func(_ context.Context, _ *request, parent any, _ map[string]any) (any, error) {
		return get(parent.(T)), nil
	}
}

// readRestaurants reads the restaurant list and wraps each entry so its
// menu is read lazily, once. It runs at most once per request (through
// x.restaurantList), however many fields need the list.
func (x *request) readRestaurants() ([]*restaurant, error) {
	ctx := x.ctx
	if x.s.d.Menu == nil {
		return nil, notConfigured("menu service")
	}
	list, err := x.s.d.Menu.Restaurants(ctx)
	if err != nil && (list == nil || !fromFallback(err)) {
		return nil, err
	}
	out := make([]*restaurant, len(list))
	for i, r := range list {
		out[i] = &restaurant{Restaurant: r,
			menu: lazy(func() (fooddelivery.Menu, error) { return x.s.d.Menu.Menu(ctx, r.ID) }),
			eta:  lazy(func() (fooddelivery.ETA, error) { return x.s.d.ETA.ETA(ctx, r.ID) }),
		}
	}
	return out, err // err: nil, or a fallback answered (lab 07)
}

// errMissingToken is the error for a field that needs a user when the
// client sent no Authorization header.
var errMissingToken = &codedError{code: CodeUnauthenticated, msg: `sign in first: send the header "Authorization: Bearer <token>"`}

// authorize checks the request's bearer token with Deps.Auth. It is called
// at most once per request (through x.user). Failing to ask is a denial.
func (x *request) authorize(token string, tokenErr error) (string, error) {
	switch {
	case tokenErr != nil:
		return "", tokenErr
	case token == "":
		return "", errMissingToken
	case x.s.d.Auth == nil:
		return "", &codedError{code: CodeAuthUnavailable, msg: "sign-in cannot be checked: the gateway has no auth service configured", err: fooddelivery.ErrUnauthorized}
	}
	user, err := x.s.d.Auth.Authorize(x.ctx, token)
	if err != nil {
		return "", authFailure(err)
	}
	if user == "" {
		return "", &codedError{code: CodeAuthUnavailable, msg: "the auth service accepted the token but named no user, so nothing was done", err: fooddelivery.ErrUnauthorized}
	}
	return user, nil
}

func notConfigured(what string) error {
	return &codedError{code: CodeInternal, msg: "the gateway has no " + what + " configured"}
}

// nonNilDishes turns a dependency's answer into a field value: an empty
// list for nil, null on error, except that a fallback's dishes are served
// beside its error (lab 07).
func nonNilDishes(d []fooddelivery.Dish, err error) (any, error) {
	if err != nil && (d == nil || !fromFallback(err)) {
		return nil, err
	}
	if d == nil {
		d = []fooddelivery.Dish{}
	}
	return d, err
}

// restaurantsValue is the value of a restaurant list field: null on error,
// except that a fallback's list is served beside its error (lab 07).
func (x *request) restaurantsValue() (any, error) {
	list, err := x.restaurantList()
	if list == nil || (err != nil && !fromFallback(err)) {
		return nil, err
	}
	return list, err
}

// FormatETA renders a delivery estimate for people: "20-35 min", rounded
// to whole minutes, or "30-45 min (estimate)" when e.Estimated says it is a
// default rather than a live estimate.
func FormatETA(e fooddelivery.ETA) string {
	s := fmt.Sprintf("%d-%d min", minutes(e.Min), minutes(e.Max))
	if e.Estimated {
		s += " (estimate)"
	}
	return s
}

func minutes(d time.Duration) int64 { return int64(math.Round(d.Minutes())) }

// str reads an ID or String argument as coerced by the validator: a
// string, or an integer for an ID given as a JSON number.
func str(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case json.Number:
		return v.String()
	default:
		return fmt.Sprint(v)
	}
}

// list reads a list argument as coerced by the validator: a []any, a typed
// slice (a single value given for a list variable is wrapped in a slice of
// its own type), or a single value given where a list is expected, which
// the spec's input coercion turns into a list of one.
func list(v any) []any {
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		return v
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		return []any{v}
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out
}

// integer reads an Int argument: an int64 from a literal, a float64 or a
// json.Number from JSON variables. A string is refused, even "3": the
// specification's input coercion of Int accepts numbers only.
func integer(v any) (int, bool) {
	var n int64
	switch v := v.(type) {
	case int64:
		n = v
	case int:
		n = int64(v)
	case float64:
		if v != math.Trunc(v) || v < math.MinInt32 || v > math.MaxInt32 {
			return 0, false
		}
		n = int64(v)
	case json.Number:
		var err error
		if n, err = v.Int64(); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return 0, false
	}
	return int(n), true
}

// outOfRange is the field error for a value that is not a GraphQL Int:
// variables are JSON, and gqlparser does not check that a number sent in a
// variable fits the 32 bits the GraphQL spec gives Int. The gateway
// refuses it itself, so the message states the gateway's rule and the
// value (intText), with no dependency's words after it.
func outOfRange(field string, v any) error {
	return &codedError{code: CodeBadRequest,
		msg: fmt.Sprintf("%s: %s is not an Int (a whole number between -2147483648 and 2147483647)", field, intText(v))}
}

// intText writes the value of an Int argument for a message, as the client
// sent it: a whole number in all its digits (1099511627776, never
// 1.099511627776e+12, although JSON variables arrive as float64), a
// fraction in its shortest form, a string quoted. A number longer than
// fooddelivery.MaxQuotedBytes characters is cut and says how long it was.
func intText(v any) string {
	var s string
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return fooddelivery.Quote(v)
	case float64:
		if v == math.Trunc(v) && !math.IsInf(v, 0) {
			s = strconv.FormatFloat(v, 'f', -1, 64)
		} else {
			s = strconv.FormatFloat(v, 'g', -1, 64)
		}
	default:
		s = fmt.Sprint(v)
	}
	if len(s) > fooddelivery.MaxQuotedBytes {
		s = s[:fooddelivery.MaxQuotedBytes] + "... (" + strconv.Itoa(len(s)) + " characters)"
	}
	return s
}
