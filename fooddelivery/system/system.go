// Package system wires the food-delivery services together on one network:
// in memory (package memnet) for tests, or on TCP loopback for the runnable
// system (cmd/fooddelivery). The same wiring serves both.
//
// The system is gateway -> {auth, menu-1..n, courier, order}, and
// order -> {menu, payment, courier}. Every call between services is a real
// net/http call. Each lab plugs its pattern into one integration point
// through Config; the rest of the system keeps its plain defaults.
package system

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/auth"
	"github.com/gophereats/resilience/fooddelivery/courier"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/internal/sameorigin"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/menu"
	"github.com/gophereats/resilience/fooddelivery/order"
	"github.com/gophereats/resilience/fooddelivery/payment"
	"github.com/gophereats/resilience/fooddelivery/retry"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

// Sample ids from menu.DefaultCatalog, for examples and tests.
const (
	SampleRestaurant = "luigis"
	SampleDish       = "luigis-margherita"
	// SampleToken is a bearer token the auth service accepts (user "alice").
	SampleToken = "tok-alice"
)

// The limits every server of the system holds its connections to: a
// request's headers must arrive within HeaderTimeout (its body within
// fooddelivery.BodyTimeout after them), and a kept-alive connection
// that carries no request for IdleTimeout is closed.
const (
	HeaderTimeout = 10 * time.Second
	IdleTimeout   = 2 * time.Minute
)

// DefaultLimits are the per-instance concurrency limits used for instances
// that Config.Limits does not name. They are generous: a lab that studies
// exhaustion sets a small limit on the instance it is about.
var DefaultLimits = map[string]int{
	"gateway": 200,
	"auth":    200,
	"order":   100,
	"payment": 200,
	"menu":    100, // each replica
	"courier": 100,
}

