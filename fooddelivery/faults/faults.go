// Package faults injects failures into the food-delivery system per service
// and route, in the spirit of Toxiproxy's toxics and Envoy's HTTP fault
// filter: added latency with jitter and a rare long tail, hangs, error
// statuses, connection resets, slow bodies, lost responses, and refused or
// black-holed connects.
//
// An Injector holds the rules. Its Middleware wraps each route of each
// instance (fooddelivery.Instance.Faults) and looks the rules up on every
// request, so Set and Clear take effect at once on running servers:
//
//	inj := faults.New(1, network)
//	inst.Faults = inj.Middleware
//	err := inj.Set("payment", "POST /charges", faults.Fault{Hang: 30 * time.Second})
//
// Once SetRoutes has said which routes each instance serves, Set refuses a
// rule on a service or route that nothing serves (ErrUnknownTarget), so a
// mistyped route fails loudly instead of silently doing nothing. List and
// Remove read and remove single rules, for the running system's admin API.
//
// Every random decision is a pure function of the injector's seed, the
// instance, the route, the request id and how often that request arrived
// before (fooddelivery.Draw), so a request's fate does not depend on
// goroutine scheduling. All waiting goes through
// package time, so the faults run under testing/synctest's fake clock.
package faults

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/memnet"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
	"go.opentelemetry.io/otel/attribute"
)

// ErrInvalid is wrapped by every error Set and Parse return for a rule that
// makes no sense (a negative duration, a probability outside [0, 1], an
// unknown kind, ...). Test for it with errors.Is.
var ErrInvalid = errors.New("faults: invalid fault")

// ErrNoNetwork is returned (wrapped) by Set for a connect fault when the
// Injector was created without a network.
var ErrNoNetwork = errors.New("faults: connect faults need the network passed to New")

// ErrUnknownTarget is wrapped by the error Set and Check return, once
// SetRoutes has told the Injector what the instances serve, for a rule on
// a service or route that nothing serves (a mistyped "POST /charge", say).
// The message lists the real services or routes.
var ErrUnknownTarget = errors.New("faults: no such service or route")

// Fault is what happens to the requests that match a rule. The zero value
// does nothing; each non-zero field adds one effect.
//
// Effects happen in this order: the delay (Latency, or TailLatency for the
// unlucky requests, plus Jitter), then at most one of Hang, Status, Reset,
// SlowBody and LoseResponse. Connect stands alone: a rule with a connect
// fault may set no other field.
type Fault struct {
	// Latency is a fixed delay before the handler runs. If the caller gives
	// up during the delay the handler does not run (as Envoy's fault filter
	// ends a delayed stream whose client went away). Zero means no delay.
	Latency time.Duration
	// Jitter adds a uniform draw in [0, Jitter) to the delay. Zero means no
	// jitter.
	Jitter time.Duration
	// TailProbability is the fraction of requests, in [0, 1], that wait
	// TailLatency instead of Latency: a rare long tail. Zero means none.
	TailProbability float64
	// TailLatency is the delay of the tail requests. It may be set only
	// together with TailProbability.
	TailLatency time.Duration

	// Hang makes the request hang until the caller gives up (the request's
	// context is done) or Hang has passed, whichever comes first, and then
	// answers 503 with the JSON error code "hung". The handler never runs.
	// Hang bounds the hang so that a caller without any timeout still
	// finishes. Zero means no hang.
	Hang time.Duration

	// Status answers this HTTP status (200..599) with a JSON error body
	// (fooddelivery.ErrorBody, code "injected") instead of running the
	// handler. Zero means no injected status.
	Status int
	// RetryAfter, with Status, is sent as the Retry-After header: a number
	// of seconds ("2") or an HTTP-date (RFC 9110, section 10.2.3), passed
	// through unchanged. Empty means no header.
	RetryAfter string

	// Reset closes the connection without sending any response (the
	// handler does not run); the client sees its connection drop (an error
	// wrapping io.EOF from net/http). Note that net/http.Transport silently
	// resends a replayable request (GET, HEAD, OPTIONS, TRACE, or one with
	// an Idempotency-Key header) once when a reused keep-alive connection
	// drops like this, so such a request may arrive twice.
	Reset bool

	// SlowBody runs the handler, sends its status and headers at once, then
	// trickles the body over SlowBody in at most 20 pieces, flushing each.
	// It stops early when the caller gives up. Zero means a normal body.
	SlowBody time.Duration

	// LoseResponse runs the handler to completion (its side effects, a
	// charge say, happen) and then closes the connection without sending
	// the response: "processed, then the response was lost". The
	// Transport's silent resend described under Reset applies here too.
	LoseResponse bool

	// Probability is the fraction of matching requests, in [0, 1], that the
	// fault applies to; the others pass through untouched. Zero means every
	// request (as does 1).
	Probability float64

	// Crash runs the handler to completion (its side effects happen: a
	// charge is committed) and then kills the service's process before the
	// answer leaves: a process killed in the middle of a request. Only an
	// Injector given SetCrash applies it (cmd/fooddelivery -processes,
	// where the supervisor restarts the process); any other refuses it.
	Crash bool

	// SlowClose, Bandwidth and LimitData act on the TCP connections to the
	// service, so they exist only where Toxiproxy stands between the
	// processes (cmd/fooddelivery -processes; see SetTCP and TCP): an
	// Injector of one process refuses them. SlowClose delays the close of
	// each connection by this long; Bandwidth caps the service's answers
	// at this many KB a second; LimitData closes a connection once this
	// many bytes of answers went through it. Each stands alone (only
	// Probability may go with it, as the share of connections) and needs
	// route "". Zero means none.
	SlowClose time.Duration
	Bandwidth int64
	LimitData int64

	// Connect, when Refused or BlackHoled, is applied to the dials of the
	// Network given to New: connects to the service are refused at once or
	// never complete. Connections already open are not touched, and the
	// HTTP effects above do not apply. Only a rule for all routes (route "")
	// may set it. memnet.Normal (zero) means no connect fault.
	Connect memnet.ConnectFault
}

