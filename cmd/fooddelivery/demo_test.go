package main

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/dashboard"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/loadgen"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
	"github.com/gophereats/resilience/internal/compose"
)

// The ten-minute live demo of the instructor's guide (docs/instructors.md),
// played step by step on memnet in fake time with the guide's command
// line, fault and scenario, and read
// off the dashboard the room watches (a dashboard.Dashboard sampled once a
// second, as the page's stream is): each step prints its promise and the
// figures measured, and fails when the picture does not show what the
// guide promises.
//
//	go test -run Demo -v ./cmd/fooddelivery/

// demoPlay is one step as the instructor runs it.
type demoPlay struct {
	args     []string        // the command line after `go run ./cmd/fooddelivery`
	fault    string          // added from the controls panel at demoWarmUp; "" for none
	scenario string          // started at demoWarmUp; "" for none
	clearAt  time.Duration   // every fault removed at; 0 for never
	length   time.Duration   // how long the step runs, from the start
	tracer   *tracing.Tracer // traces the system when set, as cmd/fooddelivery does by default
}

// demoWarmUp is how long the customers run before the step's fault.
const demoWarmUp = 10 * time.Second

// demoFrame is what the page showed at one second of a step.
type demoFrame struct {
	at    time.Duration
	f     *dashboard.Frame
	stats loadgen.Stats
}

// edge returns the frame's edge name.
func (d demoFrame) edge(name string) dashboard.Edge {
	for _, e := range d.f.Edges {
		if e.Edge == name {
			return e
		}
	}
	return dashboard.Edge{}
}

// node returns the frame's node name.
func (d demoFrame) node(name string) dashboard.Node {
	for _, n := range d.f.Nodes {
		if n.Name == name {
			return n
		}
	}
	return dashboard.Node{}
}

// breaker returns the state of breaker name, "" for none.
func (d demoFrame) breaker(name string) string {
	for _, b := range d.f.Breakers {
		if b.Name == name {
			return b.State
		}
	}
	return ""
}

// playDemo runs the system as the binary does with p.args, its customers
// and a dashboard, and returns one frame a second.
func playDemo(t *testing.T, p demoPlay) []demoFrame {
	t.Helper()
	var frames []demoFrame
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // see runSystem
	labtest.Run(t, labtest.Options{
		Leak:  "a request of the customers or of the system outlived the step",
		Stuck: "the step never ended",
	}, func(t *testing.T) {
		opts, err := parseFlags(p.args)
		require.NoError(t, err, "the guide's command line")
		w := opts.wire(func(s *compose.Settings) { s.Logger, s.Tracer = quiet, p.tracer })
		w.Cfg.Limits["order"] = opts.orderLimit
		sys := labtest.StartSystem(t, w.Cfg)
		scale := 1.0
		if opts.fast {
			scale = 0.1
		}
		c, err := startControls(sys, controlOptions{seed: opts.seed, load: opts.load, scale: scale, client: sys.HTTPClient()}, opts.faults, w.GameDay)
		require.NoError(t, err)
		defer func() {
			// The instructor's cleanup: faults off, customers stopped,
			// and time for what still hangs (30 s at most) to end.
			c.ctl.ClearFaults("instructor")
			c.stop()
			time.Sleep(31 * time.Second)
		}()
		d := dashboard.New(dashboard.Config{Metrics: sys.Metrics, Load: c.gen.Stats})
		start := time.Now()
		for at := time.Duration(0); at <= p.length; at += time.Second {
			time.Sleep(time.Until(start.Add(at)))
			if at == demoWarmUp {
				if p.fault != "" {
					_, err := c.ctl.AddFault("instructor", p.fault)
					require.NoError(t, err)
				}
				if p.scenario != "" {
					require.NoError(t, c.runner.Start(p.scenario))
				}
			}
			if p.clearAt > 0 && at == p.clearAt {
				c.ctl.ClearFaults("instructor")
			}
			synctest.Wait()
			frames = append(frames, demoFrame{at: at, f: d.Sample(), stats: c.gen.Stats()})
		}
	})
	return frames
}

// demoReport collects one step's promise and figures for the log, and
// its broken promises as errors.
type demoReport struct {
	t     *testing.T
	step  string
	lines []string
}

func newDemoReport(t *testing.T, step, promise string) *demoReport {
	return &demoReport{t: t, step: step, lines: []string{step + ": " + promise}}
}

