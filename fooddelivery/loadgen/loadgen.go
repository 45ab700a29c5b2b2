// Package loadgen simulates the food-delivery system's customers: a
// bounded load generator that sends GraphQL requests to the gateway at a
// steady rate, in a realistic mix of browsing, checkouts, reviews and
// order lookups, and counts what came back per action.
//
// Every choice a customer makes (what to do, as whom, which restaurant,
// which dishes) is a pure function of the generator's seed and the
// customer's number (fooddelivery.Draw), so the same seed sends the same
// sequence of visits whatever the goroutine scheduling. All waiting goes
// through package time, so a Generator runs under testing/synctest's fake
// clock on memnet as well as on the real clock over TCP:
//
//	gen, err := loadgen.New(loadgen.Config{URL: sys.GatewayURL(), Client: sys.HTTPClient(), Rate: 20})
//	go gen.Run(ctx)      // until ctx is cancelled
//	gen.SetRate(50)      // change the rate while it runs; 0 pauses it
//	stats := gen.Stats() // a JSON-encodable snapshot
package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/auth"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/menu"
)

// Limits and defaults.
const (
	// MaxRate is the highest rate a Generator accepts: 1000 requests per
	// second. It keeps a mistyped rate from flooding the machine.
	MaxRate = 1000
	// DefaultMaxInFlight is how many requests may be in flight at once
	// when Config.MaxInFlight is zero: 256.
	DefaultMaxInFlight = 256
	// DefaultTimeout bounds each request when Config.Timeout is zero: 10s.
	DefaultTimeout = 10 * time.Second
)

// ErrInvalid is wrapped by every error New, SetRate and SetMix return for
// a setting that makes no sense.
var ErrInvalid = errors.New("loadgen: invalid setting")

// ErrRunning is returned by Run when the Generator is already running.
var ErrRunning = errors.New("loadgen: the generator is already running")

// Config says how to build a Generator.
type Config struct {
	// URL is the gateway's GraphQL endpoint (System.GatewayURL, for
	// example http://127.0.0.1:8080/graphql). Required.
	URL string
	// Client sends the requests. nil means a client of the Generator's own
	// for TCP, keeping up to MaxInFlight idle connections to the gateway,
	// whose idle connections Run closes when it ends. Its Timeout, if any,
	// applies on top of Timeout below.
	Client *http.Client
	// Wrap, when set, wraps the transport every request is sent through,
	// below the request ids (tracing.Tracer.Client, for a span per
	// customer's request). nil means none.
	Wrap func(http.RoundTripper) http.RoundTripper
	// Seed fixes every customer's choices.
	Seed int64
	// Rate is the starting rate in requests per second, 0..MaxRate. 0
	// means paused until SetRate.
	Rate int
	// Mix weighs the actions; nil means DefaultMix.
	Mix Mix
	// MaxInFlight is the most requests in flight at once; a request due
	// while that many are in flight is not sent and counts as Dropped.
	// Zero means DefaultMaxInFlight.
	MaxInFlight int
	// Timeout bounds each request. Zero means DefaultTimeout.
	Timeout time.Duration
	// Catalog lists the restaurants and dishes customers pick from. nil
	// means menu.DefaultCatalog(), what the system serves.
	Catalog *menu.Catalog
	// Tokens are the bearer tokens of the signed-in customers. nil means
	// the tokens auth.DefaultTokens accepts (tok-alice, tok-bob, tok-carol).
	Tokens []string
	// Observe, when set, is called with every finished request (not those
	// cut short because Run was stopping), after Stats counted it, from
	// the request's goroutine: it must be safe for concurrent use.
	Observe func(Answer)
}

// Answer is one finished request, for Config.Observe.
type Answer struct {
	Action string    // one of Actions
	Start  time.Time // when it was sent
	Took   time.Duration
	// Code is "" for an answer without any GraphQL error, else the code
	// Stats counts it under (ActionStats.Errors).
	Code string
	// Partial is true for a failed answer that still carried data.
	Partial bool
	// OrderID is the order's id for a checkout answered as placed
	// (status PLACED), else "".
	OrderID string
}

// Generator sends simulated customers' requests. Create one with New; its
// methods are safe for concurrent use.
type Generator struct {
	url         string
	client      *http.Client
	ownClient   bool
	seed        int64
	timeout     time.Duration
	maxInFlight int
	restaurants []restaurant
	tokens      []string
	observe     func(Answer)

	running atomic.Bool
	wake    chan struct{} // a rate or mix change; buffered, one pending at most
	slots   chan struct{} // one per request in flight

	mu      sync.Mutex
	rate    int
	mix     Mix
	next    int64 // number of the next customer
	stats   map[string]*counts
	placed  []placedOrder // recent orders the customers placed, oldest first
	placedN int           // total placed, for the ring's position
}

