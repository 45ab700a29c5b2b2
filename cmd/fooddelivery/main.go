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
  -fast             shorten the settings that make a demo wait: the breaker's open period
                    (%v instead of %v) and the dispatch queue's visibility timeout (%v instead of %v)

Labs and what each choice plugs:
%s
Examples:
  go run ./cmd/fooddelivery -fault payment=hang -lab 01=solution
  go run ./cmd/fooddelivery -lab all=solution -lab 05=naive -fast
  go run ./cmd/workshop live 05 -fault "payment=error,status=503"
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
	fast       bool
	plan       plan
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
		fmt.Fprintf(stdout, usage, system.DefaultLimits["order"], fastOpenFor, breakerOpenFor,
			fastDispatchVisibility, dispatchVisibility, usageTable())
		return nil
	}
	if err != nil {
		return err
	}

	w := wire(opts.plan, settings{seed: opts.seed, fast: opts.fast})
	w.cfg.Network = memnet.NewLoopback()
	w.cfg.GatewayAddr = opts.addr
	w.cfg.Limits["order"] = opts.orderLimit
	sys, err := system.Start(w.cfg)
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
	var labs labFlags
	opts := options{}
	fs.StringVar(&opts.addr, "addr", "127.0.0.1:8080", "")
	fs.Var(&specs, "fault", "")
	fs.Int64Var(&opts.seed, "seed", 1, "")
	fs.IntVar(&opts.orderLimit, "order-limit", system.DefaultLimits["order"], "")
	fs.Var(&labs, "lab", "")
	fs.BoolVar(&opts.fast, "fast", false, "")
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
	p, err := resolve(labs, haveLearner)
	if err != nil {
		return options{}, err
	}
	opts.plan = p
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

// speed says what -fast changed.
func speed(fast bool) string {
	if !fast {
		return "as the labs teach (-fast shortens the waits)"
	}
	return fmt.Sprintf("-fast: breakers open for %v, the dispatch queue redelivers after %v", fastOpenFor, fastDispatchVisibility)
}

// builtIn says which labs' learner code this build has.
func builtIn() string {
	var labs, tags []string
	for n := 1; n <= 9; n++ {
		if haveLearner(n) {
			labs = append(labs, row(n).id())
			tags = append(tags, "learner"+row(n).id())
		}
	}
	if len(labs) == 0 {
		return "none built in (go run ./cmd/workshop live NN builds yours in)"
	}
	return fmt.Sprintf("labs %s (tags %s)", strings.Join(labs, ", "), strings.Join(tags, ","))
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
