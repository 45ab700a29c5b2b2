// Command fooddelivery runs the whole food-delivery system on 127.0.0.1 so
// that people and real clients (curl, a browser, a load generator) can send
// it requests, inject faults and watch a cascade happen.
//
//	go run ./cmd/fooddelivery                              a healthy system on 127.0.0.1:8080
//	go run ./cmd/fooddelivery -fault payment=hang          every charge hangs: checkouts wait 30s and fail
//	go run ./cmd/fooddelivery -fault payment=hang -lab 01=solution
//	                                                       the same, with lab 01's reference payment client (2s timeout)
//	go run ./cmd/fooddelivery -lab all=solution -fast      every lab's solution at its integration point
//	go run ./cmd/workshop live 05                          your labs/05-breaker code (built with -tags learner05)
//	go run ./cmd/fooddelivery -processes                   the same system, each service its own OS process
//
// Each lab plugs into the system at its integration point with -lab
// NN=off|naive|solution|learner; labs.go holds the table of what each
// plugs and how labs that meet at one place compose.
//
// Every service listens on its own TCP port on 127.0.0.1 and the services
// call each other over real HTTP; only the gateway's address is fixed (by
// -addr). Run it with -h for every flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/admin"
	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/loadgen"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/payment"
	gameplan "github.com/gophereats/resilience/fooddelivery/plan"
	"github.com/gophereats/resilience/fooddelivery/scenario"
	"github.com/gophereats/resilience/fooddelivery/supervisor"
	"github.com/gophereats/resilience/fooddelivery/system"
	"github.com/gophereats/resilience/fooddelivery/telemetry/logs"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing/otlp"
	"github.com/gophereats/resilience/internal/compose"
	"github.com/gophereats/resilience/internal/gameday"
)