// Rule is a Fault attached to a service and route, as Parse reads it from
// a -fault flag.
type Rule struct {
	// Service is an instance name ("payment", "menu-1") or a service name
	// ("menu") that matches the instances "menu-1", "menu-2", ...
	Service string
	// Route is a route name such as "POST /charges"; empty matches every
	// route.
	Route string
	Fault Fault
}

// maxArrivals bounds the memory the per-request arrival counts take: when
// more distinct (instance, route, request id) triples have been seen, the
// counts start over.
const maxArrivals = 1 << 18

// Injector holds fault rules and applies them to requests. Create one with
// New; all methods are safe for concurrent use. A nil *Injector injects
// nothing: its Middleware returns the handler unchanged.
type Injector struct {
	seed    int64
	network *memnet.Network

	mu    sync.Mutex
	rules map[ruleKey]*rule
	// arrivals counts, per "instance\x00route\x00request id", how often a
	// request arrived while a rule matched; anon numbers the requests that
	// carried no request id, per "instance\x00route".
	arrivals map[string]int
	anon     map[string]int64
	// instances are the instance names seen by Middleware; a connect rule
	// for a service name applies to those of its instances.
	instances map[string]bool
	// connect is the connect fault this injector last set per dialled name.
	connect map[string]memnet.ConnectFault
	// routes are the routes each instance serves, as given to SetRoutes;
	// nil means unknown, and then every target is accepted.
	routes map[string][]string
	// tcp is set by SetTCP: Toxiproxy applies the rules TCP accepts.
	tcp bool
	// crash kills this process (SetCrash); nil refuses Crash rules.
	crash func()
	// armed are the routes CrashNext armed, by instance or service.
	armed map[ruleKey]bool
	// baseline are the rules of SetBaseline: what applies where no rule
	// matches.
	baseline map[ruleKey]*rule
}

