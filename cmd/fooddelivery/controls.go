package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/admin"
	"github.com/gophereats/resilience/fooddelivery/checker"
	"github.com/gophereats/resilience/fooddelivery/dashboard"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/loadgen"
	"github.com/gophereats/resilience/fooddelivery/scenario"
	"github.com/gophereats/resilience/fooddelivery/system"
	"github.com/gophereats/resilience/fooddelivery/telemetry"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
	"github.com/gophereats/resilience/internal/gameday"
)

// controls are what runs beside a started system: simulated customers,
// the scenario runner, and the admin API and /metrics mounted on the
// gateway's address (outside the gateway's concurrency limit and faults).
type controls struct {
	gen    *loadgen.Generator
	ctl    *scenario.Controls
	runner *scenario.Runner
	dash   *dashboard.Dashboard // nil when nothing is mounted
	check  func(context.Context) (checker.Report, error)
	crash  func(ctx context.Context, service, when string) error
	cancel context.CancelFunc
	done   chan error // the load generator's Run
}

// controlOptions say how to start the controls.
type controlOptions struct {
	seed     int64
	load     int     // requests per second, 0 pauses the customers
	scenario string  // a scenario to start at once; "" for none
	scale    float64 // scenario timelines are multiplied by it
	// client sends the customers' requests; nil means a TCP client of
	// the load generator's own (the loopback system), the system's
	// HTTPClient on memnet.
	client *http.Client
	// addr is the gateway's host:port for the admin guard; "" mounts
	// nothing (a system on memnet, in tests).
	addr string
	// labs says what runs at each lab, for the dashboard (plan.labLines).
	labs []string
	// live, when not nil, is the live game day (-plan): the customers
	// wait gameday.Patience and report to it, and its scenario is known.
	live *gameday.Live
	// crash kills a service's process for POST /admin/crash; nil in one
	// process.
	crash func(ctx context.Context, service, when string) error
	// report, when set, gets the checker's line after a scenario that
	// checks (the terminal of cmd/fooddelivery).
	report io.Writer
	// store is where the checker reads the ledger and the orders; nil
	// means this process's own (checker.LocalStore).
	store checker.Store
	// thisRun says whether an order id is of this run, for the checker;
	// nil judges every charge.
	thisRun func(orderID string) bool
	// tracer, when set, traces the customers' requests (as "customer"),
	// and GET /admin/traces reads its ring, or traces when set (the
	// traces of every process); nil: no tracing.
	tracer *tracing.Tracer
	traces admin.TraceSource
}

// checkSettle is how long the checker gives a charged order to be placed
// before it counts it as charged and not placed: longer than a checkout
// may take (the gateway's budget for it is the fallbacks' 2 s).
const checkSettle = 3 * time.Second

// startControls starts the controls of sys with faults given at start
// (rules, applied through the controls so the change log shows them) and
// lab 07's game-day switch gameDay (nil for none). Call stop when done,
// before sys.Close.
func startControls(sys *system.System, o controlOptions, rules []faults.Rule, gameDay *fooddelivery.GameDay) (*controls, error) {
	acks := checker.NewAcks()
	cfg := loadgen.Config{URL: sys.GatewayURL(), Client: o.client, Seed: o.seed, Rate: o.load,
		Observe: func(a loadgen.Answer) { acks.Placed(a.OrderID) }}
	if o.tracer != nil && o.client == nil {
		cfg.Wrap = func(rt http.RoundTripper) http.RoundTripper { return o.tracer.Client(rt, "customer", "gateway") }
	}
	scenarios := scenario.Builtin()
	if o.live != nil {
		cfg.Timeout = gameday.Patience
		cfg.Observe = func(a loadgen.Answer) {
			acks.Placed(a.OrderID)
			o.live.Observe(a)
		}
		scenarios = append(scenarios, o.live.Scenario())
	}
	gen, err := loadgen.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("-load: %w", err)
	}
	c := &controls{gen: gen, done: make(chan error, 1), crash: o.crash}
	store := o.store
	if store == nil {
		store = checker.LocalStore{Ledger: sys.Ledger, Orders: sys.Store}
	}
	c.check = func(ctx context.Context) (checker.Report, error) {
		return checker.Check(ctx, acks, store, checker.Options{Settle: checkSettle, ThisRun: o.thisRun})
	}
	c.ctl = &scenario.Controls{Faults: sys.Faults, Load: gen, GameDay: gameDay, Log: scenario.NewLog(0),
		Check: func(ctx context.Context) (string, error) {
			r, err := c.check(ctx)
			if err == nil && o.report != nil {
				fmt.Fprintln(o.report, r)
			}
			return r.String(), err
		}}
	for _, r := range rules {
		if _, err := c.ctl.AddFault("flag", r.String()); err != nil {
			return nil, fmt.Errorf("-fault %s: %w", r, err)
		}
	}
	scale := o.scale
	if scale == 0 {
		scale = 1
	}
	if c.runner, err = scenario.NewRunner(c.ctl, scale, scenarios...); err != nil {
		return nil, fmt.Errorf("scenarios: %w", err)
	}
	if o.addr != "" {
		var traces admin.TraceSource
		if o.tracer != nil {
			traces = o.tracer.Ring()
		}
		if o.traces != nil {
			traces = o.traces
		}
		if err := c.mount(sys, o.addr, o.labs, traces); err != nil {
			c.runner.Close()
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() { c.done <- gen.Run(ctx) }()
	if o.scenario != "" {
		if err := c.runner.Start(o.scenario); err != nil {
			c.stop()
			return nil, &usageError{fmt.Errorf("-scenario: %w", err)}
		}
	}
	return c, nil
}

// mount serves the admin API at /admin, the Prometheus metrics at
// /metrics and the dashboard at / (the root path alone) and /dashboard on
// the gateway's address, all behind the admin guard.
func (c *controls) mount(sys *system.System, addr string, labs []string, traces admin.TraceSource) error {
	cfg := admin.Config{Addr: addr, Controls: c.ctl, Runner: c.runner, Check: c.check, Crash: c.crash, Traces: traces}
	h, err := admin.New(cfg)
	if err != nil {
		return err
	}
	metrics := telemetry.Handler(sys.Metrics)
	m, err := admin.Guard(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "/metrics is read with GET", http.StatusMethodNotAllowed)
			return
		}
		metrics.ServeHTTP(w, r)
	}))
	if err != nil {
		return err
	}
	dash := dashboard.New(dashboard.Config{Metrics: sys.Metrics, Log: c.ctl.Log, Status: c.runner.Status,
		Load: c.gen.Stats, Labs: labs})
	d, err := admin.Guard(addr, dash)
	if err != nil {
		return err
	}
	if err := errors.Join(sys.Mount("/admin", h), sys.Mount("/metrics", m), sys.Mount("/", d), sys.Mount("/dashboard", d)); err != nil {
		return err
	}
	dash.Start()
	c.dash = dash
	return nil
}

// stop ends the scenario and the customers, waiting for every request
// they started.
func (c *controls) stop() {
	if c.dash != nil {
		c.dash.Close()
	}
	c.runner.Close()
	c.cancel()
	<-c.done
}