const usage = `usage: go run ./cmd/fooddelivery [flags]

Runs the food-delivery system (gateway, auth, order, payment, courier and
three menu replicas) on 127.0.0.1 and prints the GraphQL URL with curl
examples. Ctrl-C stops it.

Flags:
  -addr host:port   where the gateway listens; loopback only (default 127.0.0.1:8080;
                    127.0.0.1:0 picks a free port)
  -allow-host name  also answer the dashboard, GraphiQL and the admin API under name, over
                    HTTPS: the host a port-forwarding proxy gives the gateway's port (a GitHub
                    Codespace forwards 8080 as NAME-8080.app.github.dev); repeatable; every
                    other host and origin is still refused. Default: the environment's
                    FOODDELIVERY_ALLOW_HOST (the dev container sets it in a Codespace), else none
  -fault spec       inject a fault, repeatable: service[:route]=kind[,key=value...]
                    kinds: latency, tail, hang, error, reset, slowbody, lose, refuse, blackhole
                    examples: -fault payment=hang              every charge hangs (at most 30s)
                              -fault payment=hang,max=5s       ... at most 5s
                              -fault "payment:POST /charges=error,status=503,p=0.5"
                    a rule on a route no service serves is an error that lists the real routes
                              -fault menu=latency,fixed=200ms,jitter=100ms
                              -fault courier=refuse
                    with -processes only, on the connections to a whole service (Toxiproxy):
                              slowclose,delay=2s   bandwidth,rate=5 (KB/s)   limitdata,bytes=500
  -seed n           seed of the faults' random draws; the same seed gives the same faults (default 1)
  -order-limit n    concurrent requests one order service instance accepts before it
                    rejects; 0 means unlimited (default %d)
  -lab NN=choice    what runs at lab NN's integration point, repeatable; NN is 01 to 09, or all:
                      off       the system as it is, without the lab (the default)
                      naive     the broken starting point of the lab's story
                      solution  the reference solution, solutions/NN-name, with the settings its README teaches
                      learner   your labs/NN-name code, with the same settings; it is built in only with
                                its build tag, which go run ./cmd/workshop live NN adds for you
                    -lab all=solution runs every lab's solution (all=naive, all=off, all=learner too);
                    a later -lab NN=... overrides all for lab NN. A build tag cmd/fooddelivery does not
                    know (learner5, learner) builds no learner code: the banner lists what is built in,
                    and -lab NN=learner without it is an error that gives the command to use.
  -latency normal|off
                    normal (the default): each service answers in its usual time, as on lab 10's
                    platform: %s; a -fault on a service
                    takes over from its usual time. off: every service answers at once
  -log json|text    the format of the services' log lines on stderr (default json): one per
                    request and one per pattern decision at info, each with its trace_id and
                    span_id, and at error the internal errors that clients never see
  -log-level level  debug, info, warn or error (default warn: quiet while a demo runs; info
                    shows every request and decision)
  -traces n         keep the latest n traces in memory (0 to 10000, default 500; 0 turns tracing
                    off): every request's spans, from the customer through every service, with
                    each pattern's decisions as events; GET /admin/traces lists them
  -otlp url         also send every span to an OpenTelemetry collector (Jaeger, Tempo, the
                    OpenTelemetry Collector) over OTLP/HTTP: a base URL, to which /v1/traces is
                    appended (http://localhost:4318), or a full URL whose path is kept as given
                    (https://otel.example:4318/v1/traces); http or https with a host. Spans go in
                    batches within 1s; each service is its own service.name; a collector that is
                    down costs requests nothing: one warning in the log, and its spans are lost.
                    With -processes each process sends its own. Default: none
  -fast             shorten the settings that make a demo wait: the breaker's open period
                    (%v instead of %v) and the dispatch queue's visibility timeout (%v instead of %v);
                    scenarios play 10 times faster
  -load n           simulated customers: n requests a second (0 to %d) browsing, loading the
                    home page, checking out, reviewing and looking up orders; each customer's
                    choices follow from -seed (default 0: none until set over the admin API)
  -scenario name    play a scripted incident at start: %s
                    (GET /admin/scenarios describes them; game-day needs -plan)
  -plan name        run a game-day plan (lab 10) instead of -lab: %s;
                    learner is your labs/10-game-day plan, which go run ./cmd/workshop live 10 builds in;
                    the platform then has the game day's fixed capacity, and -scenario game-day plays
                    its stages one after another, the dashboard filling its score card
  -processes        run every service as its own OS process, on its own loopback port: the same
                    program with -service for each; every other flag is passed on to each child.
                    The parent prints each child's address and pid and relays its output, restarts
                    a child that exits after %v (it gives up on one that ends %d times in a row
                    before it listens, or at once on bad arguments), and stops them all on Ctrl-C
                    or SIGTERM; a child whose parent is gone, even by kill -9, exits by itself.
                    Fault rules live in the gateway's process; the others copy them from its
                    admin API every %v; the gateway's process reads every other's counters for
                    its dashboard and /metrics. Each process keeps its own state in memory
  -service name     run one instance alone, listening on -addr (default a free port; the
                    gateway's stays 127.0.0.1:8080); one of
                    %s
  -peer name=addr   with -service: where another instance listens, loopback only; repeatable
  -via name=addr    with -service: dial that instance through addr instead (a Toxiproxy link)
  -supervised       exit when standard input closes (-processes gives it to its children)
  -run-start ms     when the system's run began, in Unix milliseconds (-processes gives it to its
                    children): the checker judges only the orders given since, not an earlier
                    run's on the same -data
  -container        with -service, inside a container on a compose network (compose.yaml): listen on
                    -addr 0.0.0.0:PORT, and find peers by container name (-peer payment=payment:9104);
                    publish only the gateway's port, on 127.0.0.1 and the same number
  -service toxiproxy  run only Toxiproxy with a proxy per link, as compose.yaml's toxiproxy
                    container does: -peer gives every instance's address, -link from-to=addr where
                    each link's proxy listens (one per link: gateway-auth, ..., order-payment, ...),
                    -toxiproxy its API; it copies the gateway's fault rules as -processes does
  -link from-to=addr  with -service toxiproxy: where that link's proxy listens; repeatable
  -tcp-faults       leave the faults on connections to Toxiproxy (-processes gives it to its children)
  -restart-delay d  with -processes: how long a child that died stays down before it is started
                    again (default %v)
  -data dir         where payment keeps its ledger and idempotency keys (payment.db) and the order
                    service its orders (order.db): bbolt files written before each charge or order
                    is answered, so that a restart reads them back, finds the orders, and replays a
                    charge's key instead of charging twice; default: memory in one process, a
                    temporary folder with -processes (removed when it stops; kill -9 of the parent
                    leaves it behind). A file that is damaged, locked by another process, of
                    another layout or not writable stops the start, with its path and what to do
  -toxiproxy addr   with -processes: where Toxiproxy's API listens, loopback only (default
                    127.0.0.1:8474, its usual port). Every link between two services (gateway-order,
                    order-payment, ...) is one of its proxies; a rule for a whole service that
                    refuses, black-holes, resets or delays its connections, or one of the three kinds
                    above, becomes a toxic on each link to it, and toxiproxy-cli works against the API

While it runs, the gateway's address also serves the JSON admin API under /admin/
(faults, load, scenarios, lab 07's game day, the change log; GET /admin/ lists the
routes), Prometheus metrics at /metrics and a live dashboard at / (open it in a
browser). They answer only requests for the gateway's own loopback address and
port, never another site's page.

Every state but the orders and payment's ledger and keys (-data) is in
memory: a restart loses the reviews, and starts with the faults, breakers
and budgets the flags give. Order ids name the run (ord-<start time>-N), so
no restart gives an id again, and a charge's key, made from its order id,
can never meet a key of an earlier run. Memory stays bounded for a system
left running: the 20,000 most recent orders, charges and courier
assignments, the 10,000 most recent reviews and dead letters, idempotency
keys for 24 h; an older order is answered "no longer kept" (order_expired).
On disk (-data) the same 20,000 orders and charges are kept, and at most
%s keys, each for %d h; an evicted or expired key charges again when it
comes back, as the IETF idempotency-key draft allows.

Labs and what each choice plugs:
%s
Examples:
  go run ./cmd/fooddelivery -fault payment=hang -lab 01=solution
  go run ./cmd/fooddelivery -lab all=solution -lab 05=naive -fast
  go run ./cmd/workshop live 05 -fault "payment=error,status=503"
  go run ./cmd/fooddelivery -plan reference -scenario game-day
`

