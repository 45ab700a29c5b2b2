package fallback_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/system"
	fallback "github.com/gophereats/resilience/labs/07-fallback"
)

// The rig (the system with your fallbacks, start; the home page, checkout
// and review calls through the gateway) and the helpers of every step.
// The step tests are in stepN_test.go, one file per README step; the
// experiment, the last step, is in step9_experiment_test.go (go test runs
// the files in name order, so it runs after the other steps).

const (
	pageLimit     = 2 * time.Second  // a home-page view must answer within this
	checkoutLimit = 3 * time.Second  // a checkout must answer within this
	hang          = 30 * time.Second // a hanging dependency answers 503 after this, so the starter ends too
	publishWithin = 10 * time.Second // a deferred review must be published this soon after the store is back

	alice   = system.SampleToken // a valid token (user alice)
	mallory = "tok-mallory"      // a token the auth service does not know
)

// Routes the tests break.
const (
	restaurantsRoute = "GET /restaurants"
	menuRoute        = "GET /restaurants/{id}/menu"
	recsRoute        = "GET /recommendations"
	popularRoute     = "GET /popular"
	reviewsRoute     = "POST /reviews"
	etaRoute         = "GET /eta/{restaurantId}"
	chargesRoute     = "POST /charges"
	ordersRoute      = "POST /orders"
	authRoute        = "GET /authorize"
)

// outage is one way a dependency can be down.
type outage struct {
	name  string
	fault faults.Fault
}

var (
	answers503 = outage{"answers 503", faults.Fault{Status: 503}}
	hangs      = outage{"hangs", faults.Fault{Hang: hang}}
)

const homeQuery = `{ home { restaurants { id name menu { id name priceCents } menuStale eta } recommendations { id name } } }`

type dish struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	PriceCents int    `json:"priceCents"`
}

type restaurantView struct {
	ID        string  `json:"id"`
	Name      string  `json:"name"`
	Menu      []dish  `json:"menu"`
	MenuStale bool    `json:"menuStale"`
	ETA       *string `json:"eta"`
}

type homeView struct {
	Home *struct {
		Restaurants     []restaurantView `json:"restaurants"`
		Recommendations []dish           `json:"recommendations"`
	} `json:"home"`
}

// lab is a running system whose gateway runs with the learner's fallbacks
// and a game-day switch the test controls.
type lab struct {
	sys     *system.System
	gameDay *fooddelivery.GameDay
	deps    gateway.Deps // the gateway's dependencies as your Wrap returned them, for tests that call them directly
}

func start(t *testing.T) *lab {
	t.Helper()
	return startBelow(t, nil)
}

// startBelow starts the system with below (unless nil) laid between the
// gateway's clients and your fallbacks, the way other labs' patterns (a
// circuit breaker, a bulkhead) sit below them in production.
func startBelow(t *testing.T, below func(gateway.Deps) gateway.Deps) *lab {
	t.Helper()
	l := &lab{gameDay: &fooddelivery.GameDay{}}
	l.sys = labtest.StartSystem(t, system.Config{
		Fallbacks: func(d gateway.Deps) (gateway.Deps, func()) {
			if below != nil {
				d = below(d)
			}
			wrapped, stop := fallback.Wrap(d, l.gameDay)
			l.deps = wrapped
			return wrapped, stop
		},
	})
	return l
}

// refusingMenu is a layer below the fallbacks that, once refuse is set,
// refuses every menu read without calling the menu service, the way an
// open circuit breaker (lab 05) or a full bulkhead (lab 06) does.
type refusingMenu struct {
	fooddelivery.MenuReader
	refuse atomic.Pointer[error]
}

func (r *refusingMenu) Restaurants(ctx context.Context) ([]fooddelivery.Restaurant, error) {
	if err := r.refuse.Load(); err != nil {
		return nil, *err
	}
	return r.MenuReader.Restaurants(ctx)
}

func (r *refusingMenu) Menu(ctx context.Context, restaurantID string) (fooddelivery.Menu, error) {
	if err := r.refuse.Load(); err != nil {
		return fooddelivery.Menu{}, *err
	}
	return r.MenuReader.Menu(ctx, restaurantID)
}