// measured logs a figure.
func (r *demoReport) measured(format string, args ...any) {
	r.lines = append(r.lines, "    measured: "+fmt.Sprintf(format, args...))
}

// holds checks one promise: when ok is false the step fails with it.
func (r *demoReport) holds(ok bool, promise string, format string, args ...any) {
	mark := "ok  "
	if !ok {
		mark = "FAIL"
		r.t.Errorf("%s: the guide promises %s, but %s", r.step, promise, fmt.Sprintf(format, args...))
	}
	r.lines = append(r.lines, fmt.Sprintf("    %s %s: %s", mark, promise, fmt.Sprintf(format, args...)))
}

func (r *demoReport) log() { r.t.Log("\n" + strings.Join(r.lines, "\n")) }

// first returns the first frame at or after from for which ok holds, and
// whether there was one.
func first(frames []demoFrame, from time.Duration, ok func(demoFrame) bool) (demoFrame, bool) {
	for _, f := range frames {
		if f.at >= from && ok(f) {
			return f, true
		}
	}
	return demoFrame{}, false
}

// last returns the last frame.
func last(frames []demoFrame) demoFrame { return frames[len(frames)-1] }

func pct(v *float64) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprintf("%.0f%%", *v*100)
}

func secs(v *float64) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprintf("%.3fs", *v)
}

// between is what the customers of the actions met from frame a to b.
func between(a, b demoFrame, actions ...string) outcome {
	return since(mark{stats: a.stats}, mark{stats: b.stats}, actions...)
}

// frameAt returns the frame at d.
func frameAt(frames []demoFrame, d time.Duration) demoFrame {
	f, _ := first(frames, d, func(demoFrame) bool { return true })
	return f
}

func TestDemoStep1ACascade(t *testing.T) {
	frames := playDemo(t, demoPlay{args: []string{"-lab", "all=naive", "-load", "20", "-order-limit", "20"}, fault: "payment=hang", length: 70 * time.Second})
	r := newDemoReport(t, "step 1, a cascade", "-lab all=naive -load 20 -order-limit 20, fault payment=hang")
	defer r.log()
	full, ok := first(frames, demoWarmUp, func(f demoFrame) bool { o := f.node("order"); return o.Limit > 0 && o.InFlight >= int64(o.Limit) })
	r.holds(ok && full.node("order").Limit == 20, "the order node's in-flight count climbs to its limit of 20",
		"order reads %d/%d busy %v after the fault", full.node("order").InFlight, full.node("order").Limit, full.at-demoWarmUp)
	refusing, ok := first(frames, demoWarmUp, func(f demoFrame) bool { return f.edge("gateway->order").Cause == dashboard.CauseOverloaded })
	r.holds(ok, "then the order service refuses everything (OVERLOADED on gateway->order)",
		"gateway->order says %q %v after the fault, order refused %d in the window", refusing.edge("gateway->order").Cause, refusing.at-demoWarmUp, refusing.node("order").Overloaded)
	lookups := between(frameAt(frames, refusing.at), last(frames), loadgen.ActionOrder)
	r.holds(lookups.pct() >= 30 && lookups.pct() <= 70 && lookups.errors["OVERLOADED"] > 0, "order lookups fail too, though they never touch payment: about half, OVERLOADED",
		"lookups from then on: %s (failures: %s)", lookups, lookups.errorList())
	amber, okA := first(frames, demoWarmUp, func(f demoFrame) bool { return f.edge("gateway->order").Health == "degraded" })
	red, okR := first(frames, demoWarmUp, func(f demoFrame) bool { return f.edge("gateway->order").Health == "failing" })
	calm := true
	for _, f := range frames {
		if f.at >= demoWarmUp && f.at < demoWarmUp+5*time.Second && f.edge("gateway->order").Health != "ok" {
			calm = false
		}
	}
	r.holds(calm, "at first nothing turns red", "gateway->order stays ok for the first 5 s of the hang")
	waiting, okW := first(frames, demoWarmUp, func(f demoFrame) bool { return f.edge("order->payment").Cause == dashboard.CauseWaiting })
	timedOut, okT := first(frames, demoWarmUp, func(f demoFrame) bool { return f.edge("order->payment").Cause == dashboard.CauseTimeout })
	r.holds(okW && okT && waiting.at < timedOut.at && timedOut.at-demoWarmUp >= 10*time.Second && timedOut.edge("order->payment").Health == "failing",
		"order->payment says WAITING, then after 10 s turns red with TIMEOUT (lab 02's naive 10 s per request)",
		"WAITING %v after the fault, TIMEOUT %v after it (health %s)", waiting.at-demoWarmUp, timedOut.at-demoWarmUp, timedOut.edge("order->payment").Health)
	r.holds(okA && okR && amber.at <= red.at, "the gateway->order edge turns amber, then red",
		"amber %v and red %v after the fault (error rates %s, %s)", amber.at-demoWarmUp, red.at-demoWarmUp,
		pct(amber.edge("gateway->order").ErrorRate), pct(red.edge("gateway->order").ErrorRate))
}