// Config says how to build a system. The zero Config is a healthy system on
// a new in-memory network with three menu replicas and naive clients.
type Config struct {
	// Seed keys every fault draw; the same seed gives the same faults.
	Seed int64
	// Network to run on. nil means a new in-memory network
	// (memnet.New()); cmd/fooddelivery passes memnet.NewLoopback().
	Network *memnet.Network
	// GatewayAddr is the TCP address the gateway binds on a loopback
	// network (for example "127.0.0.1:8080"). Empty means a free port.
	// Ignored in memory.
	GatewayAddr string
	// Only, when set, names the one instance this process runs
	// ("payment", "menu-2"): Start builds and serves that instance alone,
	// and its clients dial every other instance through Network, which
	// must know where each listens (memnet.Network.SetRemote).
	// cmd/fooddelivery -processes runs one process per instance this way.
	// Fault rules are still checked against the routes of the whole
	// system. Empty means every instance, in this process.
	Only string
	// OnlyAddr is the TCP address Only's instance binds (for example
	// "127.0.0.1:9101"); empty means a free port, or GatewayAddr when Only
	// is "gateway".
	OnlyAddr string
	// DataDir, when set, is the folder where the payment service keeps
	// its ledger and idempotency keys (payment.db, a payment.Journal) and
	// the order service its orders (order.db, an order.Journal), when
	// this system runs them: a restart on the same folder reads them back.
	// Empty means memory only.
	DataDir string
	// MenuReplicas is the number of menu service instances ("menu-1",
	// ...). Zero means 3.
	MenuReplicas int
	// Limits overrides per-instance concurrency limits by instance name
	// ("order": 10) or, for the menu replicas, by service name ("menu").
	// A limit of 0 means unlimited; missing names use DefaultLimits.
	Limits map[string]int
	// OrderIDPrefix starts every order id (order.Store.Prefix); "" means
	// "ord-", so that ids read ord-1, ord-2, ... A system that is run,
	// stopped and run again (cmd/fooddelivery) passes one that names the
	// run, so that no id of an earlier run is given again.
	OrderIDPrefix string
	// Metrics is the counter registry the system fills (System.Metrics).
	// nil means a new one (metrics.NewMetrics). Pass one to register
	// pattern readers (Metrics.ReportBreaker, ...) before the system
	// starts, from the same code that plugs the patterns in.
	Metrics *metrics.Metrics
	// Tracer, when set, traces every request: a server span around each
	// instance's routes, a client span around each call between services
	// (and the outside client's calls to the gateway, as "customer"), with
	// W3C traceparent on the wire. nil means no tracing.
	Tracer *tracing.Tracer
	// Logger, when set, is every instance's logger (logs.New): a line per
	// request, one per pattern decision, and the internal errors kept
	// from clients, each with its trace. nil means no logs.
	Logger *slog.Logger

	// PaymentClient builds the http.Client the order service uses to call
	// payment (lab 01's integration point). nil means NaivePaymentClient.
	PaymentClient func(network *memnet.Network) *http.Client

	// Fallbacks, when set, wraps the dependencies of the gateway (lab 07's
	// integration point): it receives the Deps the system built (Instance
	// set, every client after the other wrappers of this Config) and
	// returns the Deps the gateway runs with, plus a stop function (nil for
	// none) that Close calls before it stops the servers, to end background
	// work such as publishing deferred reviews. nil means the gateway calls
	// its dependencies directly.
	Fallbacks func(d gateway.Deps) (gateway.Deps, func())

	// PaymentBreaker, when set, wraps the order service's payment client
	// (a fooddelivery.Payer) before the order service uses it: lab 05 puts
	// its circuit breaker here. nil means the plain client.
	PaymentBreaker func(payer fooddelivery.Payer) fooddelivery.Payer

	// GatewayOrderClient, when set, wraps the gateway's client of the
	// order service before any other wrapper of this Config (the Gateway
	// retry layer, the GatewayOrders guard, Fallbacks) sees it: lab 05
	// puts one circuit breaker per endpoint here. It receives the plain
	// client and returns what the gateway calls for placeOrder and order.
	// nil means the plain client.
	GatewayOrderClient func(c *order.Client) fooddelivery.OrderService

	// GatewayGuards, when set, is asked once at start for a guard around
	// each of the gateway's dependencies, by name: GatewayOrders
	// (placeOrder and order, through the order service), GatewayMenu
	// (restaurants and menus) and GatewayCourier (delivery estimates).
	// Every call the gateway makes to that dependency runs through the
	// guard; a nil guard leaves the dependency unwrapped. Lab 06 puts a
	// bulkhead per dependency here. nil means no guards.
	GatewayGuards func(dependency string) fooddelivery.Guard

	// Retries turns on retry loops at the three layers of a checkout: the
	// gateway's calls to the order service, the order service's calls to
	// its payment client, and inside the payment client (lab 04's
	// integration point; retry.NaiveLayers is the story's starting point).
	// Attempt numbers are sent in fooddelivery.HeaderAttempt. The zero
	// value means no retries anywhere.
	Retries retry.Layers

	// OrderDeadlines wraps the order service's handler and its clients'
	// transports (lab 02's integration point; NaiveOrderDeadlines is the
	// story's starting point), and turns on System.Callers. nil means
	// neither, and POST /orders judges work after its caller left by its
	// own request context.
	OrderDeadlines *OrderDeadlines
	// TrackCallers keeps System.Callers without OrderDeadlines, so that a
	// caller outside the system (lab 10's customers) can record when it
	// gave up, and the order and payment services count the work they
	// start for it after that moment.
	TrackCallers bool

	// Observe, when set, is called with every request an instance admits
	// (inside its concurrency limit, before faults), so a test can check
	// what arrives on the wire (lab 02 reads the deadline header). It must
	// not read or keep the body. nil means no observer.
	Observe func(instance, route string, r *http.Request)

	// Answered, when set, is called with every answer an instance's route
	// writes (injected faults' answers included; not the limit's own 503s
	// and 408s), once its handler has returned: the status (0 when the
	// connection was dropped) and the body, which it must not keep. A test
	// scans with it what leaves each service. nil means none.
	Answered func(instance, route string, status int, body []byte)

	// Lab 08 (idempotency). PaymentKeys is the payment service's
	// idempotency-key store (payment.Deps.Keys); nil means the service
	// ignores fooddelivery.HeaderIdempotencyKey and every request charges.
	PaymentKeys payment.KeyStore
	// PaymentProcessor models the card processor behind the payment
	// service (payment.Deps.Processor); nil means an instant processor that
	// never fails.
	PaymentProcessor *payment.Processor
	// ChargeRetry, when set, makes the order service retry failed charges
	// with this policy (a nil Retryable means payment.RetryableCharge),
	// counting attempts on the order->payment edge (Retries, when set,
	// counts them instead: set one of the two); ChargeKey, when set,
	// gives the Idempotency-Key each attempt carries. Both nil means one
	// attempt without a key.
	ChargeRetry *retry.Policy
	ChargeKey   func(payment.ChargeAttempt) string

	// MenuHedging, when set, wraps the transport of the gateway's menu
	// client (lab 09's integration point: hedged menu reads). It receives
	// the transport the system built and the replicas' host names
	// ("menu-1", "menu-2", ...), in order, and returns the transport to use.
	// nil means every menu call goes to exactly one replica.
	MenuHedging func(base http.RoundTripper, replicas []string) http.RoundTripper

	// CourierDispatch, when set, runs the courier-assignment pipeline
	// (lab 08's idempotent consumer): every order the order service places
	// is announced on a queue with at-least-once delivery, whose consumer
	// sends the courier (System.Dispatch). nil means no pipeline: the
	// courier service's assignment is all that happens.
	CourierDispatch *CourierDispatch
}

