// Command fooddelivery runs the whole food-delivery system on 127.0.0.1 so
// that people and real clients (curl, a browser, a load generator) can send
// it requests, inject faults and watch a cascade happen.
//
//	go run ./cmd/fooddelivery                              a healthy system on 127.0.0.1:8080
//	go run ./cmd/fooddelivery -fault payment=hang          every charge hangs: checkouts wait 30s and fail
//	go run ./cmd/fooddelivery -fault payment=hang -lab solution
//	                                                       the same, with lab 01's reference payment client (2s timeout)
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
	"strings"
	"syscall"

	"github.com/gophereats/resilience/fooddelivery/faults"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/system"
)

const usage = `usage: go run ./cmd/fooddelivery [flags]

Runs the food-delivery system (gateway, auth, order, payment, courier and
three menu replicas) on 127.0.0.1 and prints the GraphQL URL with curl
examples. Ctrl-C stops it.

Flags:
  -addr host:port   where the gateway listens; loopback only (default 127.0.0.1:8080;
                    127.0.0.1:0 picks a free port)
  -fault spec       inject a fault, repeatable: service[:route]=kind[,key=value...]
                    kinds: latency, tail, hang, error, reset, slowbody, lose, refuse, blackhole
                    examples: -fault payment=hang              every charge hangs (at most 30s)
                              -fault payment=hang,max=5s       ... at most 5s
                              -fault 'payment:POST /charges=error,status=503,p=0.5'
                              -fault menu=latency,fixed=200ms,jitter=100ms
                              -fault courier=refuse
  -seed n           seed of the faults' random draws; the same seed gives the same faults (default 1)
  -order-limit n    concurrent requests one order service instance accepts before it
                    rejects; 0 means unlimited (default %d)
  -lab name         the payment client the order service uses:
                      naive     no timeout at all, so a hung payment holds the checkout (default)
                      solution  solutions/01-timeouts: the whole call bounded by %v
                      learner   your labs/01-timeouts code, bounded by %v; needs the build tag:
                                go run -tags learner ./cmd/fooddelivery -lab learner
`

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
	addr       string
	faults     []faults.Rule
	seed       int64
	orderLimit int
	lab        paymentLab
}

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
// run writes only the banner and a final "stopped" line (both to stdout);
// stderr is part of the signature for diagnostics and unused today.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opts, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, usage, system.DefaultLimits["order"], paymentBudget, paymentBudget)
		return nil
	}
	if err != nil {
		return err
	}

	sys, err := system.Start(system.Config{
		Seed:          opts.seed,
		Network:       memnet.NewLoopback(),
		GatewayAddr:   opts.addr,
		MenuReplicas:  menuReplicas,
		Limits:        map[string]int{"order": opts.orderLimit},
		PaymentClient: opts.lab.client,
	})
	if err != nil {
		return fmt.Errorf("starting the system: %w (is another copy running? pick a port with -addr)", err)
	}
	for _, r := range opts.faults {
		if err := sys.Faults.Set(r.Service, r.Route, r.Fault); err != nil {
			sys.Close()
			return fmt.Errorf("setting -fault %s: %w", r, err)
		}
	}
	fmt.Fprint(stdout, banner(sys.GatewayURL(), opts))

	<-ctx.Done()
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
	var labName string
	opts := options{}
	fs.StringVar(&opts.addr, "addr", "127.0.0.1:8080", "")
	fs.Var(&specs, "fault", "")
	fs.Int64Var(&opts.seed, "seed", 1, "")
	fs.IntVar(&opts.orderLimit, "order-limit", system.DefaultLimits["order"], "")
	fs.StringVar(&labName, "lab", "naive", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return options{}, err
		}
		return options{}, &usageError{err}
	}
	if fs.NArg() > 0 {
		return options{}, usagef("unexpected argument %q: every setting is a flag", fs.Arg(0))
	}
	if err := checkLoopback(opts.addr); err != nil {
		return options{}, err
	}
	if opts.orderLimit < 0 {
		return options{}, usagef("-order-limit %d: the limit must be 0 (unlimited) or more", opts.orderLimit)
	}
	lab, err := findLab(labName)
	if err != nil {
		return options{}, err
	}
	opts.lab = lab
	for _, spec := range specs {
		r, err := faults.Parse(spec)
		if err != nil {
			return options{}, &usageError{fmt.Errorf("-fault: %w", err)}
		}
		if !knownService(r.Service) {
			return options{}, usagef("-fault %s: the system has no service %q; services are %s",
				spec, r.Service, strings.Join(serviceNames(), ", "))
		}
		opts.faults = append(opts.faults, r)
	}
	return opts, nil
}

// checkLoopback refuses a gateway address that is not on a loopback
// interface: the system has no authentication worth the name and takes
// fault rules from its command line, so it never listens on a network.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("-addr %q: want host:port, for example 127.0.0.1:8080", addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usagef("-addr %s: the system listens on loopback only; use 127.0.0.1:PORT (or [::1]:PORT)", addr)
	}
	return nil
}

// menuReplicas is the number of menu instances run starts
// (system.Config.MenuReplicas); -fault rules may name each of them.
const menuReplicas = 3

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

// banner is what run prints once the system is up: where it listens, how it
// is configured, and requests to paste into another terminal.
func banner(url string, opts options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "food-delivery system running on 127.0.0.1 (gateway, auth, order, payment, courier, menu-1..menu-%d)\n\n", menuReplicas)
	fmt.Fprintf(&b, "GraphQL endpoint: %s\n", url)
	fmt.Fprintf(&b, "payment client:   -lab %s (%s)\n", opts.lab.name, opts.lab.about)
	limit := fmt.Sprint(opts.orderLimit)
	if opts.orderLimit == 0 {
		limit = "unlimited"
	}
	fmt.Fprintf(&b, "order workers:    %s (-order-limit)\n", limit)
	if len(opts.faults) == 0 {
		fmt.Fprintf(&b, "faults:           none (add some with -fault, see -h)\n")
	} else {
		fmt.Fprintf(&b, "faults:           seed %d\n", opts.seed)
		for _, r := range opts.faults {
			fmt.Fprintf(&b, "  -fault '%s'\n", r)
		}
	}

	post := func(comment, token, query string) {
		fmt.Fprintf(&b, "\n# %s\ncurl -sS %s -H 'Content-Type: application/json'", comment, url)
		if token != "" {
			fmt.Fprintf(&b, " -H 'Authorization: Bearer %s'", token)
		}
		// The GraphQL text goes inside a JSON string inside single quotes:
		// its double quotes become \" and nothing else needs escaping.
		fmt.Fprintf(&b, " \\\n  -d '{\"query\":\"%s\"}'\n", strings.ReplaceAll(query, `"`, `\"`))
	}
	b.WriteString("\nTry it from another terminal:\n")
	post("every restaurant", "", `{ restaurants { id name cuisine } }`)
	post("one menu with the delivery estimate", "",
		fmt.Sprintf(`{ restaurant(id: "%s") { name menu { id name priceCents } eta } }`, system.SampleRestaurant))
	post("the home page: restaurants, menus and ETAs in one query", "",
		`{ home { restaurants { name menu { name priceCents } eta } recommendations { name } } }`)
	post("place and pay for an order as alice (a fault on payment shows here)", system.SampleToken,
		fmt.Sprintf(`mutation { placeOrder(input: {restaurantId: "%s", items: [{dishId: "%s", quantity: 2}], card: "tok_visa"}) { id status totalCents courierId } }`,
			system.SampleRestaurant, system.SampleDish))
	b.WriteString("\nPress Ctrl-C to stop.\n")
	return b.String()
}