func TestDemoStep2Timeouts(t *testing.T) {
	frames := playDemo(t, demoPlay{args: []string{"-lab", "01=solution", "-load", "20", "-order-limit", "20"}, fault: "payment=hang", length: 40 * time.Second})
	r := newDemoReport(t, "step 2, timeouts", "-lab 01=solution -load 20 -order-limit 20, fault payment=hang")
	defer r.log()
	end := last(frames)
	pay := end.edge("order->payment")
	r.holds(pay.Cause == dashboard.CauseTimeout, "order->payment says TIMEOUT",
		"order->payment says %q (%d timeouts in the window)", pay.Cause, pay.Causes.Timeouts)
	r.holds(pay.P99 != nil && *pay.P99 >= 1.9 && *pay.P99 <= 2.1, "each checkout gives up after 2 s: order->payment's p99 reads 2.0s",
		"order->payment's p99 reads %s", secs(pay.P99))
	var peak, sum int64
	var n int64
	for _, f := range frames[demoWarmUp/time.Second+5:] {
		in := f.node("order").InFlight
		peak, sum, n = max(peak, in), sum+in, n+1
	}
	mean := float64(sum) / float64(n)
	r.holds(peak <= 10 && mean >= 4 && mean <= 8, "the order service's in-flight stays around 6 (9 at most), far below its limit of 20",
		"order in flight: %.1f on average, %d at most, from 5 s after the fault", mean, peak)
	reads := between(frameAt(frames, demoWarmUp+5*time.Second), end, loadgen.ActionOrder, loadgen.ActionMenu, loadgen.ActionRestaurants)
	r.holds(reads.pct() >= 99, "lookups and menus keep working", "lookups and reads from 5 s after the fault: %s (failures: %s)", reads, reads.errorList())
}

func TestDemoStep3ACircuitBreaker(t *testing.T) {
	frames := playDemo(t, demoPlay{args: []string{"-lab", "all=solution", "-load", "20", "-fast"}, fault: "payment:POST /charges=error,status=503",
		clearAt: 40 * time.Second, length: 60 * time.Second})
	r := newDemoReport(t, "step 3, a circuit breaker", "-lab all=solution -load 20 -fast, fault payment:POST /charges=error,status=503 (removed at 40 s)")
	defer r.log()
	red, ok := first(frames, demoWarmUp, func(f demoFrame) bool { return f.edge("order->payment").Health == "failing" })
	r.holds(ok, "the order->payment edge turns red", "red %v after the fault (error rate %s)", red.at-demoWarmUp, pct(red.edge("order->payment").ErrorRate))
	open, ok := first(frames, demoWarmUp, func(f demoFrame) bool { return f.breaker("order->payment") == "open" })
	r.holds(ok && open.at-demoWarmUp <= 5*time.Second && red.at-demoWarmUp <= 5*time.Second, "within about 4 s the edge is red and its breaker badge reads OPEN",
		"OPEN %v after the fault", open.at-demoWarmUp)
	opened := 0
	for _, f := range frames {
		if f.at > demoWarmUp && f.at < 40*time.Second && f.breaker("order->payment") != "closed" {
			opened++
		}
	}
	r.measured("the badge read OPEN or HALF-OPEN %d of the %d seconds of the outage", opened, int((40*time.Second-demoWarmUp)/time.Second))
	orders := frameAt(frames, 35*time.Second).edge("gateway->order")
	r.holds(orders.Cause == dashboard.CauseBreakerOpen && orders.Causes.Fallbacks > 0,
		"the gateway's own breaker on POST /orders refuses checkouts (BREAKER OPEN on gateway->order) and lab 07 answers them clearly (fallbacks)",
		"gateway->order says %q at 35 s: %d refused by the breaker, %d fallbacks in the window", orders.Cause, orders.Causes.BreakerOpen, orders.Causes.Fallbacks)
	r.holds(orders.P99 != nil && *orders.P99 < 0.5, "checkouts fail within a fraction of a second (gateway->order's p99 under 0.5 s)",
		"gateway->order's p99 reads %s at 35 s (cause %q)", secs(orders.P99), orders.Cause)
	closed, ok := first(frames, 40*time.Second, func(f demoFrame) bool { return f.breaker("order->payment") == "closed" })
	r.holds(ok && closed.at-40*time.Second <= 5*time.Second, "remove the fault and the badge returns to CLOSED within seconds",
		"CLOSED %v after the fault was removed", closed.at-40*time.Second)
}