// Names of the gateway's dependencies for Config.GatewayGuards.
const (
	GatewayOrders  = "orders"
	GatewayMenu    = "menu"
	GatewayCourier = "courier"
)

// System is a running food-delivery system. Its fields give tests the
// counters and the state of every service.
type System struct {
	Network *memnet.Network
	Metrics *metrics.Metrics
	Faults  *faults.Injector

	Ledger  *payment.Ledger  // charges executed by payment
	Store   *order.Store     // orders placed
	Board   *courier.Board   // courier assignments and the dispatch board
	Catalog *menu.Catalog    // restaurants and menus (shared by the menu replicas)
	Reviews *menu.ReviewBook // the review store
	// Callers records when the order service's callers gave up (the
	// system's own clients record it; wrap a test's client with
	// Callers.Track). Set only with Config.OrderDeadlines or
	// Config.TrackCallers; nil otherwise.
	Callers *fooddelivery.Callers
	// Dispatch is the courier-assignment pipeline: its queue and the fleet
	// its consumer sends couriers with. Set only with
	// Config.CourierDispatch; nil otherwise.
	Dispatch *Dispatch

	gatewayURL string
	front      *front // the gateway server's handler: the gateway and what Mount added
	servers    []*http.Server
	clients    []*http.Client
	outside    *http.Client
	stops      []func()       // Config.Fallbacks' stop functions and the dispatch consumer's, called by Close
	closers    []func() error // the files Close closes last, once no request runs (the payment journal)
}

// NaivePaymentClient is the payment client the system starts with: it dials
// through the network and has no timeout of any kind (a zero
// http.Client.Timeout and no dial timeout mean wait forever, like
// http.DefaultClient).
func NaivePaymentClient(network *memnet.Network) *http.Client {
	return &http.Client{Transport: (&memnet.Dialer{Network: network}).Transport()}
}