type restaurant struct {
	id     string
	dishes []string
}

type placedOrder struct{ id, token string }

// maxPlaced is how many placed orders the Generator remembers for lookups.
const maxPlaced = 64

// New returns a Generator that is not running yet. It returns an error
// wrapping ErrInvalid for a missing URL, a Rate outside 0..MaxRate, a bad
// Mix (see Mix.Validate), a negative MaxInFlight or Timeout, or a catalog
// without any restaurant that has dishes.
func New(cfg Config) (*Generator, error) {
	if cfg.URL == "" {
		return nil, fmt.Errorf("%w: Config.URL (the gateway's GraphQL endpoint) is required", ErrInvalid)
	}
	if err := checkRate(cfg.Rate); err != nil {
		return nil, err
	}
	mix := cfg.Mix
	if mix == nil {
		mix = DefaultMix()
	}
	if err := mix.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxInFlight < 0 || cfg.Timeout < 0 {
		return nil, fmt.Errorf("%w: MaxInFlight %d and Timeout %v must not be negative (0 means the default)", ErrInvalid, cfg.MaxInFlight, cfg.Timeout)
	}
	g := &Generator{
		url:         cfg.URL,
		seed:        cfg.Seed,
		timeout:     cmp(cfg.Timeout, DefaultTimeout),
		maxInFlight: cmp(cfg.MaxInFlight, DefaultMaxInFlight),
		tokens:      slices.Clone(cfg.Tokens),
		observe:     cfg.Observe,
		wake:        make(chan struct{}, 1),
		rate:        cfg.Rate,
		mix:         mix.clone(),
		stats:       map[string]*counts{},
	}
	g.slots = make(chan struct{}, g.maxInFlight)
	if g.tokens == nil {
		for tok := range auth.DefaultTokens() {
			g.tokens = append(g.tokens, tok)
		}
		slices.Sort(g.tokens)
	}
	if len(g.tokens) == 0 {
		return nil, fmt.Errorf("%w: Config.Tokens is empty; checkouts, reviews and lookups need a signed-in customer", ErrInvalid)
	}
	catalog := cfg.Catalog
	if catalog == nil {
		catalog = menu.DefaultCatalog()
	}
	for _, r := range catalog.Restaurants() {
		m, ok := catalog.Menu(r.ID)
		if !ok || len(m.Dishes) == 0 {
			continue
		}
		rs := restaurant{id: r.ID}
		for _, d := range m.Dishes {
			rs.dishes = append(rs.dishes, d.ID)
		}
		g.restaurants = append(g.restaurants, rs)
	}
	if len(g.restaurants) == 0 {
		return nil, fmt.Errorf("%w: the catalog has no restaurant with dishes", ErrInvalid)
	}
	base := cfg.Client
	if base == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = g.maxInFlight
		base = &http.Client{Transport: tr}
		g.ownClient = true
	}
	c := *base
	c.Transport = base.Transport
	if cfg.Wrap != nil {
		c.Transport = cfg.Wrap(c.Transport)
	}
	c.Transport = fooddelivery.CarryRequestID(c.Transport)
	g.client = &c
	for _, a := range Actions() {
		g.stats[a] = newCounts()
	}
	return g, nil
}

func cmp[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

func checkRate(rate int) error {
	if rate < 0 || rate > MaxRate {
		return fmt.Errorf("%w: rate %d requests per second is outside 0..%d (0 pauses the load)", ErrInvalid, rate, MaxRate)
	}
	return nil
}

// SetRate sets the rate in requests per second, taking effect at once on a
// running Generator; 0 pauses it. A rate outside 0..MaxRate returns an
// error wrapping ErrInvalid and changes nothing.
func (g *Generator) SetRate(rate int) error {
	if err := checkRate(rate); err != nil {
		return err
	}
	g.mu.Lock()
	g.rate = rate
	g.mu.Unlock()
	g.poke()
	return nil
}

// Rate returns the rate in requests per second.
func (g *Generator) Rate() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rate
}

// SetMix sets the weights of the actions for the customers to come. A mix
// that Validate refuses returns its error and changes nothing.
func (g *Generator) SetMix(m Mix) error {
	if err := m.Validate(); err != nil {
		return err
	}
	g.mu.Lock()
	g.mix = m.clone()
	g.mu.Unlock()
	return nil
}

// Mix returns a copy of the current mix.
func (g *Generator) Mix() Mix {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mix.clone()
}

