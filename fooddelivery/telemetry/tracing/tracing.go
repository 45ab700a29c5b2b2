package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync/atomic"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/gophereats/resilience/fooddelivery/telemetry/logs"
)

// Wire headers the tracing reads to describe a request. They are the
// values of fooddelivery's constants of the same names, repeated here
// because package fooddelivery imports this one.
const (
	headerAttempt        = "X-Attempt"
	headerIdempotencyKey = "Idempotency-Key"
	headerRequestID      = "X-Request-Id"
	headerTimeoutMs      = "X-Timeout-Ms"
)

// Tracer records the spans of one process's services into a Ring, and
// carries W3C Trace Context (the traceparent header) on every call. A
// nil *Tracer traces nothing: its wrappers return what they were given.
// It is safe for concurrent use.
type Tracer struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	ring   *Ring
	prop   propagation.TextMapPropagator
}

// MaxAttributeLength bounds each string attribute a span keeps, in bytes
// (OpenTelemetry's AttributeValueLengthLimit; longer values are cut):
// several come from what a client sent (the Idempotency-Key, the user
// agent, the path), and without a bound a client's 1 MB header would be
// kept in every trace the ring holds.
const MaxAttributeLength = 256

// New returns a Tracer that keeps every span it ends in ring, and hands
// it to each of more too (an OTLP exporter's processor, package otlp; a
// test's). The ring records spans as they end, in the goroutine that ends
// them: with no more, no background goroutine, so a Tracer works inside
// a testing/synctest bubble (otlp.Processor has a goroutine of its own,
// so not there). A nil ring is NewRing(DefaultTraces,
// DefaultSpansPerTrace).
func New(ring *Ring, more ...sdktrace.SpanProcessor) *Tracer {
	if ring == nil {
		ring = NewRing(DefaultTraces, DefaultSpansPerTrace)
	}
	limits := sdktrace.NewSpanLimits()
	limits.AttributeValueLengthLimit = MaxAttributeLength
	opts := []sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(ring), sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithRawSpanLimits(limits)}
	for _, p := range more {
		opts = append(opts, sdktrace.WithSpanProcessor(p))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return &Tracer{
		tp:     tp,
		tracer: tp.Tracer("github.com/gophereats/resilience/fooddelivery"),
		ring:   ring,
		prop:   propagation.TraceContext{},
	}
}

// Ring returns where the Tracer keeps its traces; nil for a nil Tracer.
func (t *Tracer) Ring() *Ring {
	if t == nil {
		return nil
	}
	return t.ring
}

// Shutdown ends the Tracer's span processors (flushing an exporter).
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

func (t *Tracer) options(name func(r *http.Request) string, more ...otelhttp.Option) []otelhttp.Option {
	return append([]otelhttp.Option{
		otelhttp.WithTracerProvider(t.tp),
		otelhttp.WithPropagators(t.prop),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return name(r) }),
	}, more...)
}

// Server wraps next, the handler of route on instance ("payment", "POST
// /charges"), in a server span named SpanServerFormat, the child of the
// caller's span when the request carries a traceparent. The span records
// the instance, the route, and what the request says of itself: its
// attempt number, idempotency key, request id and the deadline it
// arrived with.
func (t *Tracer) Server(instance, route string, next http.Handler) http.Handler {
	if t == nil {
		return next
	}
	name := fmt.Sprintf(SpanServerFormat, instance, route)
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		span := trace.SpanFromContext(r.Context())
		span.SetAttributes(attribute.String(AttrInstance, instance), attribute.String(AttrRoute, route))
		describe(span, r)
		if ms, err := strconv.ParseInt(r.Header.Get(headerTimeoutMs), 10, 64); err == nil && ms >= 0 {
			span.SetAttributes(attribute.Int64(AttrDeadlineLeftMs, ms))
		}
		next.ServeHTTP(w, r)
	})
	return otelhttp.NewHandler(inner, name, t.options(func(*http.Request) string { return name })...)
}

// describe sets the attributes a request's headers give on span.
func describe(span trace.Span, r *http.Request) {
	if n, err := strconv.Atoi(r.Header.Get(headerAttempt)); err == nil && n > 0 {
		span.SetAttributes(attribute.Int(AttrAttempt, n))
	}
	if k := r.Header.Get(headerIdempotencyKey); k != "" {
		span.SetAttributes(attribute.String(AttrIdempotencyKey, k))
	}
	if id := r.Header.Get(headerRequestID); id != "" {
		span.SetAttributes(attribute.String(AttrRequestID, id))
	}
}

// Client wraps base (nil means http.DefaultTransport), the transport of a
// client that from ("order") uses to call to ("payment"), in a client
// span per request named SpanClientFormat, and sends the span in the
// traceparent header.
func (t *Tracer) Client(base http.RoundTripper, from, to string) http.RoundTripper {
	if t == nil {
		return base
	}
	if base == nil {
		base = http.DefaultTransport
	}
	inner := roundTripper{func(r *http.Request) (*http.Response, error) {
		span := trace.SpanFromContext(r.Context())
		describe(span, r)
		return base.RoundTrip(watchResends(r, span))
	}, base}
	traced := otelhttp.NewTransport(inner, t.options(func(r *http.Request) string {
		return fmt.Sprintf(SpanClientFormat, from, to, r.Method)
	}, otelhttp.WithSpanOptions(trace.WithAttributes(attribute.String(AttrFrom, from), attribute.String(AttrTo, to))))...)
	return roundTripper{traced.RoundTrip, base}
}