// normalLatencyText says what -latency normal adds.
const normalLatencyText = "payment 60-140 ms with 1% of charges at 700 ms, menu reads 20-50 ms,\n                    estimates 10-30 ms, auth 2-6 ms"

// normalLatencies are -latency normal's rules (faults.Injector.SetBaseline):
// lab 10's platform, by service, so that a fault on an instance or a
// route takes over.
func normalLatencies() []faults.Rule {
	var rules []faults.Rule
	for _, spec := range []string{
		"payment=latency,fixed=60ms,jitter=80ms,tail-p=0.01,tail-latency=700ms",
		"menu=latency,fixed=20ms,jitter=30ms",
		"courier=latency,fixed=10ms,jitter=20ms",
		"auth=latency,fixed=2ms,jitter=4ms",
	} {
		r, err := faults.Parse(spec)
		if err != nil {
			panic(err) // a constant above
		}
		rules = append(rules, r)
	}
	return rules
}

// runPrefix names a run of the system in its order ids ("ord-mbx3k2qa-1"):
// every state is in memory and a restart starts over, so ids must not
// start over with it (an order id keys its charge's idempotency key).
// It is the start time in milliseconds, in base 36.
func runPrefix(start time.Time) string {
	return "ord-" + strconv.FormatInt(start.UnixMilli(), 36) + "-"
}