func TestDemoStep4ABulkhead(t *testing.T) {
	for _, side := range []string{"solution", "naive"} {
		t.Run(side, func(t *testing.T) {
			frames := playDemo(t, demoPlay{args: []string{"-lab", "06=" + side, "-load", "30"}, fault: "payment=hang", length: 50 * time.Second})
			r := newDemoReport(t, "step 4, a bulkhead ("+side+")", "-lab 06="+side+" -load 30, fault payment=hang")
			defer r.log()
			end := last(frames)
			reads := between(frameAt(frames, 30*time.Second), end, loadgen.ActionMenu, loadgen.ActionRestaurants)
			gw := end.node("gateway")
			r.measured("gateway %d/%d busy; gateway->order says %q, gateway->menu %q with error rate %s",
				gw.InFlight, gw.Limit, end.edge("gateway->order").Cause, end.edge("gateway->menu").Cause, pct(end.edge("gateway->menu").ErrorRate))
			if side == "solution" {
				orders := end.edge("gateway->order")
				r.holds(orders.Cause == dashboard.CauseBulkheadFull && orders.Health == "failing", "the gateway->order compartment refuses the rest: the edge turns red and says BULKHEAD_FULL",
					"gateway->order says %q (%d refused full in the window), health %s", orders.Cause, orders.Causes.BulkheadFull, orders.Health)
				slots := ""
				for _, b := range end.f.Bulkheads {
					slots += fmt.Sprintf("%s %d/%d ", b.Compartment, b.InUse, b.Capacity)
				}
				r.measured("compartments: %s", slots)
				full := false
				for _, b := range end.f.Bulkheads {
					full = full || b.Compartment == "gateway->order" && b.InUse == 10 && b.Capacity == 10
				}
				r.holds(full, "the gateway->order compartment fills its 10 slots", "compartments: %s", slots)
				r.holds(reads.pct() >= 99, "menus keep loading", "menu and restaurant reads from 30 s: %s (failures: %s)", reads, reads.errorList())
				return
			}
			r.holds(gw.Limit == 30 && gw.InFlight == 30 && gw.Overloaded > 0, "the hung checkouts take the whole gateway: its node reads 30/30 busy and OVERLOADED",
				"gateway %d/%d busy, %d refused in the window", gw.InFlight, gw.Limit, gw.Overloaded)
			r.holds(end.edge("gateway->menu").Health == "ok", "though every edge stays green: the gateway refuses before sending",
				"gateway->menu is %s", end.edge("gateway->menu").Health)
			r.holds(reads.pct() >= 45 && reads.pct() <= 75 && reads.errors["OVERLOADED"] > 0, "menus fail too: about 4 in 10 (OVERLOADED)",
				"menu and restaurant reads from 30 s: %s (failures: %s)", reads, reads.errorList())
		})
	}
}