// resendKey carries the resendWatch of the innermost span that watches a
// request's connections.
type resendKey struct{}

// resendWatch counts the connections one span's request got.
type resendWatch struct {
	conns atomic.Int32
	below atomic.Bool // a span below (an attempt's) watches its own request
}

// watchResends returns r watched for what net/http's Transport does by
// itself: it sends a replayable request (a GET, or one with an
// Idempotency-Key) again on a new connection when the reused one it went
// out on broke before any answer, a retry below every retry loop that only
// a second connection shows. Each connection after the first records
// EventResent on span. A client span with attempt spans below it (a
// hedger's copies, a retry loop's attempts, each with a connection of its
// own) leaves the watching to them.
func watchResends(r *http.Request, span trace.Span) *http.Request {
	if outer, ok := r.Context().Value(resendKey{}).(*resendWatch); ok {
		outer.below.Store(true)
	}
	w := &resendWatch{}
	ctx := context.WithValue(r.Context(), resendKey{}, w)
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) {
		if w.below.Load() {
			return
		}
		if n := w.conns.Add(1); n > 1 {
			recordEvent(r.Context(), span, EventResent, attribute.Int(AttrAttempt, int(n)))
		}
	}})
	return r.WithContext(ctx)
}

// attemptKey carries an attempt's number to Attempts.
type attemptKey struct{}

// Attempt is what Attempts needs to know of one send of a call.
type Attempt struct {
	N     int  // 1-based
	Hedge bool // a hedged copy (N > 1) rather than a retry
	// BackoffMs is, for a retry, the wait between the end of the
	// previous attempt and this one's start, in milliseconds.
	BackoffMs float64
}

// WithAttempt returns ctx carrying attempt a for Attempts.
func WithAttempt(ctx context.Context, a Attempt) context.Context {
	return context.WithValue(ctx, attemptKey{}, a)
}

// Attempts wraps base, the transport below a retrying or hedging one of
// from's client of to, in a span per attempt named SpanAttemptFormat:
// the attempt's number comes from the request's context (WithAttempt).
// A retry records EventAttempt with its backoff; a hedged copy records
// EventHedgeSent with the replica it went to, and EventHedgeCancelled
// when it ends cancelled (it lost the race, or the call ended).
func (t *Tracer) Attempts(base http.RoundTripper, from, to string) http.RoundTripper {
	if t == nil {
		return base
	}
	if base == nil {
		base = http.DefaultTransport
	}
	inner := roundTripper{func(r *http.Request) (*http.Response, error) {
		span := trace.SpanFromContext(r.Context())
		describe(span, r)
		a, _ := r.Context().Value(attemptKey{}).(Attempt)
		if a.N > 0 {
			span.SetAttributes(attribute.Int(AttrAttempt, a.N))
		}
		switch {
		case a.Hedge:
			recordEvent(r.Context(), span, EventHedgeSent, attribute.Int(AttrAttempt, a.N), attribute.String(AttrReplica, r.URL.Hostname()))
		case a.N > 1:
			recordEvent(r.Context(), span, EventAttempt, attribute.Int(AttrAttempt, a.N), attribute.Float64(AttrBackoffMs, a.BackoffMs))
		}
		resp, err := base.RoundTrip(watchResends(r, span))
		if err != nil && a.N > 0 && errors.Is(err, context.Canceled) {
			recordEvent(r.Context(), span, EventHedgeCancelled, attribute.Int(AttrAttempt, a.N))
		}
		return resp, err
	}, base}
	traced := otelhttp.NewTransport(inner, t.options(func(r *http.Request) string {
		a, _ := r.Context().Value(attemptKey{}).(Attempt)
		return fmt.Sprintf(SpanAttemptFormat, from, to, a.N)
	}, otelhttp.WithSpanOptions(trace.WithAttributes(attribute.String(AttrFrom, from), attribute.String(AttrTo, to))))...)
	return roundTripper{traced.RoundTrip, base}
}

// Event records a pattern's decision, name (one of the Event constants),
// on the span in ctx, and logs it at info on the logger in ctx
// (logs.From) as "decision", with the event's name and attributes.
func Event(ctx context.Context, name string, attrs ...attribute.KeyValue) {
	recordEvent(ctx, trace.SpanFromContext(ctx), name, attrs...)
}

// recordEvent adds the event name to span and logs it with ctx's logger.
func recordEvent(ctx context.Context, span trace.Span, name string, attrs ...attribute.KeyValue) {
	span.AddEvent(name, trace.WithAttributes(attrs...))
	l := logs.From(ctx)
	if !l.Enabled(ctx, slog.LevelInfo) {
		return
	}
	as := make([]slog.Attr, 0, len(attrs)+1)
	as = append(as, slog.String("event", name))
	for _, kv := range attrs {
		as = append(as, slog.Any(string(kv.Key), kv.Value.AsInterface()))
	}
	l.LogAttrs(ctx, slog.LevelInfo, "decision", as...)
}

// roundTripper is an http.RoundTripper made of a function that passes
// CloseIdleConnections on to the transport below (otelhttp's Transport
// does not), so that a system's shutdown still reaches the connections.
type roundTripper struct {
	fn    func(*http.Request) (*http.Response, error)
	below http.RoundTripper
}

func (rt roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return rt.fn(r) }

func (rt roundTripper) CloseIdleConnections() {
	if c, ok := rt.below.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