// thisRun returns the checker's test of an order id given since start:
// one whose runPrefix names a start no earlier than start's (to the
// millisecond; an order process starts after the run begins). An id
// without a run prefix is judged.
func thisRun(start time.Time) func(orderID string) bool {
	return func(id string) bool {
		rest, ok := strings.CutPrefix(id, "ord-")
		stamp, _, ok2 := strings.Cut(rest, "-")
		ms, err := strconv.ParseInt(stamp, 36, 64)
		if !ok || !ok2 || err != nil {
			return true
		}
		return ms >= start.UnixMilli()
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, restore the default behaviour, so a
		// second Ctrl-C ends the process at once.
		<-ctx.Done()
		stop()
	}()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fooddelivery:", err)
		var ue *usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(os.Stderr, "run 'go run ./cmd/fooddelivery -h' for usage")
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError reports bad arguments: main exits 2 for it, 1 for any other
// error.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// options are the parsed flags.
type options struct {
	// allowHosts are -allow-host's names (admin.AllowForwarded).
	allowHosts []string
	addr       string
	faults     []faults.Rule
	seed       int64
	orderLimit int
	fast       bool
	plan       plan
	// game is the game-day plan -plan named ("" for none) and its
	// settings; with one, plan holds the labs it turns on.
	game     string
	gamePlan gameplan.Plan
	load     int
	scenario string
	// processes runs every instance as its own process (-processes);
	// service runs one instance alone (-service), its peers at the
	// addresses in peers (-peer); supervised makes it exit when its
	// standard input closes (-supervised, which -processes passes).
	processes  bool
	service    string
	peers      map[string]string
	supervised bool
	// via are the addresses this process dials its peers through
	// (-via, Toxiproxy's links from -processes); tcpFaults says that
	// Toxiproxy applies the faults on connections (-tcp-faults);
	// links are the listen addresses of -link, by link name, for
	// -service toxiproxy.
	links map[string]string
	// toxiproxy is where -processes serves Toxiproxy's API.
	via       map[string]string
	tcpFaults bool
	toxiproxy string
	// data is the folder of the durable state (-data): payment's ledger
	// and keys; "" is memory (one process) or a temporary folder
	// (-processes).
	data string
	// restartDelay is how long -processes keeps a dead child down.
	restartDelay time.Duration
	// latency is what each service adds to its answers (-latency):
	// "normal" (the normal latencies) or "off".
	latency string
	// traces is how many traces the ring keeps (-traces); 0 is no tracing.
	traces int
	// otlp is where spans are exported to (-otlp), the full URL
	// otlp.Endpoint makes of it; "" exports nothing.
	otlp string
	// logFormat and logLevel are -log and -log-level (logs.New).
	logFormat, logLevel string
	// runStart is when the system's run began (-run-start, from
	// -processes; else when this process began, a minute earlier for a
	// gateway that runs alone, as in compose, whose services start a few
	// seconds apart): the checker judges only the orders given since.
	runStart time.Time
	// container says that this process runs one service in a container
	// on a compose network (-container): it may listen on 0.0.0.0 and
	// find its peers by container name.
	container bool
}

// maxTraces is the most traces -traces keeps: a checkout's trace has
// about 15 spans of 1 to 2 KB (each attribute at most
// tracing.MaxAttributeLength bytes), so 10,000 traces hold about 300 MB.
const maxTraces = 10_000

// faultSpecs collects the repeatable -fault flag. The specs are parsed after
// the flags (parseFlags), so that the error keeps faults.ErrInvalid.
type faultSpecs []string

func (f *faultSpecs) String() string { return strings.Join(*f, " ") }

func (f *faultSpecs) Set(spec string) error {
	*f = append(*f, spec)
	return nil
}

// run starts the system as args say, prints the banner to stdout, and
// stops the system when ctx is done. Bad arguments return a *usageError
// before anything starts; -h prints the usage to stdout and returns nil.
// run writes the banner and a final "stopped" line to stdout, and the
// services' log lines (-log, -log-level) to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opts, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, usage, system.DefaultLimits["order"], normalLatencyText,
			gameplan.Labs(true).Payment.Breaker.OpenFor, gameplan.Labs(false).Payment.Breaker.OpenFor,
			compose.FastDispatchVisibility, compose.DispatchVisibility, loadgen.MaxRate, strings.Join(scenarioNames(), ", "),
			strings.Join(planNames(), ", "),
			supervisor.DefaultRestartDelay, supervisor.DefaultMaxStartupCrashes+1, mirrorEvery, strings.Join(instanceNames(), ", "), supervisor.DefaultRestartDelay,
			fmt.Sprintf("%d,%03d", payment.DefaultMaxKeys/1000, payment.DefaultMaxKeys%1000), int(payment.DefaultKeyTTL.Hours()), usageTable())
		return nil
	}
	if err != nil {
		return err
	}
	if err := allowForwarded(opts, stderr); err != nil {
		return err
	}

	if opts.data != "" {
		if fi, err := os.Stat(opts.data); err != nil || !fi.IsDir() {
			return usagef("-data %s: not a folder this program can use (%v); create it first", opts.data, err)
		}
	}
	if opts.processes {
		return runProcesses(ctx, args, opts, stdout)
	}
	if opts.supervised {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		supervisor.WatchParent(cancel)
	}
	if opts.service == toxiproxyService {
		return serveToxiproxy(ctx, opts, stdout)
	}

	logger, err := logs.New(stderr, opts.logFormat, opts.logLevel)
	if err != nil {
		return &usageError{err}
	}
	tracer, err := newTracer(opts, logger)
	if err != nil {
		return err
	}
	defer stopTracer(tracer, logger)
	// The breakers log their state changes (a line each time one opens,
	// half-opens or closes) on the same logger, so -log and -log-level
	// govern them too.
	w := opts.wire(func(s *compose.Settings) { s.Tracer, s.Logger = tracer, logger })
	w.Cfg.Logger = logger
	w.Cfg.Network = memnet.NewLoopback()
	if opts.container {
		w.Cfg.Network = memnet.NewContainer()
	}
	w.Cfg.GatewayAddr = opts.addr
	if opts.service != "" {
		w.Cfg.Only, w.Cfg.OnlyAddr = opts.service, opts.addr
		for name, addr := range opts.peers {
			if via, ok := opts.via[name]; ok {
				addr = via
			}
			if err := w.Cfg.Network.SetRemote(name, addr, peerHost(opts.container)); err != nil {
				return &usageError{fmt.Errorf("-peer %s=%s: %w", name, addr, err)}
			}
		}
	}
	w.Cfg.Limits["order"] = opts.orderLimit
	w.Cfg.OrderIDPrefix = runPrefix(time.Now())
	w.Cfg.DataDir = opts.data
	var live *gameday.Live
	if opts.game != "" {
		live = gameday.PrepareLive(&w.Cfg) // the game day's capacity, and its auth watch
	}
	sys, err := system.Start(w.Cfg)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("starting the system: %w (is another copy running? pick a port with -addr)", err)
	}
	if err != nil {
		return fmt.Errorf("starting the system: %w", err)
	}
	if opts.tcpFaults {
		sys.Faults.SetTCP()
	}
	if opts.latency == "normal" {
		if err := sys.Faults.SetBaseline(normalLatencies()); err != nil {
			sys.Close()
			return err
		}
	}
	if opts.service != "" {
		sys.Faults.SetCrash(crashNow)
	}
	scale := 1.0
	if opts.fast {
		scale = 0.1
	}
	if opts.service != "" && opts.service != "gateway" {
		err := serveOne(ctx, sys, opts, tracer.Ring(), stdout, stderr)
		sys.Close()
		return err
	}
	if opts.service == "gateway" {
		addSources(sys, opts.peers)
		waitForPeers(ctx, opts.peers, 15*time.Second) // the customers (-load) start once the others listen
	}
	if live != nil {
		live.Attach(sys, w)
	}
	co := controlOptions{seed: opts.seed, load: opts.load, scenario: opts.scenario, scale: scale,
		addr: sys.Network.TCPAddr("gateway"), labs: opts.plan.labLines(), live: live, report: stdout}
	co.tracer = tracer
	co.thisRun = thisRun(opts.runStart)
	if opts.service == "gateway" {
		co.crash = crashPeers(opts.peers)
		co.store = peerStore(opts.peers)
		if tracer != nil {
			co.traces = newPeerTraces(tracer.Ring(), opts.peers)
		}
	}
	c, err := startControls(sys, co, opts.faults, w.GameDay)
	if err != nil {
		sys.Close()
		if errors.Is(err, faults.ErrUnknownTarget) {
			return &usageError{err}
		}
		return err
	}
	if opts.service == "" {
		fmt.Fprint(stdout, banner(sys.GatewayURL(), opts))
	} else {
		// The log lives in this process: after a crash of the gateway it
		// begins again, and says so.
		c.ctl.Log.Add(scenario.KindRestart, "gateway", fmt.Sprintf(
			"gateway's process started (pid %d): this change log and the checker's record of what customers were told begin here", os.Getpid()))
		go watchPeers(ctx, opts.peers, c.ctl.Log)
		fmt.Fprintf(stdout, "gateway listening on %s (pid %d): GraphQL at %s, admin API at %s/admin/\n",
			sys.Network.TCPAddr("gateway"), os.Getpid(), sys.GatewayURL(), strings.TrimSuffix(sys.GatewayURL(), "/graphql"))
	}

	<-ctx.Done()
	c.stop()
	if err := sys.Close(); err != nil {
		return fmt.Errorf("stopping the system: %w", err)
	}
	fmt.Fprintln(stdout, "stopped")
	return nil
}