// isFallback reports whether err is (or wraps) a *gateway.FallbackError,
// and its code.
func isFallback(err error) (string, bool) {
	var fe *gateway.FallbackError
	if errors.As(err, &fe) {
		return fe.Code, true
	}
	return "", false
}

// priceOf returns the price of dish id in ds, 0 if it is not there.
func priceOf(ds []fooddelivery.Dish, id string) int {
	for _, d := range ds {
		if d.ID == id {
			return d.PriceCents
		}
	}
	return 0
}

// query sends a GraphQL query as token and returns the response and how
// long it took.
func (l *lab) query(t *testing.T, step int, token, q string, vars map[string]any) (*gateway.Response, time.Duration) {
	t.Helper()
	began := time.Now()
	resp, _, err := l.sys.GraphQL(context.Background(), token, q, vars)
	took := time.Since(began)
	require.NoError(t, err, "step %d: the gateway gave no GraphQL answer", step)
	return resp, took
}

// home views the home page as token.
func (l *lab) home(t *testing.T, step int, token string) (*gateway.Response, homeView, time.Duration) {
	t.Helper()
	resp, took := l.query(t, step, token, homeQuery, nil)
	var v homeView
	_ = resp.Decode(&v) // v.Home stays nil when there is no data
	return resp, v, took
}

// warm views the home page while everything is healthy, anonymously (the
// popular list) and as alice (personal recommendations), and returns
// alice's view.
func (l *lab) warm(t *testing.T, step int) homeView {
	t.Helper()
	l.home(t, step, "")
	resp, v, _ := l.home(t, step, alice)
	require.True(t, v.Home != nil && len(resp.Errors) == 0,
		"step %d: with every service healthy the home page must render without errors; got %s", step, summary(resp))
	require.Len(t, v.Home.Restaurants, 6, "step %d: the healthy home page lists the six restaurants", step)
	return v
}

// breakRoutes sets fault f on service for each route.
func (l *lab) breakRoutes(t *testing.T, f faults.Fault, service string, routes ...string) {
	t.Helper()
	for _, r := range routes {
		require.NoError(t, l.sys.Faults.Set(service, r, f))
	}
}

// received counts the requests that reached route of service, summed over
// the menu replicas for service "menu".
func (l *lab) received(service, route string) int64 {
	return labtest.Received(l.sys, service, route)
}

// reviewsWithText counts the stored reviews of restaurant with text.
func (l *lab) reviewsWithText(restaurant, text string) int {
	n := 0
	for _, r := range l.sys.Reviews.For(restaurant) {
		if r.Text == text {
			n++
		}
	}
	return n
}

const placeOrderMutation = `mutation($in: PlaceOrderInput!) { placeOrder(input: $in) { id status totalCents } }`

// orderInput is the variables of placeOrderMutation: the standard order
// (labtest.PizzaOrder) paid with card.
func orderInput(card string) map[string]any {
	return map[string]any{"in": labtest.PizzaOrderJSON(card)}
}

type placed struct {
	PlaceOrder *struct {
		ID         string `json:"id"`
		Status     string `json:"status"`
		TotalCents int    `json:"totalCents"`
	} `json:"placeOrder"`
}

// placeOrder orders two margheritas as token.
func (l *lab) placeOrder(t *testing.T, step int, token, card string) (*gateway.Response, placed, time.Duration) {
	t.Helper()
	resp, took := l.query(t, step, token, placeOrderMutation, orderInput(card))
	var p placed
	_ = resp.Decode(&p)
	return resp, p, took
}

const submitReviewMutation = `mutation($in: ReviewInput!) { submitReview(input: $in) { id restaurantId stars text } }`

type submitted struct {
	SubmitReview *struct {
		ID           string `json:"id"`
		RestaurantID string `json:"restaurantId"`
		Stars        int    `json:"stars"`
		Text         string `json:"text"`
	} `json:"submitReview"`
}

func (l *lab) submitReview(t *testing.T, step int, token, restaurant, text string) (*gateway.Response, submitted, time.Duration) {
	t.Helper()
	resp, took := l.query(t, step, token, submitReviewMutation,
		map[string]any{"in": map[string]any{"restaurantId": restaurant, "stars": 5, "text": text}})
	var s submitted
	_ = resp.Decode(&s)
	return resp, s, took
}