// Start builds and starts every service. On error it stops what it started.
// Call Close when done (labtest.StartSystem does it for you).
func Start(cfg Config) (*System, error) {
	n := cfg.Network
	if n == nil {
		n = memnet.New()
	}
	replicas := cfg.MenuReplicas
	if replicas == 0 {
		replicas = 3
	}
	if replicas < 0 {
		return nil, fmt.Errorf("system: negative number of menu replicas %d", replicas)
	}
	counters := cfg.Metrics
	if counters == nil {
		counters = metrics.NewMetrics()
	}
	s := &System{
		Network: n,
		Metrics: counters,
		Faults:  faults.New(cfg.Seed, n),
		Ledger:  payment.NewLedger(),
		Callers: callersFor(cfg),
		Store:   order.NewStore(),
		Board:   courier.NewBoard(),
		Catalog: menu.DefaultCatalog(),
		Reviews: menu.NewReviewBook(),
	}
	s.Store.Prefix = cfg.OrderIDPrefix
	if cfg.DataDir != "" && (cfg.Only == "" || cfg.Only == "payment") {
		j, err := payment.OpenJournal(filepath.Join(cfg.DataDir, "payment.db"))
		if err != nil {
			return nil, fmt.Errorf("system: %w", err)
		}
		s.Ledger.Journal = j
		if err := j.Load(s.Ledger); err != nil {
			j.Close()
			return nil, fmt.Errorf("system: %w", err)
		}
		s.closers = append(s.closers, j.Close)
	}
	if cfg.DataDir != "" && (cfg.Only == "" || cfg.Only == "order") {
		j, err := order.OpenJournal(filepath.Join(cfg.DataDir, "order.db"))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("system: %w", err)
		}
		s.closers = append(s.closers, j.Close)
		if err := j.Load(s.Store); err != nil {
			s.Close()
			return nil, fmt.Errorf("system: %w", err)
		}
		s.Store.Journal = j
	}
	s.Metrics.ReportChargedTwice(s.Ledger.OrdersChargedMoreThanOnce)
	if err := s.start(cfg, replicas); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *System) start(cfg Config, replicas int) error {
	instance := func(name, service string) (*fooddelivery.Instance, error) {
		limit, ok := cfg.Limits[name]
		if !ok {
			limit, ok = cfg.Limits[service]
		}
		if !ok {
			limit = DefaultLimits[service]
		}
		if limit < 0 {
			return nil, fmt.Errorf("system: negative concurrency limit %d for %s", limit, name)
		}
		in := fooddelivery.NewInstance(name, limit, s.Metrics)
		in.Faults = answered(cfg.Answered, observed(cfg.Observe, s.Faults.Middleware))
		in.Tracer = cfg.Tracer
		in.Logger = cfg.Logger
		return in, nil
	}
	// client returns a new client of from's calls to to, traced.
	client := func(from, to string) *http.Client {
		c := &http.Client{Transport: cfg.Tracer.Client((&memnet.Dialer{Network: s.Network}).Transport(), from, to)}
		s.clients = append(s.clients, c)
		return c
	}
	menuURLs := make([]string, replicas)
	for i := range menuURLs {
		menuURLs[i] = memnet.ServiceURL(fmt.Sprintf("menu-%d", i+1))
	}

	type service struct {
		name, kind string
		build      func(*fooddelivery.Instance) http.Handler
	}
	services := []service{
		{"auth", "auth", func(in *fooddelivery.Instance) http.Handler {
			return auth.New(auth.Deps{Instance: in, Tokens: auth.DefaultTokens()})
		}},
		{"payment", "payment", func(in *fooddelivery.Instance) http.Handler {
			return payment.New(payment.Deps{Instance: in, Ledger: s.Ledger, Keys: cfg.PaymentKeys, Processor: cfg.PaymentProcessor, Callers: s.Callers})
		}},
		{"courier", "courier", func(in *fooddelivery.Instance) http.Handler {
			return courier.New(courier.Deps{Instance: in, Board: s.Board})
		}},
		{"order", "order", func(in *fooddelivery.Instance) http.Handler {
			paymentHTTP := NaivePaymentClient(s.Network)
			if cfg.PaymentClient != nil {
				paymentHTTP = cfg.PaymentClient(s.Network)
			}
			s.clients = append(s.clients, paymentHTTP)
			paymentHTTP.Transport = cfg.Tracer.Client(paymentHTTP.Transport, "order", "payment")
			if !cfg.Retries.IsZero() {
				paymentHTTP.Transport = retry.AttemptHeader(paymentHTTP.Transport)
			}
			paymentClient := payment.NewClient(paymentHTTP, memnet.ServiceURL("payment"))
			var payer fooddelivery.Payer = paymentClient
			if cfg.ChargeRetry != nil || cfg.ChargeKey != nil {
				keyed := &payment.KeyedClient{Client: paymentClient, Key: cfg.ChargeKey, Policy: retry.Policy{Attempts: 1}}
				if cfg.Retries.IsZero() {
					// Otherwise the retry layers' wire layer, wrapped
					// around keyed below, counts every attempt itself.
					keyed.Edge = s.Metrics.Edge("order", "payment")
				}
				if cfg.ChargeRetry != nil {
					keyed.Policy = *cfg.ChargeRetry
				}
				payer = keyed
			}
			payer = retry.WrapPayer(payer, cfg.Retries, s.Metrics)
			if cfg.PaymentBreaker != nil {
				payer = cfg.PaymentBreaker(payer)
			}
			cfg.OrderDeadlines.client(paymentHTTP)
			var couriers fooddelivery.CourierAssigner = courier.NewClient(cfg.OrderDeadlines.client(client("order", "courier")), memnet.ServiceURL("courier"))
			couriers = s.startDispatch(cfg.CourierDispatch, couriers)
			return cfg.OrderDeadlines.handler(order.New(order.Deps{
				Instance: in,
				Store:    s.Store,
				Menu:     menu.NewClient(cfg.OrderDeadlines.client(client("order", "menu")), menuURLs...),
				Payment:  payer,
				Courier:  couriers,
				Callers:  s.Callers,
			}))
		}},
		{"gateway", "gateway", func(in *fooddelivery.Instance) http.Handler {
			menuHTTP := client("gateway", "menu")
			if cfg.MenuHedging != nil {
				hosts := make([]string, replicas)
				for i := range hosts {
					hosts[i] = fmt.Sprintf("menu-%d", i+1)
				}
				// The hedger goes inside the client's span: its attempts
				// are spans of their own below it (the glue's
				// tracing.Tracer.Attempts).
				base := (&memnet.Dialer{Network: s.Network}).Transport()
				s.clients = append(s.clients, &http.Client{Transport: base}) // Close still closes its idle connections
				menuHTTP.Transport = cfg.Tracer.Client(cfg.MenuHedging(base, hosts), "gateway", "menu")
			}
			menus := menu.NewClient(menuHTTP, menuURLs...)
			gatewayGuard := func(dependency string) fooddelivery.Guard {
				if cfg.GatewayGuards == nil {
					return nil
				}
				return cfg.GatewayGuards(dependency)
			}
			return cfg.OrderDeadlines.edge(gateway.New(s.fallbacks(cfg, gateway.Deps{
				Instance: in,
				Menu:     fooddelivery.GuardMenuReader(menus, gatewayGuard(GatewayMenu)),
				Recs:     menus,
				Reviews:  menus,
				Orders:   fooddelivery.GuardOrderService(retry.WrapOrders(s.gatewayOrders(cfg, client("gateway", "order")), cfg.Retries, s.Metrics), gatewayGuard(GatewayOrders)),
				ETA:      fooddelivery.GuardETAReader(courier.NewClient(client("gateway", "courier"), memnet.ServiceURL("courier")), gatewayGuard(GatewayCourier)),
				Auth:     auth.NewClient(client("gateway", "auth"), memnet.ServiceURL("auth")),
				IDE:      true, // GraphiQL for a browser at /graphql
			})))
		}},
	}
	for i := range replicas {
		services = append(services, service{fmt.Sprintf("menu-%d", i+1), "menu", func(in *fooddelivery.Instance) http.Handler {
			return menu.New(menu.Deps{Instance: in, Catalog: s.Catalog, Reviews: s.Reviews})
		}})
	}
	routes := map[string][]string{}
	if cfg.Only != "" {
		names := make([]string, 0, len(services))
		for _, svc := range services {
			names = append(names, svc.name)
		}
		if !slices.Contains(names, cfg.Only) {
			slices.Sort(names)
			return fmt.Errorf("system: no instance %q to run alone; the instances are %s", cfg.Only, strings.Join(names, ", "))
		}
		all, err := Routes(replicas)
		if err != nil {
			return err
		}
		routes = all
	}
	for _, svc := range services {
		if cfg.Only != "" && svc.name != cfg.Only {
			continue
		}
		in, err := instance(svc.name, svc.kind)
		if err != nil {
			return err
		}
		var l net.Listener
		if svc.name == cfg.Only && cfg.OnlyAddr != "" {
			l, err = s.Network.ListenAddr(svc.name, cfg.OnlyAddr)
		} else if svc.name == "gateway" && cfg.GatewayAddr != "" {
			l, err = s.Network.ListenAddr(svc.name, cfg.GatewayAddr)
		} else {
			l, err = s.Network.Listen(svc.name)
		}
		if err != nil {
			return fmt.Errorf("system: starting %s: %w", svc.name, err)
		}
		h := svc.build(in)
		routes[svc.name] = in.Routes()
		if svc.name != "gateway" {
			h = sameorigin.Internal(h) // only the system's own calls reach it
		}
		if svc.name == "gateway" || svc.name == cfg.Only {
			s.front = &front{gateway: h}
			h = s.front
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: HeaderTimeout, IdleTimeout: IdleTimeout}
		s.servers = append(s.servers, srv)
		go srv.Serve(l)
	}
	// Rules for a service or route nothing serves are refused from now on.
	s.Faults.SetRoutes(routes)
	s.gatewayURL = memnet.ServiceURL("gateway") + "/graphql"
	if addr := s.Network.TCPAddr("gateway"); addr != "" {
		s.gatewayURL = "http://" + addr + "/graphql"
	}
	s.outside = client("customer", "gateway")
	s.outside.Transport = s.Callers.Track(s.outside.Transport)
	return nil
}