func TestDemoStep5Hedging(t *testing.T) {
	play := func(labs ...string) []demoFrame {
		return playDemo(t, demoPlay{args: append(labs, "-load", "20"), scenario: "slow-menu-replica", length: 70 * time.Second})
	}
	hedged, unhedged := play("-lab", "09=solution"), play("-lab", "all=off")
	r := newDemoReport(t, "step 5, hedging", "-lab 09=solution -load 20, scenario slow-menu-replica (against -lab all=off)")
	defer r.log()
	slow := demoWarmUp + 5*time.Second // the scenario's fault
	// worst is the highest p99 of what pick reads over the slow replica's
	// first minute.
	worst := func(frames []demoFrame, pick func(demoFrame) *float64) float64 {
		w := 0.0
		for _, f := range frames {
			if p := pick(f); f.at > slow+5*time.Second && p != nil {
				w = max(w, *p)
			}
		}
		return w
	}
	menu2 := func(f demoFrame) *float64 { return f.node("menu-2").P99 }
	m2 := worst(hedged, menu2)
	r.holds(m2 >= 1, "menu-2's p99 jumps to seconds", "menu-2's p99 reads up to %.2fs", m2)
	for _, a := range []string{loadgen.ActionMenu, loadgen.ActionRestaurants, loadgen.ActionHome} {
		r.measured("customers' %s p99: %.0f ms with hedges, %.0f ms without (over the whole step)", a,
			p99(last(hedged).stats, a), p99(last(unhedged).stats, a))
	}
	with, without := p99(last(hedged).stats, loadgen.ActionMenu), p99(last(unhedged).stats, loadgen.ActionMenu)
	r.holds(with <= 1000 && with <= without/2, "the customers' menus stay under 1 s at p99, against about 5 s without hedging",
		"menu p99 %.0f ms with hedges, %.0f ms without", with, without)
	before, after := frameAt(hedged, slow).edge("gateway->menu").Client, frameAt(hedged, slow+30*time.Second).edge("gateway->menu").Client
	sent, won, reads := after.Hedges-before.Hedges, after.HedgesWon-before.HedgesWon, after.Attempts-before.Attempts-(after.Hedges-before.Hedges)
	r.holds(sent > 0 && won > 0 && float64(sent) <= 0.1*float64(reads)+100, "the hedges sent and won count up, within the hedge budget (10% of reads, burst 100)",
		"in the first 30 s of the slow replica: %d sent, %d won, for %d reads", sent, won, reads)
}

func TestDemoStep6FollowOneRequest(t *testing.T) {
	ring := tracing.NewRing(tracing.DefaultTraces, tracing.DefaultSpansPerTrace)
	frames := playDemo(t, demoPlay{args: []string{"-lab", "all=solution", "-load", "20"}, scenario: "lost-payment-responses",
		length: 40 * time.Second, tracer: tracing.New(ring)})
	r := newDemoReport(t, "step 6, follow one request", "-lab all=solution -load 20, scenario lost-payment-responses")
	defer r.log()
	end := last(frames)
	r.holds(end.f.Totals.Retries > 0, "the damage panel's retries count up", "retries read %d at %v", end.f.Totals.Retries, end.at)

	// What the retries link opens: the newest retried checkout, whose
	// root span has ended (the view skips a trace still running).
	list, err := tracing.List(ring.Traces(), tracing.FlowCheckout, tracing.OutcomeRetried, tracing.MaxList)
	require.NoError(t, err)
	r.measured("%d retried checkouts among the %d traces held", len(list), ring.Len())
	var newest tracing.Trace
	failed := 0
	for _, s := range list {
		if s.Has(tracing.OutcomeFailed) {
			failed++ // its copies were lost too: the customer was told NOT_CONFIRMED
			continue
		}
		if tr, ok := ring.Trace(s.TraceID); ok && len(spansNamed(tr, "gateway POST /graphql")) > 0 {
			newest = tr
			break
		}
	}
	r.holds(newest.TraceID != "", "a retried checkout that did not fail is there to open", "%d retried checkouts listed, %d of them failed", len(list), failed)
	services := map[string]bool{}
	for _, s := range newest.Spans {
		services[s.Service] = true
	}
	r.holds(services["customer"] && services["gateway"] && services["order"] && services["payment"],
		"its waterfall runs from the customer through the gateway and the order service to payment", "services %v", services)
	charges := spansNamed(newest, "payment POST /charges")
	keys := map[any]bool{}
	lost, replayed := false, false
	for _, c := range charges {
		keys[c.Attributes[tracing.AttrIdempotencyKey]] = true
		lost = lost || hasEvent(c, tracing.EventFault)
		replayed = replayed || hasEvent(c, tracing.EventReplay)
	}
	r.holds(len(charges) >= 2 && len(keys) == 1 && !keys[nil] && lost && replayed,
		"payment's first charge is marked fault.injected, the charge is sent again with the same idempotency key, and a later one is marked idempotency.replay",
		"%d charges, %d distinct keys, fault marked %v, replay marked %v", len(charges), len(keys), lost, replayed)
	resent, attempted := false, false
	for _, s := range newest.Spans {
		resent = resent || hasEvent(s, tracing.EventResent)
		attempted = attempted || hasEvent(s, tracing.EventAttempt)
	}
	r.holds(resent || attempted, "the charge sent again is marked http.resent (net/http) or retry.attempt (the order service's loop)",
		"http.resent %v, retry.attempt %v", resent, attempted)
}