// SetBaseline sets the rules that apply to a request no rule matches:
// the system's ordinary latencies (cmd/fooddelivery gives each service
// the normal latencies lab 10's platform states), which are not faults.
// List, Applied, Remove, Clear and ClearAll do not see them; a rule Set
// for a request's instance or service takes over from them while it
// stays. Each must be a latency (Latency, Jitter, a tail, Probability)
// and nothing else; the call replaces the baseline, and nil removes it.
func (in *Injector) SetBaseline(rules []Rule) error {
	base := map[ruleKey]*rule{}
	for _, r := range rules {
		if err := validate(r.Service, r.Route, r.Fault); err != nil {
			return fmt.Errorf("%w for %s: %s", ErrInvalid, target(r.Service, r.Route), err)
		}
		f := r.Fault
		if f != (Fault{Latency: f.Latency, Jitter: f.Jitter, TailProbability: f.TailProbability, TailLatency: f.TailLatency, Probability: f.Probability}) {
			return fmt.Errorf("%w for %s: a baseline is latency only", ErrInvalid, target(r.Service, r.Route))
		}
		base[ruleKey{r.Service, r.Route}] = &rule{fault: f, applied: new(atomic.Int64), baseline: true}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.baseline = base
	return nil
}

// SetCrash lets the Injector apply Crash rules: kill ends this process at
// once (cmd/fooddelivery -processes gives a function that kills the
// process as SIGKILL does). Call it before Set.
func (in *Injector) SetCrash(kill func()) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.crash = kill
}

// CrashNext arms a crash of this process in the next request to service
// (an instance or service name) and route ("POST /charges"): the handler
// runs to completion, and when it answered 2xx (a charge is stored) the
// process is killed before the answer leaves, once; any other answer goes
// out, and the next request waits for it again. It returns an error wrapping ErrInvalid
// when SetCrash was not called, or route is empty.
func (in *Injector) CrashNext(service, route string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.crash == nil {
		return fmt.Errorf("%w: crash kills the service's process, which only -processes runs apart", ErrInvalid)
	}
	if route == "" {
		return fmt.Errorf("%w: CrashNext needs a route (\"POST /charges\")", ErrInvalid)
	}
	if in.armed == nil {
		in.armed = map[ruleKey]bool{}
	}
	in.armed[ruleKey{service, route}] = true
	return nil
}

// rearm arms the crash that takeArmed took for instance and route again.
func (in *Injector) rearm(instance, route string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.armed[ruleKey{instance, route}] = true
}

// takeArmed disarms and reports a crash armed for instance and route.
func (in *Injector) takeArmed(instance, route string) (kill func(), ok bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, k := range [...]ruleKey{{instance, route}, {metrics.ServiceOf(instance), route}} {
		if in.armed[k] {
			delete(in.armed, k)
			return in.crash, true
		}
	}
	return nil, false
}

// SetTCP tells the Injector that Toxiproxy stands between the processes
// and applies every rule that TCP says is about connections
// (cmd/fooddelivery -processes sets it in each process): from then on Set
// accepts SlowClose, Bandwidth and LimitData, and the injector applies
// none of those rules itself, neither to requests nor as connect faults
// on its network. Call it before Set.
func (in *Injector) SetTCP() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.tcp = true
}

// TCP reports whether r acts on the TCP connections to its service as a
// whole, which Toxiproxy can apply between processes: a rule for every
// route ("") that refuses or black-holes connects, resets them (Reset and
// at most Probability), delays them (Latency and Jitter, at most with
// Probability, no tail), or sets SlowClose, Bandwidth or LimitData. Any
// other rule acts on requests, inside the service's process.
func TCP(r Rule) bool {
	if r.Route != "" {
		return false
	}
	f := r.Fault
	f.Probability = 0
	switch {
	case f.Connect != memnet.Normal, f.SlowClose > 0, f.Bandwidth > 0, f.LimitData > 0:
		return true
	case f == Fault{Reset: true}:
		return true
	case f == Fault{Latency: f.Latency, Jitter: f.Jitter} && (f.Latency > 0 || f.Jitter > 0):
		return true
	}
	return false
}

type ruleKey struct{ service, route string }

type rule struct {
	fault   Fault
	applied *atomic.Int64
	// baseline: a rule of SetBaseline (the normal latencies), which a
	// trace does not mark as a fault.
	baseline bool
	// tcp says that Toxiproxy applies the rule, outside this process
	// (SetTCP): the injector lets its requests pass.
	tcp bool
}

