package fooddelivery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/gophereats/resilience/fooddelivery/telemetry/logs"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

// Instance is one running copy of a service: its name in the metrics
// ("payment", "menu-1") and its concurrency limit, shared by all its routes.
// The limit models the bounded capacity (worker threads, connections,
// memory) that a cascade exhausts: when Limit requests are in flight, the
// next one is rejected at once with 503 and HeaderDontRetry, without waiting.
type Instance struct {
	Name    string
	Metrics *metrics.Metrics
	// Faults, when set, wraps every route's handler inside the concurrency
	// limit (a hanging request holds its slot, as a real one holds a worker).
	// The system wiring sets it to the fault injector's middleware.
	Faults Middleware
	// Tracer, when set, wraps every route in a server span
	// (tracing.Tracer.Server), outside the concurrency limit, so that a
	// refused request is in its trace too, with tracing.EventOverloaded.
	Tracer *tracing.Tracer
	// Logger, when set, is put on every request's context (logs.From)
	// and gets a line per request answered, at info.
	Logger *slog.Logger
	slots  chan struct{} // nil: no limit

	mu     sync.Mutex
	routes []string // route names registered by Route and RouteWith, in order
}

// Middleware wraps the handler of one route of one instance (for example
// instance "payment", route "POST /charges").
type Middleware func(instance, route string, next http.Handler) http.Handler

// NewInstance returns an instance named name. limit is the number of
// requests it handles at once across all routes; 0 means no limit; a
// negative limit panics (a configuration error).
func NewInstance(name string, limit int, m *metrics.Metrics) *Instance {
	if limit < 0 {
		panic(fmt.Sprintf("fooddelivery: instance %q: negative concurrency limit %d", name, limit))
	}
	in := &Instance{Name: name, Metrics: m}
	m.ReportLimit(name, limit)
	if limit > 0 {
		in.slots = make(chan struct{}, limit)
	}
	return in
}

// Route wraps h as the route named route (for example "POST /charges"): it
// counts the request in Metrics.Route(in.Name, route), applies the
// instance's concurrency limit, and makes the request id available to h
// through RequestIDFrom. A request over the limit gets 503 with
// HeaderDontRetry and the JSON error {"code":"overloaded","message":...}.
//
// A HeaderRequestID that breaks CheckRequestID (longer than
// MaxRequestIDLen, or not printable ASCII) is not propagated: the request
// gets a fresh NewRequestID instead, in its header (which the fault hook
// and h read) and its context (which the calls h makes carry onwards). The
// request itself is served: an id is for tracing, and a call from inside
// the system must not fail over it. The gateway, the system's edge,
// refuses such ids instead, so that clients learn of the rule.
func (in *Instance) Route(route string, h http.Handler) http.Handler {
	return in.RouteWith(route, h, nil)
}

// Limit is the instance's concurrency limit; 0 means none.
func (in *Instance) Limit() int { return cap(in.slots) }

// Routes returns the names of the routes registered so far with Route and
// RouteWith ("POST /charges", ...), sorted, each once: the routes the
// instance serves once its handler is built. The system wiring hands them
// to the fault injector, which refuses rules for routes nobody serves.
func (in *Instance) Routes() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := slices.Clone(in.routes)
	slices.Sort(out)
	return out
}

// RouteWith is Route with the answer to a request over the concurrency
// limit written by overloaded, after the status line's HeaderDontRetry is
// set; overloaded must answer 503. A nil overloaded writes Route's JSON
// error. The gateway uses it to answer in GraphQL.
//
// Besides the counters of RouteStats, the route records every request's
// status code and latency when it ends, rejected ones included: the time
// from arrival to the handler's return (or the rejection), read from
// package time, so that tests under testing/synctest see virtual time.
// The status is the one written through the ResponseWriter, which h
// receives wrapped (it still implements http.Flusher and http.Hijacker and
// unwraps for http.ResponseController); a request that got no response
// counts as StatusNoResponse. An instance with a Tracer also records the
// trace id of each sampled request as the exemplar of its latency bucket
// (metrics.RouteStats.ObserveTraced), which the Prometheus face shows.
func (in *Instance) RouteWith(route string, h http.Handler, overloaded http.Handler) http.Handler {
	in.mu.Lock()
	if !slices.Contains(in.routes, route) {
		in.routes = append(in.routes, route)
	}
	in.mu.Unlock()
	stats := in.Metrics.Route(in.Name, route)
	if in.Faults != nil {
		h = in.Faults(in.Name, route, h)
	}
	traced := in.Tracer != nil
	return in.Tracer.Server(in.Name, route, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		start := time.Now()
		w := &statusWriter{ResponseWriter: rw}
		finished := false
		defer func() {
			end := time.Now()
			if traced {
				// The server span Tracer.Server put on r's context: its
				// trace is the exemplar of the request's latency bucket.
				if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() && sc.IsSampled() {
					stats.ObserveTraced(w.code(finished), end.Sub(start), sc.TraceID(), end)
					return
				}
			}
			stats.Observe(w.code(finished), end.Sub(start))
		}()
		stats.Received.Add(1)
		if err := awaitBody(rw, r); err != nil {
			// A body that does not arrive must not hold a slot, nor the
			// connection for ever.
			w.Header().Set("Connection", "close")
			WriteError(w, http.StatusRequestTimeout, "request_timeout",
				fmt.Sprintf("the request's body did not arrive within %v; send it whole, at once", BodyTimeout))
			finished = true
			return
		}
		if in.slots != nil {
			select {
			case in.slots <- struct{}{}:
				defer func() { <-in.slots }()
			default:
				stats.Rejected.Add(1)
				tracing.Event(r.Context(), tracing.EventOverloaded)
				w.Header().Set(HeaderDontRetry, "1")
				if overloaded != nil {
					overloaded.ServeHTTP(w, r)
					finished = true
					return
				}
				WriteError(w, http.StatusServiceUnavailable, "overloaded",
					fmt.Sprintf("%s is at its concurrency limit of %d requests", in.Name, cap(in.slots)))
				finished = true
				return
			}
		}
		stats.Enter()
		defer stats.Leave()
		ctx := r.Context()
		if CheckRequestID(r.Header.Get(HeaderRequestID)) != nil {
			r.Header.Set(HeaderRequestID, NewRequestID())
		}
		if id := r.Header.Get(HeaderRequestID); id != "" {
			ctx = WithRequestID(ctx, id)
		}
		ctx = logs.With(ctx, in.Logger)
		h.ServeHTTP(w, r.WithContext(ctx))
		finished = true
		if in.Logger != nil {
			in.logRequest(ctx, r, route, w.code(true), time.Since(start))
		}
		stats.Completed.Add(1)
		if r.Context().Err() != nil {
			stats.Cancelled.Add(1)
		}
	}))
}

