package doctor

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/gophereats/resilience/cmd/workshop/internal/repo"
	"github.com/gophereats/resilience/cmd/workshop/internal/term"
)

// DefaultAddr is the gateway's address when the system runs without -addr,
// as in cmd/fooddelivery.
const DefaultAddr = "127.0.0.1:8080"

// Options are doctor's flags.
type Options struct {
	// Addr is the gateway's address whose port must be free (host:port);
	// DefaultAddr when empty.
	Addr string
}

// ParseFlags reads doctor's arguments: [-addr host:port]. It returns a
// repo.UsageError for anything else.
func ParseFlags(args []string) (Options, error) {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o Options
	fs.StringVar(&o.Addr, "addr", DefaultAddr, "the gateway's `address`")
	if err := fs.Parse(args); err != nil {
		return o, repo.BadUsage("doctor: %v (doctor [-addr host:port])", err)
	}
	if fs.NArg() > 0 {
		return o, repo.BadUsage("doctor takes no arguments but -addr, got %q", strings.Join(fs.Args(), " "))
	}
	if err := checkAddr(o.Addr); err != nil {
		return o, repo.BadUsage("doctor -addr %q: %v", o.Addr, err)
	}
	return o, nil
}

// checkAddr says what is wrong with a gateway address, as the system
// would refuse it: a loopback host (127.0.0.1, ::1 or localhost) and a
// port from 1 to 65535.
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port on loopback, as in 127.0.0.1:8080 (%v)", err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("the port %q is not a number from 1 to 65535", port)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("the system serves on loopback only: give 127.0.0.1, [::1] or localhost, not %q", host)
	}
	return nil
}

// verdict is one check's outcome.
type verdict int

const (
	passed  verdict = iota
	warned          // the workshop runs, with less (no -race, another port)
	failing         // the workshop cannot run until it is fixed
	skipped         // not tried, because of a failure above (not counted)
)

// label is how a verdict starts its line.
func (v verdict) label() string {
	return [...]string{"ok  ", "warn", "FAIL", "skip"}[v]
}

// report prints the checks' lines and counts their verdicts.
type report struct {
	w                *term.Progress
	warnings, faults int
}

// line prints one check: its verdict, what it checked and what it found,
// then, when fix is not empty, the fix on the next line.
func (r *report) line(v verdict, what, found, fix string) {
	switch v {
	case warned:
		r.warnings++
	case failing:
		r.faults++
	}
	fmt.Fprintf(r.w, "  %s  %s: %s\n", v.label(), what, found)
	if fix != "" {
		fmt.Fprintf(r.w, "        fix: %s\n", fix)
	}
}

// Doctor checks this machine for the workshop, one line per check (ok,
// warn or FAIL, with the fix under each that is not ok), in this order:
//
//   - Go: the local go command's version against go.mod's go line
//     (FAIL when the go command runs an older one or does not run, with
//     GOTOOLCHAIN named when it is set; warn when it runs a newer
//     toolchain it downloaded because the installed Go is older), and FAIL
//     when GOFLAGS asks for -mod=vendor or a go.work file (GOWORK) decides
//     the modules; the checks that need the go command are skipped then;
//   - modules: every module go.mod requires is in the module cache, asked
//     with GOPROXY=off (go mod download -json), and the module's packages
//     and tests load offline (go list -deps -test ./...);
//   - C compiler: cgo on and the compiler CC names on PATH, so that check
//     and verify use the race detector (warn: they run without it; FAIL
//     when cgo is on but CC is not there, since nothing would build);
//   - port: opts.Addr can be listened on (warn: start the system with
//     -addr);
//   - disk: the free bytes where the build cache lives (FAIL under
//     minFreeBytes, warn under lowFreeBytes);
//   - build: every lab's tests built and run once, as status does (their
//     results go to status's cache; a lab of the learner's that does not
//     compile is a warning), then the tool and the system built (go build
//     ./cmd/... ./fooddelivery/...), and the labs' tests built with -race
//     when it is available; skipped (not counted) after any failure.
//
// opts.Addr must be a loopback host:port (ParseFlags checks it). It returns
// repo.ErrFailed, after a last line saying so, when a check failed;
// warnings alone return nil; the context's error, after a line saying
// doctor did not finish, when it ended.
func Doctor(ctx context.Context, ws *repo.Workspace, opts Options) error {
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	r := &report{w: term.New(ws.Stdout)}
	fmt.Fprintf(r.w, "Checking this machine for the workshop in %s\n", ws.Root)
	goOK := checkGo(ctx, ws, r)
	modulesOK, race := false, false
	if goOK {
		modulesOK = checkModules(ctx, ws, r)
		race = checkCompiler(ctx, ws, r)
	} else {
		r.line(skipped, "modules and C compiler", "not checked: they need a go command that runs", "")
	}
	checkPort(r, opts.Addr)
	if goOK {
		checkDisk(ctx, ws, r)
	}
	if ctx.Err() != nil {
		return interrupted(r, ctx.Err())
	}
	if goOK && modulesOK && r.faults == 0 {
		if err := build(ctx, ws, r, race); err != nil {
			return interrupted(r, err)
		}
	} else {
		r.line(skipped, "build", "not tried: the labs cannot build until the problems above are fixed", "")
	}
	fmt.Fprintln(r.w)
	switch {
	case r.faults > 0:
		fmt.Fprintf(r.w, "Not ready: %s above. Fix %s and run go run ./cmd/workshop doctor again.\n",
			count(r.faults, "problem"), them(r.faults))
		return repo.ErrFailed
	case r.warnings > 0:
		fmt.Fprintf(r.w, "Ready, with %s above. Start with: go run ./cmd/workshop\n", count(r.warnings, "warning"))
	default:
		fmt.Fprintln(r.w, "Ready: everything the workshop needs is here and built. Start with: go run ./cmd/workshop")
	}
	return nil
}

// interrupted ends the report of a run stopped by Ctrl-C.
func interrupted(r *report, err error) error {
	r.w.Stop()
	fmt.Fprintln(r.w)
	fmt.Fprintln(r.w, "Interrupted: doctor did not finish. Run go run ./cmd/workshop doctor again; what it built so far is kept.")
	return err
}

// count writes "1 problem" or "3 problems".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// them is "it" or "them".
func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}