// New returns an Injector without rules. seed fixes every random draw.
// network receives the connect faults (Refused, BlackHoled); it may be nil,
// and then Set rejects connect faults with ErrNoNetwork.
func New(seed int64, network *memnet.Network) *Injector {
	return &Injector{
		seed:      seed,
		network:   network,
		rules:     map[ruleKey]*rule{},
		arrivals:  map[string]int{},
		anon:      map[string]int64{},
		instances: map[string]bool{},
		connect:   map[string]memnet.ConnectFault{},
	}
}

// Set attaches f to service and route, replacing any earlier rule for the
// same pair, and starts its Applied count from zero.
//
// service is an instance name ("payment", "menu-1") or a service name that
// matches every instance named "<service>-<n>" ("menu" matches "menu-1"
// and "menu-2"). route is an exact route name such as "POST /charges", or
// "" for every route. When several rules match a request, the most
// specific wins: instance and route, then instance, then service and
// route, then service.
//
// Set returns an error wrapping ErrInvalid, and changes nothing, when the
// rule makes no sense: an empty or malformed name, a negative duration, a
// probability outside [0, 1], a Status outside 200..599, RetryAfter
// without Status or in neither of its two formats, TailLatency without
// TailProbability, more than one of Hang, Status, Reset, SlowBody and
// LoseResponse, or a connect fault with a route or with other fields. A
// connect fault on an Injector without a network returns an error
// wrapping ErrNoNetwork. After SetRoutes, a service or route that nothing
// serves returns an error wrapping ErrUnknownTarget (see Check).
func (in *Injector) Set(service, route string, f Fault) error {
	if err := validate(service, route, f); err != nil {
		return fmt.Errorf("%w for %s: %s", ErrInvalid, target(service, route), err)
	}
	if f.Connect != memnet.Normal && in.network == nil {
		return fmt.Errorf("%w (%s for %s)", ErrNoNetwork, f.Connect, target(service, route))
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.tcp && (f.SlowClose > 0 || f.Bandwidth > 0 || f.LimitData > 0) {
		return fmt.Errorf("%w for %s: slowclose, bandwidth and limitdata act on TCP connections between processes, "+
			"which Toxiproxy applies when the system runs with -processes; in one process, use latency, slowbody or reset", ErrInvalid, target(service, route))
	}
	if f.Crash && in.crash == nil {
		return fmt.Errorf("%w for %s: crash kills the service's process, which only -processes runs apart (its supervisor then restarts it); "+
			"in one process, use lose or reset", ErrInvalid, target(service, route))
	}
	if err := in.checkTarget(service, route); err != nil {
		return err
	}
	if f.Connect != memnet.Normal && in.routes != nil && service == "gateway" {
		return fmt.Errorf("%w: %s for the gateway would do nothing: clients reach the gateway from outside the system, "+
			"so no dial of the system's network can be refused; fault its routes instead (gateway=error,status=503)", ErrUnknownTarget, f.Connect)
	}
	in.rules[ruleKey{service, route}] = &rule{fault: f, applied: new(atomic.Int64), tcp: in.tcp && TCP(Rule{service, route, f})}
	in.syncConnect()
	return nil
}

// SetRoutes tells the Injector which routes each instance serves, by
// instance name: {"payment": {"GET /charges", "POST /charges"}, "menu-1":
// {...}, ...} (fooddelivery.Instance.Routes gives them; the system wiring
// calls SetRoutes once every service is built). From then on Set and Check
// refuse, with an error wrapping ErrUnknownTarget, a rule whose service is
// neither one of these instances nor the service of one ("menu" for
// "menu-1"), or whose route (other than "", every route) none of the
// matching instances serves. Rules already set are kept. A nil map turns
// the check off again; a new Injector starts without it, so it accepts any
// name.
func (in *Injector) SetRoutes(routes map[string][]string) {
	var own map[string][]string
	if routes != nil {
		own = make(map[string][]string, len(routes))
		for name, rs := range routes {
			rs = slices.Clone(rs)
			slices.Sort(rs)
			own[name] = slices.Compact(rs)
		}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.routes = own
}

// Routes returns a copy of what SetRoutes was given (routes sorted, per
// instance name), or nil when it was never called.
func (in *Injector) Routes() map[string][]string {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.routes == nil {
		return nil
	}
	out := make(map[string][]string, len(in.routes))
	for name, rs := range in.routes {
		out[name] = slices.Clone(rs)
	}
	return out
}

// Check returns the error Set would return for a rule on service and route
// because of its target alone: nil, or an error wrapping ErrUnknownTarget
// that lists what is served. Before SetRoutes every target passes. It lets
// a caller check a whole plan of rules before setting any of them.
func (in *Injector) Check(service, route string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.checkTarget(service, route)
}

// checkTarget is Check with in.mu held.
func (in *Injector) checkTarget(service, route string) error {
	if in.routes == nil {
		return nil
	}
	var served []string
	known := false
	for name, rs := range in.routes {
		if name == service || metrics.ServiceOf(name) == service {
			known = true
			served = append(served, rs...)
		}
	}
	if !known {
		names := map[string]bool{}
		for name := range in.routes {
			names[name] = true
			names[metrics.ServiceOf(name)] = true
		}
		return fmt.Errorf("%w: the system has no service %s; the services and instances are %s",
			ErrUnknownTarget, fooddelivery.Quote(service), strings.Join(slices.Sorted(maps.Keys(names)), ", "))
	}
	slices.Sort(served)
	served = slices.Compact(served)
	if route == "" || slices.Contains(served, route) {
		return nil
	}
	if len(served) == 0 {
		return fmt.Errorf("%w: %s serves no routes; leave the route out to target its connections", ErrUnknownTarget, service)
	}
	quoted := make([]string, len(served))
	for i, r := range served {
		quoted[i] = strconv.Quote(r)
	}
	return fmt.Errorf("%w: %s serves no route %s; its routes are %s (or leave the route out for all of them)",
		ErrUnknownTarget, service, fooddelivery.Quote(route), strings.Join(quoted, ", "))
}

// List returns every rule, sorted by service and then route.
func (in *Injector) List() []Rule {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make([]Rule, 0, len(in.rules))
	for k, r := range in.rules {
		out = append(out, Rule{Service: k.service, Route: k.route, Fault: r.fault})
	}
	slices.SortFunc(out, func(a, b Rule) int {
		if c := strings.Compare(a.Service, b.Service); c != 0 {
			return c
		}
		return strings.Compare(a.Route, b.Route)
	})
	return out
}

// Remove removes the rule for service and route (the pair given to Set),
// as Clear does, and returns it. ok is false, and nothing changes, when
// there is no such rule.
func (in *Injector) Remove(service, route string) (removed Rule, ok bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	r, ok := in.rules[ruleKey{service, route}]
	if !ok {
		return Rule{}, false
	}
	delete(in.rules, ruleKey{service, route})
	in.syncConnect()
	return Rule{Service: service, Route: route, Fault: r.fault}, true
}

// Clear removes the rule for service and route (the same pair given to
// Set), healing its connect fault if it had one. Clearing a rule that does
// not exist does nothing.
func (in *Injector) Clear(service, route string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.rules, ruleKey{service, route})
	in.syncConnect()
}

// ClearAll removes every rule and heals every connect fault this Injector
// set.
func (in *Injector) ClearAll() {
	in.mu.Lock()
	defer in.mu.Unlock()
	clear(in.rules)
	in.syncConnect()
}

// Applied returns how many requests the fault of the rule for service and
// route (the pair given to Set) was applied to: matching requests that
// passed the Probability draw. It counts from the rule's last Set and is
// 0 when there is no such rule. Connect faults act on dials, not requests,
// and are not counted.
func (in *Injector) Applied(service, route string) int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	if r, ok := in.rules[ruleKey{service, route}]; ok {
		return r.applied.Load()
	}
	return 0
}