// summary describes a response in one line: whether it had data and its
// first errors with their paths and codes.
func summary(resp *gateway.Response) string {
	if resp == nil {
		return "no response"
	}
	var b strings.Builder
	if len(resp.Data) == 0 || string(resp.Data) == "null" {
		b.WriteString("no data")
	} else {
		b.WriteString("data")
	}
	fmt.Fprintf(&b, ", %d errors", len(resp.Errors))
	for i, e := range resp.Errors {
		if i == 3 {
			b.WriteString("; ...")
			break
		}
		fmt.Fprintf(&b, "; %s at %s", e.Code(), pathText(e.Path))
	}
	return b.String()
}

func pathText(path []any) string {
	if len(path) == 0 {
		return "(no path)"
	}
	var b strings.Builder
	for i, el := range path {
		if n, ok := el.(int); ok {
			fmt.Fprintf(&b, "[%d]", n)
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		fmt.Fprint(&b, el)
	}
	return b.String()
}

// codeAt returns the code of the error at path, or "none".
func codeAt(resp *gateway.Response, path ...any) string {
	if e := resp.ErrorAt(path...); e != nil {
		return e.Code()
	}
	return "none"
}

func dishIDs(ds []dish) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func catalogIDs(ds []fooddelivery.Dish) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func sameMenu(a, b []dish) bool { return slices.Equal(a, b) }

const estimate = "30-45 min (estimate)" // gateway.FormatETA of the default estimate

var publisherLeak = "the review publisher (a goroutine your code started) was still running: " +
	"the stop function Wrap returns must end it and wait for it"

// priceShown is the margherita's price on a home view, 0 if not shown.
func priceShown(v homeView) int {
	if v.Home == nil {
		return 0
	}
	for _, r := range v.Home.Restaurants {
		for _, d := range r.Menu {
			if d.ID == system.SampleDish {
				return d.PriceCents
			}
		}
	}
	return 0
}

func menuStale(v homeView) bool {
	if v.Home == nil {
		return false
	}
	for _, r := range v.Home.Restaurants {
		if r.ID == system.SampleRestaurant {
			return r.MenuStale
		}
	}
	return false
}

func quoted(ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = fmt.Sprintf("%q", w)
	}
	return out
}

// firstWords shortens s to about n bytes.
func firstWords(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// expectation is a field error the response must carry.
type expectation struct {
	path []any
	code string
}

// mismatches lists, in words, the expectations resp does not meet and the
// errors it has beyond them.
func mismatches(resp *gateway.Response, want []expectation) []string {
	var out []string
	for _, w := range want {
		if got := codeAt(resp, w.path...); got != w.code {
			out = append(out, fmt.Sprintf("%s: code %s, want %s", pathText(w.path), got, w.code))
		}
	}
	for _, e := range resp.Errors {
		if !slices.ContainsFunc(want, func(w expectation) bool { return slices.Equal(e.Path, w.path) }) {
			out = append(out, fmt.Sprintf("%s: code %s, want no error", pathText(e.Path), e.Code()))
		}
	}
	return out
}

func firstFew(s []string) string {
	if len(s) > 3 {
		return strings.Join(s[:3], "; ") + fmt.Sprintf("; and %d more", len(s)-3)
	}
	return strings.Join(s, "; ")
}

func homeExpectations(menu, eta, recs string) []expectation {
	var want []expectation
	if menu != "" {
		want = append(want, expectation{[]any{"home", "restaurants"}, menu})
	}
	for i := range 6 {
		if menu != "" {
			want = append(want, expectation{[]any{"home", "restaurants", i, "menu"}, menu})
		}
		if eta != "" {
			want = append(want, expectation{[]any{"home", "restaurants", i, "eta"}, eta})
		}
	}
	if recs != "" {
		want = append(want, expectation{[]any{"home", "recommendations"}, recs})
	}
	return want
}

// calls counts the requests that reached each dependency the fallbacks
// stand in for.
func (l *lab) calls() map[string]int64 {
	return map[string]int64{
		"the menu service (restaurants, menus, recommendations, popular)": l.received("menu", restaurantsRoute) +
			l.received("menu", menuRoute) + l.received("menu", recsRoute) + l.received("menu", popularRoute),
		"the courier service's ETA": l.received("courier", etaRoute),
		"the review store":          l.received("menu", reviewsRoute),
		"the order service":         l.received("order", ordersRoute),
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