// parseFlags reads args. It returns flag.ErrHelp for -h and a *usageError
// for anything it cannot use.
func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("fooddelivery", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run prints the usage and main the errors
	var specs faultSpecs
	var labs labFlags
	opts := options{}
	fs.StringVar(&opts.addr, "addr", "127.0.0.1:8080", "")
	var allowHosts peerFlags
	fs.Var(&allowHosts, "allow-host", "")
	fs.Var(&specs, "fault", "")
	fs.Int64Var(&opts.seed, "seed", 1, "")
	fs.IntVar(&opts.orderLimit, "order-limit", system.DefaultLimits["order"], "")
	fs.Var(&labs, "lab", "")
	fs.BoolVar(&opts.fast, "fast", false, "")
	fs.IntVar(&opts.load, "load", 0, "")
	fs.StringVar(&opts.scenario, "scenario", "", "")
	fs.StringVar(&opts.game, "plan", "", "")
	var peers peerFlags
	fs.BoolVar(&opts.processes, "processes", false, "")
	fs.StringVar(&opts.service, "service", "", "")
	fs.Var(&peers, "peer", "")
	fs.BoolVar(&opts.supervised, "supervised", false, "")
	var vias peerFlags
	fs.Var(&vias, "via", "")
	fs.BoolVar(&opts.tcpFaults, "tcp-faults", false, "")
	fs.StringVar(&opts.toxiproxy, "toxiproxy", "127.0.0.1:8474", "")
	fs.StringVar(&opts.data, "data", "", "")
	fs.DurationVar(&opts.restartDelay, "restart-delay", supervisor.DefaultRestartDelay, "")
	fs.BoolVar(&opts.container, "container", false, "")
	fs.StringVar(&opts.latency, "latency", "normal", "")
	fs.IntVar(&opts.traces, "traces", tracing.DefaultTraces, "")
	fs.StringVar(&opts.otlp, "otlp", "", "")
	fs.StringVar(&opts.logFormat, "log", logs.FormatJSON, "")
	fs.StringVar(&opts.logLevel, "log-level", "warn", "")
	runStartMs := fs.Int64("run-start", 0, "")
	var linkSpecs peerFlags
	fs.Var(&linkSpecs, "link", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return options{}, err
		}
		return options{}, &usageError{err}
	}
	if fs.NArg() > 0 {
		return options{}, usagef("unexpected argument %q: every setting is a flag", fs.Arg(0))
	}
	addrSet, toxiproxySet := false, false
	fs.Visit(func(f *flag.Flag) {
		addrSet = addrSet || f.Name == "addr"
		toxiproxySet = toxiproxySet || f.Name == "toxiproxy"
	})
	if toxiproxySet && !opts.processes && opts.service == "" {
		return options{}, usagef("-toxiproxy %s: Toxiproxy runs with -processes (or as -service %s); in one process the faults act inside the services", opts.toxiproxy, toxiproxyService)
	}
	if opts.service != "" && opts.service != "gateway" && !addrSet {
		opts.addr = "127.0.0.1:0"
	}
	if opts.latency != "normal" && opts.latency != "off" {
		return options{}, usagef("-latency %s: normal (each service answers in its usual time: %s) or off (at once)", fooddelivery.Quote(opts.latency), normalLatencyText)
	}
	switch {
	case *runStartMs < 0:
		return options{}, usagef("-run-start %d: give the run's start in Unix milliseconds (-processes gives it)", *runStartMs)
	case *runStartMs > 0:
		opts.runStart = time.UnixMilli(*runStartMs)
	case opts.service == "gateway":
		opts.runStart = time.Now().Add(-time.Minute)
	default:
		opts.runStart = time.Now()
	}
	if _, err := logs.New(io.Discard, opts.logFormat, opts.logLevel); err != nil {
		return options{}, usagef("-log %s -log-level %s: %v", opts.logFormat, opts.logLevel, err)
	}
	if opts.traces < 0 || opts.traces > maxTraces {
		return options{}, usagef("-traces %d: keep 0 (no tracing) to %d traces", opts.traces, maxTraces)
	}
	otlpSet := false
	fs.Visit(func(f *flag.Flag) { otlpSet = otlpSet || f.Name == "otlp" })
	if otlpSet {
		full, err := otlp.Endpoint(opts.otlp)
		if err != nil {
			return options{}, usagef("-otlp %w", err)
		}
		if opts.traces == 0 {
			return options{}, usagef("-otlp %s with -traces 0: -traces 0 turns tracing off, so there would be no spans to send; drop -traces 0", opts.otlp)
		}
		opts.otlp = full
	}
	if opts.container && opts.service == "" {
		return options{}, usagef("-container runs one service in a container: add -service NAME (compose.yaml gives each container its own)")
	}
	if host, _, err := net.SplitHostPort(opts.addr); !(opts.container && err == nil && host == "0.0.0.0") {
		if err := checkLoopback(opts.addr); err != nil {
			return options{}, err
		}
	}
	if opts.service != "" && opts.service != toxiproxyService && !slices.Contains(instanceNames(), opts.service) {
		return options{}, usagef("-service %s: the system has no instance %s; instances are %s (and %s, the links' proxies)",
			fooddelivery.Quote(opts.service), fooddelivery.Quote(opts.service), strings.Join(instanceNames(), ", "), toxiproxyService)
	}
	links, err := parseLinks(linkSpecs, opts.service, opts.container)
	if err != nil {
		return options{}, err
	}
	opts.links = links
	if opts.restartDelay <= 0 || opts.restartDelay > time.Minute {
		return options{}, usagef("-restart-delay %v: give a duration from 1ms to 1m", opts.restartDelay)
	}
	if opts.processes && opts.service != "" {
		return options{}, usagef("-processes and -service %s: -processes starts every service as its own process (each with -service); give one of the two", opts.service)
	}
	if len(peers) > 0 && opts.service == "" {
		return options{}, usagef("-peer says where another process's service listens, for a process that runs one service: add -service NAME")
	}
	peerAddrs, err := parsePeers("-peer", peers, opts.container)
	if err != nil {
		return options{}, err
	}
	opts.peers = peerAddrs
	opts.allowHosts = allowHosts
	if len(vias) > 0 && opts.service == "" {
		return options{}, usagef("-via says where to dial another process's service, for a process that runs one service: add -service NAME")
	}
	if opts.via, err = parsePeers("-via", vias, opts.container); err != nil {
		return options{}, err
	}
	for name := range opts.via {
		if _, ok := opts.peers[name]; !ok {
			return options{}, usagef("-via %s=%s: give %s's own address with -peer too (the admin API and the counters are read there)", name, opts.via[name], name)
		}
	}
	if _, self := opts.peers[opts.service]; self {
		return options{}, usagef("-peer %s=%s: that is this process's own service (-service %s listens on -addr)", opts.service, opts.peers[opts.service], opts.service)
	}
	if opts.orderLimit < 0 {
		return options{}, usagef("-order-limit %d: the limit must be 0 (unlimited) or more", opts.orderLimit)
	}
	if opts.load < 0 || opts.load > loadgen.MaxRate {
		return options{}, usagef("-load %d: the rate is requests a second, 0 to %d", opts.load, loadgen.MaxRate)
	}
	if opts.scenario != "" && !slices.Contains(scenarioNames(), opts.scenario) {
		return options{}, usagef("-scenario %s: no such scenario; the scenarios are %s", fooddelivery.Quote(opts.scenario), strings.Join(scenarioNames(), ", "))
	}
	if opts.scenario == "payment-crash" && !opts.processes && opts.service == "" {
		return options{}, usagef("-scenario payment-crash kills payment's process in the middle of charges, which only -processes runs apart: add -processes")
	}
	if opts.scenario == gameday.LiveName && opts.game == "" {
		return options{}, usagef("-scenario %s plays lab 10's game day, which needs a plan: add -plan reference, or run your plan with go run ./cmd/workshop live 10 -scenario %s",
			gameday.LiveName, gameday.LiveName)
	}
	if opts.game != "" {
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "order-limit" })
		if set {
			return options{}, usagef("-plan %s and -order-limit: a game-day plan runs on the game day's platform, whose capacity is fixed (the order service serves %d requests at once)",
				opts.game, gameday.Capacity["order"])
		}
	}
	p, err := resolve(labs, compose.HaveLearner)
	if err != nil {
		return options{}, err
	}
	opts.plan = p
	if opts.game != "" {
		for _, v := range labs {
			if !strings.HasSuffix(v, "=learner") {
				return options{}, usagef("-plan %s and -lab %s: a plan says what runs at every lab's integration point; give one of the two "+
					"(-lab NN=learner may stay: a plan runs the learner code that is built in)", opts.game, v)
			}
		}
		gp, err := lookupPlan(opts.game)
		if err != nil {
			return options{}, err
		}
		opts.gamePlan = gp
		opts.plan = planLabs(gp)
	}
	for _, spec := range specs {
		r, err := faults.Parse(spec)
		if err != nil {
			return options{}, &usageError{fmt.Errorf("-fault: %w", err)}
		}
		if !knownService(r.Service) {
			return options{}, usagef("-fault %s: the system has no service %q; services are %s",
				spec, r.Service, strings.Join(serviceNames(), ", "))
		}
		for _, prev := range opts.faults {
			if prev.Service == r.Service && prev.Route == r.Route {
				return options{}, usagef("-fault %s: %s already has a fault (-fault %s); one rule per service and route",
					spec, strings.TrimSpace(r.Service+" "+r.Route), prev)
			}
		}
		opts.faults = append(opts.faults, r)
	}
	return opts, nil
}