// Middleware wraps the handler of route on instance with fault injection.
// It has the shape of fooddelivery.Middleware, so it can be assigned to
// fooddelivery.Instance.Faults. Rules are looked up on every request, so
// rules set later apply to servers that are already running.
//
// The random decisions for a request (Probability, the tail, Jitter) are
// fooddelivery.Draw(seed, key, 4*n+k): key joins instance, route and the
// request's fooddelivery.HeaderRequestID (or, without one, its place in
// the arrival order of that instance and route), n counts the earlier
// arrivals of the same key while a rule matched (so a retry draws anew,
// but always the same way), and k separates the decisions.
func (in *Injector) Middleware(instance, route string, next http.Handler) http.Handler {
	if in == nil {
		return next
	}
	in.mu.Lock()
	in.instances[instance] = true
	in.syncConnect()
	in.mu.Unlock()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in.serve(instance, route, next, w, r)
	})
}

// serve applies the matching rule, if any, to one request.
func (in *Injector) serve(instance, route string, next http.Handler, w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(fooddelivery.HeaderRequestID)
	if id != "" && strings.Contains(route, "{") {
		// One request may read several resources of one route at once
		// (a home page's menus): each path draws on its own, so that
		// which read gets which draw does not hang on the order in which
		// they arrive.
		id += "\x00" + r.URL.Path
	}
	if kill, ok := in.takeArmed(instance, route); ok {
		rec := newRecorder(w)
		next.ServeHTTP(rec, r)
		if rec.status < 200 || rec.status > 299 {
			// Nothing was stored (a declined card, a bad request): the
			// crash waits for a charge that is, and this answer goes out.
			in.rearm(instance, route)
			w.WriteHeader(rec.status)
			w.Write(rec.body.Bytes())
			return
		}
		kill()
		dropConnection(w) // a kill that returns (a test's) still sends nothing
		return
	}
	rl, key, n := in.match(instance, route, id)
	if rl == nil || rl.tcp {
		next.ServeHTTP(w, r)
		return
	}
	f := rl.fault
	// Four draws per arrival: 0 probability, 1 tail, 2 jitter, 3 spare.
	draw := func(k int) float64 { return fooddelivery.Draw(in.seed, key, 4*n+k) }
	if f.Probability > 0 && draw(0) >= f.Probability {
		next.ServeHTTP(w, r)
		return
	}
	rl.applied.Add(1)

	ctx := r.Context()
	if !rl.baseline {
		tracing.Event(ctx, tracing.EventFault, attribute.String(tracing.AttrFault, Rule{Service: instance, Route: route, Fault: f}.String()))
	}
	delay := f.Latency
	if f.TailProbability > 0 && draw(1) < f.TailProbability {
		delay = f.TailLatency
	}
	if f.Jitter > 0 {
		delay += time.Duration(draw(2) * float64(f.Jitter))
	}
	if delay > 0 || f.Hang > 0 || f.SlowBody > 0 {
		bufferBody(r)
	}
	if !sleep(ctx, delay) {
		return // the caller gave up; nobody waits for an answer
	}

	switch {
	case f.Hang > 0:
		sleep(ctx, f.Hang)
		fooddelivery.WriteError(w, http.StatusServiceUnavailable, "hung",
			fmt.Sprintf("injected fault: %s hung (at most %v)", route, f.Hang))
	case f.Status != 0:
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		fooddelivery.WriteError(w, f.Status, "injected",
			fmt.Sprintf("injected fault: %s answers %d", route, f.Status))
	case f.Reset:
		dropConnection(w)
	case f.LoseResponse:
		next.ServeHTTP(newRecorder(w), r)
		dropConnection(w)
	case f.Crash:
		next.ServeHTTP(newRecorder(w), r)
		in.mu.Lock()
		kill := in.crash
		in.mu.Unlock()
		kill()
		dropConnection(w) // a kill that returns (a test's) still sends nothing
	case f.SlowBody > 0:
		rec := newRecorder(w)
		next.ServeHTTP(rec, r)
		trickle(ctx, w, rec, f.SlowBody)
	default:
		next.ServeHTTP(w, r)
	}
}