// Routes returns the routes every instance of a system with the given
// number of menu replicas serves, by instance name ({"payment": {"GET
// /charges", "POST /charges"}, ...}): what a process that runs one
// instance (Config.Only) checks fault rules against. It starts a plain
// system in memory to read them, and stops it.
func Routes(menuReplicas int) (map[string][]string, error) {
	s, err := Start(Config{MenuReplicas: menuReplicas})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Faults.Routes(), nil
}

// Close stops every server, closes every client's idle connections and
// closes the network, so that no goroutine of the system is left behind.
// It is idempotent.
func (s *System) Close() error {
	var errs []error
	// Shutdown first (with a context that is already done, so it does not
	// wait): it marks the server as shutting down, which stops net/http from
	// lingering on connections it would otherwise close gracefully later.
	for _, stop := range s.stops {
		stop()
	}
	s.stops = nil
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, srv := range s.servers {
		srv.Shutdown(done)
		errs = append(errs, srv.Close())
	}
	for _, c := range s.clients {
		c.CloseIdleConnections()
	}
	errs = append(errs, s.Network.Close())
	for _, c := range s.closers {
		errs = append(errs, c())
	}
	s.servers, s.clients, s.closers = nil, nil, nil
	return errors.Join(errs...)
}

// HTTPClient returns a client for callers outside the system (tests, the
// experiments): it dials the system's network and has no timeout.
func (s *System) HTTPClient() *http.Client { return s.outside }