func (g *Generator) poke() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// Run sends requests at the current rate until ctx is done, then waits for
// the requests in flight (they are cancelled with ctx) and returns nil:
// when Run returns, no goroutine of the Generator is left. A Generator runs
// once at a time; a second concurrent Run returns ErrRunning. Customers
// are numbered on from where the last Run stopped.
//
// Requests are spaced 1/rate apart on the clock of package time. When the
// machine falls more than a second behind, the Generator skips the missed
// requests rather than send them in a burst.
func (g *Generator) Run(ctx context.Context) error {
	if !g.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer g.running.Store(false)
	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		if g.ownClient {
			g.client.CloseIdleConnections()
		}
	}()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()

	// The k-th request since anchor is due at anchor + k/rate.
	rate := -1
	var anchor, lastSent time.Time
	var k int64
	due := func() time.Time { return anchor.Add(time.Duration(k) * time.Second / time.Duration(rate)) }
	for {
		if ctx.Err() != nil {
			return nil
		}
		if r := g.Rate(); r != rate {
			rate = r
			anchor, k = time.Now(), 0
			if !lastSent.IsZero() {
				anchor, k = lastSent, 1 // the next request keeps the new spacing from the last one
			}
		}
		if rate == 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-g.wake:
				continue
			}
		}
		now := time.Now()
		if now.Sub(due()) > time.Second {
			anchor, k = now, 0
		}
		if wait := due().Sub(now); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return nil
			case <-g.wake:
				timer.Stop()
				continue
			case <-timer.C:
			}
		}
		lastSent = due()
		k++
		g.send(ctx, &wg)
	}
}

// send starts the next customer's request, unless MaxInFlight requests
// are in flight (then it counts a drop).
func (g *Generator) send(ctx context.Context, wg *sync.WaitGroup) {
	g.mu.Lock()
	n := g.next
	g.next++
	v := g.visit(n)
	c := g.stats[v.Action]
	if v.Action == ActionOrder {
		if len(g.placed) == 0 {
			c.skipped++
			g.mu.Unlock()
			return
		}
		o := g.placed[int(fooddelivery.Draw(g.seed, v.key, drawLookup)*float64(len(g.placed)))]
		v.Token = o.token
		v.Variables = map[string]any{"id": o.id}
	}
	select {
	case g.slots <- struct{}{}:
	default:
		c.dropped++
		g.mu.Unlock()
		return
	}
	c.sent++
	g.mu.Unlock()

	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() { <-g.slots }()
		g.do(ctx, n, v)
	}()
}

// do sends one visit and counts its outcome.
func (g *Generator) do(ctx context.Context, n int64, v Visit) {
	rctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	rctx = fooddelivery.WithRequestID(rctx, "load-"+strconv.FormatInt(g.seed, 10)+"-"+strconv.FormatInt(n, 10))
	start := time.Now()
	resp, _, err := gateway.DoRequest(rctx, g.client, g.url, v.Token, gateway.Request{Query: v.Query, Variables: v.Variables})
	took := time.Since(start)

	code, partial, placed := "", false, ""
	switch {
	case (err != nil || resp == nil || len(resp.Errors) > 0) && ctx.Err() != nil:
		code = codeCancelled // the Generator is stopping: not the system's failure
	case resp != nil && len(resp.Errors) > 0:
		code = resp.Errors[0].Code()
		if code == "" {
			code = CodeUnknown
		}
		partial = hasData(resp.Data)
	case err != nil:
		code = gateway.ErrorCode(err)
	case v.Action == ActionCheckout:
		var out struct {
			PlaceOrder struct{ ID, Status string }
		}
		if resp.Decode(&out) == nil && out.PlaceOrder.Status == fooddelivery.OrderPaymentKO {
			code = fooddelivery.OrderPaymentKO
		} else if out.PlaceOrder.ID != "" {
			g.remember(placedOrder{id: out.PlaceOrder.ID, token: v.Token})
			if out.PlaceOrder.Status == fooddelivery.OrderPlaced {
				placed = out.PlaceOrder.ID
			}
		}
	}

	g.mu.Lock()
	g.stats[v.Action].done(code, partial, took)
	g.mu.Unlock()
	if g.observe != nil && code != codeCancelled {
		g.observe(Answer{Action: v.Action, Start: start, Took: took, Code: code, Partial: partial, OrderID: placed})
	}
}

func hasData(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

func (g *Generator) remember(o placedOrder) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.placed) < maxPlaced {
		g.placed = append(g.placed, o)
	} else {
		g.placed[g.placedN%maxPlaced] = o
	}
	g.placedN++
}