// match returns the rule for a request to instance and route, the draw key
// and how often this request arrived before while a rule matched. It
// returns a nil rule when no HTTP rule matches.
func (in *Injector) match(instance, route, id string) (*rule, string, int) {
	base := metrics.ServiceOf(instance)
	in.mu.Lock()
	defer in.mu.Unlock()
	var rl *rule
	for _, rules := range []map[ruleKey]*rule{in.rules, in.baseline} {
		for _, k := range [...]ruleKey{{instance, route}, {instance, ""}, {base, route}, {base, ""}} {
			if r, ok := rules[k]; ok && r.fault.Connect == memnet.Normal {
				rl = r
				break
			}
		}
		if rl != nil {
			break
		}
	}
	if rl == nil {
		return nil, "", 0
	}
	ir := instance + "\x00" + route
	if id == "" {
		in.anon[ir]++
		id = "#" + strconv.FormatInt(in.anon[ir], 10)
	}
	if len(in.arrivals) >= maxArrivals {
		clear(in.arrivals)
	}
	k := ir + "\x00" + id
	n := in.arrivals[k]
	in.arrivals[k] = n + 1
	return rl, k, n
}

// syncConnect brings the network's connect faults in line with the rules.
// An instance's own rule beats its service's rule. The caller holds in.mu.
func (in *Injector) syncConnect() {
	if in.network == nil {
		return
	}
	want := map[string]memnet.ConnectFault{}
	for k, r := range in.rules {
		if r.fault.Connect != memnet.Normal && !r.tcp {
			want[k.service] = r.fault.Connect
		}
	}
	// The instances a service's rule reaches: those seen serving here,
	// and those SetRoutes named (in a process that runs one instance,
	// cmd/fooddelivery -processes, the others are dialled, never seen).
	names := maps.Clone(in.instances)
	for name := range in.routes {
		names[name] = true
	}
	for name := range names {
		if _, own := want[name]; own {
			continue
		}
		if r, ok := in.rules[ruleKey{metrics.ServiceOf(name), ""}]; ok && r.fault.Connect != memnet.Normal && !r.tcp {
			want[name] = r.fault.Connect
		}
	}
	for name := range in.connect {
		if _, ok := want[name]; !ok {
			in.network.SetConnectFault(name, memnet.Normal)
			delete(in.connect, name)
		}
	}
	for name, f := range want {
		if in.connect[name] != f {
			in.network.SetConnectFault(name, f)
			in.connect[name] = f
		}
	}
}