// GatewayURL is the gateway's GraphQL endpoint: http://gateway/graphql in
// memory, http://127.0.0.1:PORT/graphql on loopback.
func (s *System) GatewayURL() string { return s.gatewayURL }

// Orders returns a client that calls the order service directly, as the
// gateway does.
func (s *System) Orders() *order.Client {
	return order.NewClient(s.outside, memnet.ServiceURL("order"))
}

// GraphQL sends query with vars to the gateway as the user owning token
// ("" for an anonymous request) and returns the decoded response and the
// HTTP status.
func (s *System) GraphQL(ctx context.Context, token, query string, vars map[string]any) (*gateway.Response, int, error) {
	return gateway.Do(ctx, s.outside, s.gatewayURL, token, query, vars)
}

// gatewayOrders returns the gateway's client of the order service on hc:
// hc's transport carries the caller's half of cfg.OrderDeadlines and is
// tracked by s.Callers (the gateway is the order service's caller), and
// the client is wrapped by cfg.GatewayOrderClient.
func (s *System) gatewayOrders(cfg Config, hc *http.Client) fooddelivery.OrderService {
	if d := cfg.OrderDeadlines; d != nil && d.Gateway != nil {
		hc.Transport = d.Gateway(hc.Transport)
	}
	hc.Transport = s.Callers.Track(hc.Transport)
	c := order.NewClient(hc, memnet.ServiceURL("order"))
	if cfg.GatewayOrderClient == nil {
		return c
	}
	return cfg.GatewayOrderClient(c)
}