// checkLoopback refuses a gateway address that is not on a loopback
// interface: the system has no authentication worth the name and takes
// fault rules from its command line, so it never listens on a network.
func checkLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("-addr %q: want host:port, for example 127.0.0.1:8080", addr)
	}
	// Only the names the admin guard accepts: another loopback address
	// (127.0.0.2) would serve GraphQL but refuse its own admin pages.
	if host != "127.0.0.1" && host != "localhost" && host != "::1" {
		return usagef("-addr %s: the system listens on loopback only; use 127.0.0.1:PORT, localhost:PORT or [::1]:PORT", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return usagef("-addr %s: the port must be a number from 0 (any free port) to 65535", addr)
	}
	return nil
}

// menuReplicas is the number of menu instances run starts
// (system.Config.MenuReplicas); -fault rules may name each of them.
const menuReplicas = compose.MenuReplicas

// serviceNames lists the names a -fault rule may target: every service and
// every menu replica.
func serviceNames() []string {
	var names []string
	for name := range system.DefaultLimits {
		names = append(names, name)
	}
	for i := range menuReplicas {
		names = append(names, fmt.Sprintf("menu-%d", i+1))
	}
	slices.Sort(names)
	return names
}

func knownService(name string) bool { return slices.Contains(serviceNames(), name) }

