package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
	"github.com/stretchr/testify/require"
)

// Hand-written fakes of the gateway's dependencies. Each counts its calls,
// can fail with a sentinel, panic, or take time (fake time: the tests run
// inside synctest bubbles).

// sleep waits d of (fake) time or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", fooddelivery.ErrTimeout, ctx.Err())
	}
}

// gauge tracks calls in flight and their peak.
type gauge struct{ now, peak atomic.Int64 }

func (g *gauge) enter() {
	n := g.now.Add(1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
}

func (g *gauge) leave() { g.now.Add(-1) }

type fakeMenu struct {
	latency        time.Duration
	restaurants    []fooddelivery.Restaurant
	menus          map[string]fooddelivery.Menu
	restaurantsErr error
	menuErr        map[string]error // by restaurant id
	menuPanic      string           // restaurant id whose Menu panics

	restaurantsCalls, menuCalls atomic.Int64
	inFlight                    *gauge

	mu         sync.Mutex
	requestIDs []string // request ids seen on Restaurants calls
}

func (m *fakeMenu) Restaurants(ctx context.Context) ([]fooddelivery.Restaurant, error) {
	m.restaurantsCalls.Add(1)
	m.mu.Lock()
	m.requestIDs = append(m.requestIDs, fooddelivery.RequestIDFrom(ctx))
	m.mu.Unlock()
	m.inFlight.enter()
	defer m.inFlight.leave()
	if err := sleep(ctx, m.latency); err != nil {
		return nil, err
	}
	if m.restaurantsErr != nil {
		return nil, m.restaurantsErr
	}
	return append([]fooddelivery.Restaurant(nil), m.restaurants...), nil
}

func (m *fakeMenu) Menu(ctx context.Context, id string) (fooddelivery.Menu, error) {
	m.menuCalls.Add(1)
	m.inFlight.enter()
	defer m.inFlight.leave()
	if err := sleep(ctx, m.latency); err != nil {
		return fooddelivery.Menu{}, err
	}
	if id == m.menuPanic {
		panic("menu client bug")
	}
	if err := m.menuErr[id]; err != nil {
		return fooddelivery.Menu{}, err
	}
	menu, ok := m.menus[id]
	if !ok {
		return fooddelivery.Menu{}, fmt.Errorf("menu of %s: %w", id, fooddelivery.ErrNotFound)
	}
	return menu, nil
}

type fakeETA struct {
	latency  time.Duration
	etas     map[string]fooddelivery.ETA
	err      map[string]error
	panicOn  string
	calls    atomic.Int64
	inFlight *gauge
}

func (e *fakeETA) ETA(ctx context.Context, id string) (fooddelivery.ETA, error) {
	e.calls.Add(1)
	e.inFlight.enter()
	defer e.inFlight.leave()
	if err := sleep(ctx, e.latency); err != nil {
		return fooddelivery.ETA{}, err
	}
	if id == e.panicOn {
		panic("eta client bug")
	}
	if err := e.err[id]; err != nil {
		return fooddelivery.ETA{}, err
	}
	if eta, ok := e.etas[id]; ok {
		return eta, nil
	}
	return fooddelivery.ETA{RestaurantID: id, Min: 20 * time.Minute, Max: 35 * time.Minute}, nil
}

type fakeRecs struct {
	latency                 time.Duration
	recs                    map[string][]fooddelivery.Dish // by user
	popular                 []fooddelivery.Dish
	err                     error
	recsCalls, popularCalls atomic.Int64
	mu                      sync.Mutex
	users                   []string
}

func (r *fakeRecs) Recommendations(ctx context.Context, user string) ([]fooddelivery.Dish, error) {
	r.recsCalls.Add(1)
	r.mu.Lock()
	r.users = append(r.users, user)
	r.mu.Unlock()
	if err := sleep(ctx, r.latency); err != nil {
		return nil, err
	}
	if r.err != nil {
		return nil, r.err
	}
	return r.recs[user], nil
}

func (r *fakeRecs) Popular(ctx context.Context) ([]fooddelivery.Dish, error) {
	r.popularCalls.Add(1)
	if err := sleep(ctx, r.latency); err != nil {
		return nil, err
	}
	if r.err != nil {
		return nil, r.err
	}
	return r.popular, nil
}

type placed struct {
	user string
	in   fooddelivery.PlaceOrderInput
}

type fakeOrders struct {
	err    error
	calls  atomic.Int64
	mu     sync.Mutex
	placed []placed
	orders map[string]fooddelivery.Order
}

func (o *fakeOrders) PlaceOrder(_ context.Context, user string, in fooddelivery.PlaceOrderInput) (fooddelivery.Order, error) {
	o.calls.Add(1)
	if o.err != nil {
		return fooddelivery.Order{}, o.err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.placed = append(o.placed, placed{user, in})
	total := 0
	for _, it := range in.Items {
		total += 1250 * it.Quantity
	}
	return fooddelivery.Order{
		ID: fmt.Sprintf("o%d", len(o.placed)), User: user, RestaurantID: in.RestaurantID,
		Items: in.Items, TotalCents: total, Status: fooddelivery.OrderPlaced, CourierID: "c7",
	}, nil
}

func (o *fakeOrders) Order(_ context.Context, id string) (fooddelivery.Order, error) {
	o.calls.Add(1)
	if o.err != nil {
		return fooddelivery.Order{}, o.err
	}
	ord, ok := o.orders[id]
	if !ok {
		return fooddelivery.Order{}, fmt.Errorf("order %s: %w", id, fooddelivery.ErrNotFound)
	}
	return ord, nil
}

type fakeReviews struct {
	calls atomic.Int64
	mu    sync.Mutex
	got   []fooddelivery.Review
}

func (r *fakeReviews) SubmitReview(_ context.Context, rv fooddelivery.Review) (fooddelivery.Review, error) {
	r.calls.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, rv)
	rv.ID = fmt.Sprintf("rev%d", len(r.got))
	return rv, nil
}

type fakeAuth struct {
	tokens map[string]string // token -> user
	err    error             // returned for every token when set
	calls  atomic.Int64
}

func (a *fakeAuth) Authorize(_ context.Context, token string) (string, error) {
	a.calls.Add(1)
	if a.err != nil {
		return "", a.err
	}
	if u, ok := a.tokens[token]; ok {
		return u, nil
	}
	return "", fmt.Errorf("token %q: %w", token, fooddelivery.ErrUnauthorized)
}

// system is a full set of healthy fakes: three restaurants with menus,
// live ETAs, popular dishes and one signed-in user (alice, token "t-alice").
type system struct {
	menu    *fakeMenu
	eta     *fakeETA
	recs    *fakeRecs
	orders  *fakeOrders
	reviews *fakeReviews
	auth    *fakeAuth
	// calls counts menu and ETA calls in flight together: the home
	// page's fan-out.
	calls *gauge
}

func newSystem() *system {
	g := &gauge{}
	dish := func(id, name string, cents int) fooddelivery.Dish {
		return fooddelivery.Dish{ID: id, Name: name, PriceCents: cents}
	}
	return &system{
		calls: g,
		menu: &fakeMenu{
			inFlight: g,
			restaurants: []fooddelivery.Restaurant{
				{ID: "r1", Name: "Pasta Place", Cuisine: "italian"},
				{ID: "r2", Name: "Sushi Go", Cuisine: "japanese"},
				{ID: "r3", Name: "Taco Town", Cuisine: "mexican"},
			},
			menus: map[string]fooddelivery.Menu{
				"r1": {RestaurantID: "r1", Dishes: []fooddelivery.Dish{dish("d1", "Carbonara", 1250), dish("d2", "Tiramisu", 650)}},
				"r2": {RestaurantID: "r2", Dishes: []fooddelivery.Dish{dish("d3", "Salmon nigiri", 900)}},
				"r3": {RestaurantID: "r3", Dishes: []fooddelivery.Dish{dish("d4", "Al pastor", 400)}},
			},
		},
		eta:     &fakeETA{inFlight: g},
		recs:    &fakeRecs{popular: []fooddelivery.Dish{dish("d1", "Carbonara", 1250)}, recs: map[string][]fooddelivery.Dish{"alice": {dish("d3", "Salmon nigiri", 900)}}},
		orders:  &fakeOrders{orders: map[string]fooddelivery.Order{}},
		reviews: &fakeReviews{},
		auth:    &fakeAuth{tokens: map[string]string{"t-alice": "alice", "t-bob": "bob"}},
	}
}

func (s *system) deps() gateway.Deps {
	return gateway.Deps{
		Instance: fooddelivery.NewInstance("gateway", 0, metrics.NewMetrics()),
		Menu:     s.menu, Recs: s.recs, Reviews: s.reviews, Orders: s.orders, ETA: s.eta, Auth: s.auth,
	}
}

// client talks to a gateway served over memnet.
type client struct {
	hc  *http.Client
	url string // .../graphql
}

// serve runs fn inside a synctest bubble with a gateway built from deps
// listening on a memnet network, and shuts everything down before the
// bubble ends.
func serve(t *testing.T, deps gateway.Deps, fn func(t *testing.T, c *client)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		l, err := n.Listen("gateway")
		require.NoError(t, err, "listen on memnet")
		srv := &http.Server{Handler: gateway.New(deps)}
		go func() { _ = srv.Serve(l) }()
		hc := &http.Client{Transport: (&memnet.Dialer{Network: n}).Transport()}
		defer func() {
			// Shutdown lets a connection the server is closing after an
			// unread body (413) finish its fake-time linger first.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
			_ = srv.Close()
			hc.CloseIdleConnections()
			_ = n.Close()
		}()
		fn(t, &client{hc: hc, url: memnet.ServiceURL("gateway") + "/graphql"})
	})
}

// query sends a GraphQL request with gateway.Do and requires a GraphQL
// answer with HTTP 200.
func (c *client) query(t *testing.T, token, q string, vars map[string]any) *gateway.Response {
	t.Helper()
	resp, status, err := gateway.Do(context.Background(), c.hc, c.url, token, q, vars)
	require.NoError(t, err, "the gateway must answer with a GraphQL response")
	require.Equal(t, http.StatusOK, status, "HTTP status of a well-formed GraphQL request; errors: %+v", resp.Errors)
	return resp
}

// raw sends a hand-made HTTP request and decodes whatever GraphQL body
// comes back (nil when the body is not one).
func (c *client) raw(t *testing.T, method, contentType, body string) (int, *gateway.Response, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, c.url, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.hc.Do(req)
	require.NoError(t, err, "%s %s must get an HTTP answer", method, c.url)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out gateway.Response
	if strings.HasPrefix(strings.TrimSpace(string(b)), "{") {
		require.NoError(t, json.Unmarshal(b, &out), "body %s", b)
		return resp.StatusCode, &out, resp.Header
	}
	return resp.StatusCode, nil, resp.Header
}