func target(service, route string) string {
	if route == "" {
		return fmt.Sprintf("%q (all routes)", service)
	}
	return fmt.Sprintf("%q route %q", service, route)
}

// validate reports what is wrong with a rule, or nil.
// MaxDuration bounds the times of one fault: its delays (Latency, Jitter,
// TailLatency) and its effect (Hang, SlowBody) together hold a request at
// most this long. Ten minutes is twenty times the default hang and more
// than the longest built-in scenario; longer would outlast any caller's
// patience and only pile requests up, and sums near time.Duration's limit
// would overflow.
const MaxDuration = 10 * time.Minute

func validate(service, route string, f Fault) error {
	if service == "" {
		return errors.New("empty service name")
	}
	for _, c := range service {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("service name %q may hold only letters, digits, '-', '_' and '.'", service)
		}
	}
	if strings.ContainsAny(route, "=\r\n") || strings.TrimSpace(route) != route {
		return fmt.Errorf("route %q may not contain '=' or line breaks, nor start or end with a space", route)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Latency", f.Latency}, {"Jitter", f.Jitter}, {"TailLatency", f.TailLatency}, {"Hang", f.Hang}, {"SlowBody", f.SlowBody}} {
		if d.v < 0 {
			return fmt.Errorf("%s is negative (%v); durations must be >= 0, and 0 means none", d.name, d.v)
		}
	}
	if total := f.Latency.Seconds() + f.Jitter.Seconds() + f.TailLatency.Seconds() + f.Hang.Seconds() + f.SlowBody.Seconds(); total > MaxDuration.Seconds() {
		return fmt.Errorf("the fault's times add up to %v (Latency %v + Jitter %v + TailLatency %v + Hang %v + SlowBody %v), over the %v one request may be held",
			time.Duration(min(total, float64(math.MaxInt64)/1e9)*1e9).Round(time.Second), f.Latency, f.Jitter, f.TailLatency, f.Hang, f.SlowBody, MaxDuration)
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"Probability", f.Probability}, {"TailProbability", f.TailProbability}} {
		if math.IsNaN(p.v) || p.v < 0 || p.v > 1 {
			return fmt.Errorf("%s is %v; it must be a fraction in [0, 1]", p.name, p.v)
		}
	}
	if f.TailLatency > 0 && f.TailProbability == 0 {
		return fmt.Errorf("TailLatency %v is set but TailProbability is 0, so no request would take it", f.TailLatency)
	}
	if f.Status != 0 && (f.Status < 200 || f.Status > 599) {
		return fmt.Errorf("Status %d is not a final HTTP status; use 200..599 (0 means none)", f.Status)
	}
	if f.RetryAfter != "" {
		if f.Status == 0 {
			return fmt.Errorf("RetryAfter %q is set without a Status to send it with", f.RetryAfter)
		}
		if !validRetryAfter(f.RetryAfter) {
			return fmt.Errorf("RetryAfter %q is neither a number of seconds (\"2\") nor an HTTP-date (\"Wed, 21 Oct 2015 07:28:00 GMT\")", f.RetryAfter)
		}
	}
	var terminal []string
	if f.Hang > 0 {
		terminal = append(terminal, "Hang")
	}
	if f.Status != 0 {
		terminal = append(terminal, "Status")
	}
	if f.Reset {
		terminal = append(terminal, "Reset")
	}
	if f.SlowBody > 0 {
		terminal = append(terminal, "SlowBody")
	}
	if f.LoseResponse {
		terminal = append(terminal, "LoseResponse")
	}
	if f.Crash {
		terminal = append(terminal, "Crash")
	}
	if len(terminal) > 1 {
		return fmt.Errorf("%s cannot be combined; a rule may set only one of Hang, Status, Reset, SlowBody, LoseResponse and Crash", strings.Join(terminal, " and "))
	}
	if f.SlowClose < 0 || f.Bandwidth < 0 || f.LimitData < 0 {
		return fmt.Errorf("SlowClose %v, Bandwidth %d and LimitData %d must be >= 0 (0 means none)", f.SlowClose, f.Bandwidth, f.LimitData)
	}
	if f.SlowClose > MaxDuration {
		return fmt.Errorf("SlowClose %v is over the %v one request may be held", f.SlowClose, MaxDuration)
	}
	for _, c := range []struct {
		name string
		set  bool
	}{{"SlowClose", f.SlowClose > 0}, {"Bandwidth", f.Bandwidth > 0}, {"LimitData", f.LimitData > 0}} {
		if !c.set {
			continue
		}
		if route != "" {
			return fmt.Errorf("%s acts on whole connections, not on route %q; use route \"\"", c.name, route)
		}
		alone := f
		alone.Probability = 0
		if alone != (Fault{SlowClose: f.SlowClose, Bandwidth: f.Bandwidth, LimitData: f.LimitData}) || (f.SlowClose > 0) != (c.name == "SlowClose") ||
			(f.Bandwidth > 0) != (c.name == "Bandwidth") || (f.LimitData > 0) != (c.name == "LimitData") {
			return fmt.Errorf("%s cannot be combined with other fields but Probability", c.name)
		}
	}
	switch f.Connect {
	case memnet.Normal:
	case memnet.Refused, memnet.BlackHoled:
		if route != "" {
			return fmt.Errorf("connect fault %s cannot target route %q: a connect happens before any route is known; use route \"\"", f.Connect, route)
		}
		if f != (Fault{Connect: f.Connect}) {
			return fmt.Errorf("connect fault %s cannot be combined with other fields (a refused or black-holed connect never carries a request)", f.Connect)
		}
	default:
		return fmt.Errorf("unknown connect fault %d; use memnet.Refused or memnet.BlackHoled", int(f.Connect))
	}
	return nil
}

// validRetryAfter reports whether v is a Retry-After value as RFC 9110,
// section 10.2.3, writes it, so that any client can read it: delta-seconds
// (ASCII digits only, of any length: "+5" and "-0" are not) or an
// HTTP-date in one of the forms http.ParseTime reads.
func validRetryAfter(v string) bool {
	if v != "" && strings.Trim(v, "0123456789") == "" {
		return true
	}
	_, err := http.ParseTime(v)
	return err == nil
}