// speed says what -fast changed.
func speed(fast bool) string {
	if !fast {
		return "as the labs teach (-fast shortens the waits)"
	}
	return fmt.Sprintf("-fast: breakers open for %v, the dispatch queue redelivers after %v", gameplan.Labs(true).Payment.Breaker.OpenFor, compose.FastDispatchVisibility)
}

// builtIn says which labs' learner code this build has.
func builtIn() string {
	var labs, tags []string
	for n := 1; n <= 9; n++ {
		if compose.HaveLearner(n) {
			labs = append(labs, row(n).id())
			tags = append(tags, "learner"+row(n).id())
		}
	}
	if len(labs) == 0 {
		return "none built in (go run ./cmd/workshop live NN builds yours in)"
	}
	return fmt.Sprintf("labs %s (tags %s)", strings.Join(labs, ", "), strings.Join(tags, ","))
}

// allowEnv names the environment variable that gives -allow-host's
// default: the dev container sets it to the Codespace's forwarded host.
const allowEnv = "FOODDELIVERY_ALLOW_HOST"

// allowForwarded allows the forwarded hosts of -allow-host, or else of
// allowEnv, beside loopback (admin.AllowForwarded). A bad -allow-host
// is a usage error; a bad allowEnv (a dev container outside a Codespace
// leaves its parts empty) allows nothing more and says so on stderr.
func allowForwarded(opts options, stderr io.Writer) error {
	if len(opts.allowHosts) > 0 {
		if err := admin.AllowForwarded(opts.allowHosts...); err != nil {
			return usagef("-allow-host: %v", err)
		}
		return nil
	}
	v := strings.TrimSpace(os.Getenv(allowEnv))
	if v == "" {
		return nil
	}
	if err := admin.AllowForwarded(v); err != nil {
		fmt.Fprintf(stderr, "%s=%q is no host name (%v): the pages answer on loopback only\n", allowEnv, v, err)
		return nil
	}
	return nil
}