// fallbacks applies cfg.Fallbacks to the gateway's dependencies d and keeps
// its stop function for Close.
func (s *System) fallbacks(cfg Config, d gateway.Deps) gateway.Deps {
	if cfg.Fallbacks == nil {
		return d
	}
	d, stop := cfg.Fallbacks(d)
	if stop != nil {
		s.stops = append(s.stops, stop)
	}
	return d
}

// Mount serves h on the gateway's own server (with Config.Only, on the
// server of the one instance this system runs), beside the gateway, for every
// request whose path is prefix or starts with prefix followed by "/"
// (prefix "/admin" takes "/admin", "/admin/" and "/admin/faults"; when
// mounted prefixes nest, the longest wins); every other request still goes
// to the gateway. h runs outside the gateway's
// instance: no concurrency limit, no faults, no route counters, so it keeps
// answering while the gateway is overloaded or faulted. prefix must be
// "/" followed by at least one character, without a trailing "/", and may
// not be a path the gateway serves ("/graphql", "/healthz"). The prefix
// "/" alone is the one exception: it takes the root path "/" exactly, and
// nothing below it, so every other path the gateway does not serve still
// gets the gateway's 404. Mounting the same prefix again replaces the
// handler; a nil h removes it. Mount is safe to call while the system
// serves; cmd/fooddelivery mounts the admin API at "/admin" and the
// dashboard at "/" and "/dashboard".
func (s *System) Mount(prefix string, h http.Handler) error {
	if prefix != "/" && (len(prefix) < 2 || prefix[0] != '/' || strings.HasSuffix(prefix, "/") || strings.ContainsAny(prefix, "?#")) {
		return fmt.Errorf("system: mount prefix %q must look like /name, without a trailing slash, or be \"/\" for the root path alone", prefix)
	}
	if prefix == "/graphql" || prefix == "/healthz" {
		return fmt.Errorf("system: mount prefix %q is a path the gateway serves", prefix)
	}
	if s.front == nil {
		return errors.New("system: mount: neither the gateway nor the instance of Config.Only is running")
	}
	s.front.mount(prefix, h)
	return nil
}

// front is the gateway server's handler: it hands requests under a
// mounted prefix to their handler and everything else to the gateway.
type front struct {
	gateway http.Handler
	mu      sync.RWMutex
	mounts  map[string]http.Handler
}

func (f *front) mount(prefix string, h http.Handler) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h == nil {
		delete(f.mounts, prefix)
		return
	}
	if f.mounts == nil {
		f.mounts = map[string]http.Handler{}
	}
	f.mounts[prefix] = h
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.RLock()
	var h http.Handler
	longest := 0
	for prefix, m := range f.mounts {
		match := r.URL.Path == prefix || (prefix != "/" && strings.HasPrefix(r.URL.Path, prefix+"/"))
		if len(prefix) > longest && match {
			h, longest = m, len(prefix)
		}
	}
	f.mu.RUnlock()
	if h == nil {
		h = f.gateway
	}
	h.ServeHTTP(w, r)
}
