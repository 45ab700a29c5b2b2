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
	"net"
	"net/http"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/auth"
	"github.com/gophereats/resilience/fooddelivery/courier"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/menu"
	"github.com/gophereats/resilience/fooddelivery/order"
	"github.com/gophereats/resilience/fooddelivery/payment"
)

// Sample ids from menu.DefaultCatalog, for examples and tests.
const (
	SampleRestaurant = "luigis"
	SampleDish       = "luigis-margherita"
	// SampleToken is a bearer token the auth service accepts (user "alice").
	SampleToken = "tok-alice"
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
	// MenuReplicas is the number of menu service instances ("menu-1",
	// ...). Zero means 3.
	MenuReplicas int
	// Limits overrides per-instance concurrency limits by instance name
	// ("order": 10) or, for the menu replicas, by service name ("menu").
	// A limit of 0 means unlimited; missing names use DefaultLimits.
	Limits map[string]int

	// PaymentClient builds the http.Client the order service uses to call
	// payment (lab 01's integration point). nil means NaivePaymentClient.
	PaymentClient func(network *memnet.Network) *http.Client
}

// System is a running food-delivery system. Its fields give tests the
// counters and the state of every service.
type System struct {
	Network *memnet.Network
	Metrics *fooddelivery.Metrics
	Faults  *faults.Injector

	Ledger  *payment.Ledger  // charges executed by payment
	Store   *order.Store     // orders placed
	Board   *courier.Board   // courier assignments and the dispatch board
	Catalog *menu.Catalog    // restaurants and menus (shared by the menu replicas)
	Reviews *menu.ReviewBook // the review store

	gatewayURL string
	servers    []*http.Server
	clients    []*http.Client
	outside    *http.Client
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
	s := &System{
		Network: n,
		Metrics: fooddelivery.NewMetrics(),
		Faults:  faults.New(cfg.Seed, n),
		Ledger:  payment.NewLedger(),
		Store:   order.NewStore(),
		Board:   courier.NewBoard(),
		Catalog: menu.DefaultCatalog(),
		Reviews: menu.NewReviewBook(),
	}
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
		in.Faults = s.Faults.Middleware
		return in, nil
	}
	client := func() *http.Client {
		c := &http.Client{Transport: (&memnet.Dialer{Network: s.Network}).Transport()}
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
			return payment.New(payment.Deps{Instance: in, Ledger: s.Ledger})
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
			return order.New(order.Deps{
				Instance: in,
				Store:    s.Store,
				Menu:     menu.NewClient(client(), menuURLs...),
				Payment:  payment.NewClient(paymentHTTP, memnet.ServiceURL("payment")),
				Courier:  courier.NewClient(client(), memnet.ServiceURL("courier")),
			})
		}},
		{"gateway", "gateway", func(in *fooddelivery.Instance) http.Handler {
			menus := menu.NewClient(client(), menuURLs...)
			return gateway.New(gateway.Deps{
				Instance: in,
				Menu:     menus,
				Recs:     menus,
				Reviews:  menus,
				Orders:   order.NewClient(client(), memnet.ServiceURL("order")),
				ETA:      courier.NewClient(client(), memnet.ServiceURL("courier")),
				Auth:     auth.NewClient(client(), memnet.ServiceURL("auth")),
			})
		}},
	}
	for i := range replicas {
		services = append(services, service{fmt.Sprintf("menu-%d", i+1), "menu", func(in *fooddelivery.Instance) http.Handler {
			return menu.New(menu.Deps{Instance: in, Catalog: s.Catalog, Reviews: s.Reviews})
		}})
	}
	for _, svc := range services {
		in, err := instance(svc.name, svc.kind)
		if err != nil {
			return err
		}
		var l net.Listener
		if svc.name == "gateway" && cfg.GatewayAddr != "" {
			l, err = s.Network.ListenAddr(svc.name, cfg.GatewayAddr)
		} else {
			l, err = s.Network.Listen(svc.name)
		}
		if err != nil {
			return fmt.Errorf("system: starting %s: %w", svc.name, err)
		}
		srv := &http.Server{Handler: svc.build(in), ReadHeaderTimeout: 10 * time.Second}
		s.servers = append(s.servers, srv)
		go srv.Serve(l)
	}
	s.gatewayURL = memnet.ServiceURL("gateway") + "/graphql"
	if addr := s.Network.TCPAddr("gateway"); addr != "" {
		s.gatewayURL = "http://" + addr + "/graphql"
	}
	s.outside = client()
	return nil
}

// Close stops every server, closes every client's idle connections and
// closes the network, so that no goroutine of the system is left behind.
// It is idempotent.
func (s *System) Close() error {
	var errs []error
	// Shutdown first (with a context that is already done, so it does not
	// wait): it marks the server as shutting down, which stops net/http from
	// lingering on connections it would otherwise close gracefully later.
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
	s.servers, s.clients = nil, nil
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