// banner is what run prints once the system is up: where it listens, how it
// is configured, and requests to paste into another terminal.
func banner(url string, opts options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "food-delivery system running on 127.0.0.1 (gateway, auth, order, payment, courier, menu-1..menu-%d)\n\n", menuReplicas)
	fmt.Fprintf(&b, "GraphQL endpoint: %s\n", url)
	limit := fmt.Sprint(opts.orderLimit)
	if opts.orderLimit == 0 {
		limit = "unlimited"
	}
	fmt.Fprintf(&b, "order workers:    %s (-order-limit)\n", limit)
	fmt.Fprintf(&b, "demo speed:       %s\n", speed(opts.fast))
	if opts.game != "" {
		fmt.Fprintf(&b, "game-day plan:    %s (-plan): each lab it turns on runs with the plan's settings\n", opts.game)
	}
	b.WriteString("labs (-lab NN=off|naive|solution|learner; see -h):\n")
	for _, line := range opts.plan.labLines() {
		b.WriteString(line + "\n")
	}
	fmt.Fprintf(&b, "learner code:     %s\n", builtIn())
	if len(opts.faults) == 0 {
		fmt.Fprintf(&b, "faults:           none (add some with -fault, see -h)\n")
	} else {
		fmt.Fprintf(&b, "faults:           seed %d\n", opts.seed)
		for _, r := range opts.faults {
			fmt.Fprintf(&b, "  -fault \"%s\"\n", r)
		}
	}

	base := strings.TrimSuffix(url, "/graphql")
	fmt.Fprintf(&b, "customers:        %d requests a second (-load; go run ./cmd/workshop admin -addr %s load N changes it)\n", opts.load, strings.TrimPrefix(base, "http://"))
	if opts.scenario != "" {
		fmt.Fprintf(&b, "scenario:         %s (GET %s/admin/scenario shows its progress)\n", opts.scenario, base)
	}
	fmt.Fprintf(&b, "admin API:        %s/admin/  (faults, load, scenarios, game day, change log;\n"+
		"                  go run ./cmd/workshop admin sends changes without quoting JSON)\n", base)
	fmt.Fprintf(&b, "metrics:          %s/metrics (Prometheus)\n", base)
	if opts.otlp != "" {
		fmt.Fprintf(&b, "traces export:    %s (-otlp: OTLP/HTTP, every span, in batches)\n", opts.otlp)
	}
	fmt.Fprintf(&b, "GraphQL IDE:      %s in a browser (GraphiQL: schema docs, autocompletion; works offline)\n", url)
	fmt.Fprintf(&b, "dashboard:        %s/ (open it in a browser: the system live, with controls)\n", base)
	for _, h := range admin.Forwarded() {
		fmt.Fprintf(&b, "forwarded host:   https://%s/ answers too (-allow-host or %s)\n", h, allowEnv)
	}

	// GET examples in double quotes, with the GraphQL written without
	// spaces or quotes (commas separate fields, %22 is a double quote):
	// they paste unchanged into bash, PowerShell and cmd.exe.
	get := func(comment, query string) {
		fmt.Fprintf(&b, "\n# %s\ncurl -sg \"%s?query=%s\"\n", comment, url, query)
	}
	b.WriteString("\nTry it from another terminal (in Windows PowerShell, type curl.exe):\n")
	get("every restaurant", "{restaurants{id,name,cuisine}}")
	get("one menu with the delivery estimate",
		fmt.Sprintf("{restaurant(id:%%22%s%%22){name,menu{id,name,priceCents},eta}}", system.SampleRestaurant))
	get("the home page: restaurants, menus and ETAs in one query",
		"{home{restaurants{name,menu{name,priceCents},eta},recommendations{name}}}")
	fmt.Fprintf(&b, "\n# what the system counts, and what the admin API can change\ncurl -s \"%s/metrics\"\ncurl -s \"%s/admin/\"\n", base, base)
	fmt.Fprintf(&b, "\n# place and pay for an order as alice (bash; mutations are POST only)\n"+
		"curl -sS %s -H 'Content-Type: application/json' -H 'Authorization: Bearer %s' \\\n  -d '{\"query\":\"%s\"}'\n",
		url, system.SampleToken, strings.ReplaceAll(fmt.Sprintf(`mutation { placeOrder(input: {restaurantId: "%s", items: [{dishId: "%s", quantity: 2}], card: "tok_visa"}) { id status totalCents courierId } }`,
			system.SampleRestaurant, system.SampleDish), `"`, `\"`))
	b.WriteString("\nPress Ctrl-C to stop.\n")
	return b.String()
}

// scenarioNames lists the scripted incidents -scenario may name.
func scenarioNames() []string {
	var names []string
	for _, sc := range scenario.Builtin() {
		names = append(names, sc.Name)
	}
	names = append(names, gameday.LiveName)
	return names
}