// logRequest writes the line of one answered request.
func (in *Instance) logRequest(ctx context.Context, r *http.Request, route string, status int, d time.Duration) {
	if !in.Logger.Enabled(ctx, slog.LevelInfo) {
		return
	}
	in.Logger.LogAttrs(ctx, slog.LevelInfo, "request", slog.String("instance", in.Name), slog.String("route", route),
		slog.Int("status", status), slog.Float64("duration_ms", float64(d)/float64(time.Millisecond)),
		slog.String("request_id", RequestIDFrom(ctx)), slog.String("attempt", r.Header.Get(HeaderAttempt)))
}

// BodyTimeout bounds how long a request's body may take to arrive once
// its headers have (the servers' ReadHeaderTimeout bounds those): an
// instance reads up to MaxAwaitedBody bytes of every body before the
// request takes one of its slots, so a client that stalls mid-body holds
// no slot, and after BodyTimeout it is answered 408 and its connection
// closed.
const BodyTimeout = 10 * time.Second

// MaxAwaitedBody is how much of a body an instance reads before a request
// takes a slot: 2 MiB, twice the largest body any route accepts, so that a
// route refusing a larger one (413) has read it first and the client gets
// the answer, not a reset. The rest of a longer body is the handler's to
// read.
const MaxAwaitedBody = 2 << 20

// awaitBody reads r's body, up to MaxAwaitedBody, within BodyTimeout, and
// gives it back to r for the handler. A connection that cannot take a
// read deadline (a test's recorder) reads without one.
func awaitBody(rw http.ResponseWriter, r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil
	}
	rc := http.NewResponseController(rw)
	timed := rc.SetReadDeadline(time.Now().Add(BodyTimeout)) == nil
	buf, err := io.ReadAll(io.LimitReader(r.Body, MaxAwaitedBody))
	var ne interface{ Timeout() bool }
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		return err // the deadline stays, so the server's next read fails too and the connection closes
	}
	if timed {
		_ = rc.SetReadDeadline(time.Time{})
	}
	// Any other read error (the client went away) is the handler's to
	// meet, as it would without this read.
	r.Body = awaited{io.MultiReader(bytes.NewReader(buf), errReader{err}, r.Body), r.Body}
	return nil
}

// awaited is a body partly read ahead; Close closes the original.
type awaited struct {
	io.Reader
	body io.Closer
}

func (a awaited) Close() error { return a.body.Close() }

// errReader returns err once, or nothing when err is nil.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}

type requestIDKey struct{}

// WithRequestID returns ctx carrying the request id id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestIDFrom returns the request id ctx carries, or "".
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

var requestSeq atomic.Int64

// NewRequestID returns a fresh request id ("req-1", "req-2", ...). Ids are
// unique within a process.
func NewRequestID() string {
	return "req-" + strconv.FormatInt(requestSeq.Add(1), 10)
}

// CarryRequestID wraps base (nil means http.DefaultTransport) so that
// every request goes out with the request id its context carries
// (WithRequestID) in HeaderRequestID, replacing any there; a context
// without one leaves the request as it is. A caller that numbers its
// requests (the load generator, the game day's customers) thus gives each
// a fixed id, and the faults it meets, drawn from the id, are fixed too,
// whatever ran before in the process. The wrapper passes
// CloseIdleConnections on to base.
func CarryRequestID(base http.RoundTripper) http.RoundTripper {
	return carryRequestID{base}
}

type carryRequestID struct{ base http.RoundTripper }

func (t carryRequestID) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	if id := RequestIDFrom(r.Context()); id != "" {
		r = r.Clone(r.Context())
		r.Header.Set(HeaderRequestID, id)
	}
	return base.RoundTrip(r)
}

func (t carryRequestID) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
