// Package otlp sends the spans of a tracing.Tracer to an OpenTelemetry
// collector (Jaeger, Grafana Tempo, the OpenTelemetry Collector) over
// OTLP/HTTP, protobuf-encoded, in batches, beside the Ring that keeps
// them in memory:
//
//	p, err := otlp.New(endpoint, otlp.Options{Service: "payment", Logger: logger})
//	tracer := tracing.New(ring, p)
//	defer tracer.Shutdown(ctx) // flushes what is still queued
//
// It is a package of its own so that only the program that exports
// (cmd/fooddelivery) links the exporter and its protobuf and gRPC
// dependencies; the labs' tests never build them.
//
// Each exported span carries the resource of the service it belongs to,
// not of the process: service.name is the service ("menu", "payment",
// "customer" for the simulated customers' calls), service.instance.id
// the instance ("menu-2") and process.pid the process's id, read from the span's tracing.AttrInstance
// (server spans) or tracing.AttrFrom (client and attempt spans). A
// collector therefore shows the same services whether the system runs in
// one process or in one process per service.
//
// A collector that is down, slow or refusing never slows a request:
// ended spans wait in a bounded queue (MaxQueue) that a goroutine of the
// processor empties, and spans that find the queue full are dropped. The
// first failed export logs one warning; the first success after failures
// logs one line at info; nothing is logged in between.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

// TracesPath is the path OTLP/HTTP receivers take spans on, which
// Endpoint appends to a URL without a path.
const TracesPath = "/v1/traces"

// The processor's bounds and timings.
const (
	// MaxQueue is how many ended spans wait for export at most; a span
	// that finds the queue full is dropped (2,048, the SDK's default).
	MaxQueue = sdktrace.DefaultMaxQueueSize
	// BatchDelay is the longest an ended span waits before its batch is
	// sent (at most 512 spans a batch).
	BatchDelay = time.Second
	// RequestTimeout bounds one POST to the collector.
	RequestTimeout = 5 * time.Second
	// RetryFor bounds the retries of one batch after a retryable failure
	// (a timeout, 429, 502, 503, 504), with backoff from 500 ms
	// to 2 s; the batch is dropped after it.
	RetryFor = 5 * time.Second
)

// ErrEndpoint is wrapped by the error Endpoint and New return for a URL
// they cannot send to.
var ErrEndpoint = errors.New("not an OTLP/HTTP endpoint")

// Endpoint returns the URL spans are posted to for raw, the value of
// -otlp: an http:// or https:// URL with a host, as
// "http://localhost:4318" (a collector's base URL, to which TracesPath is
// appended) or "http://localhost:4318/v1/traces" (a full URL, whose path
// is used as given). A trailing "/" counts as no path. The error, which
// wraps ErrEndpoint, says what is missing or not allowed: a scheme other
// than http and https, no host, a user name or password, a query or a
// fragment (the exporter would drop them).
func Endpoint(raw string) (string, error) {
	bad := func(why string) error { return fmt.Errorf("%q: %w: %s", raw, ErrEndpoint, why) }
	if strings.TrimSpace(raw) == "" {
		return "", bad("give a URL such as http://localhost:4318")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", bad("it does not parse as a URL (" + err.Error() + "); give one such as http://localhost:4318")
	}
	switch {
	case u.Scheme == "" || !strings.Contains(raw, "://"):
		return "", bad("no scheme; give http:// or https://, as in http://" + strings.TrimPrefix(raw, "//"))
	case u.Scheme != "http" && u.Scheme != "https":
		return "", bad("the scheme is " + u.Scheme + "; OTLP/HTTP takes http or https")
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return "", bad("no host; give one such as http://localhost:4318")
	case u.User != nil:
		return "", bad("a user name or password in the URL is not sent; the exporter sends none")
	case u.RawQuery != "" || u.ForceQuery:
		return "", bad("a query is not sent; give the URL without it")
	case u.Fragment != "":
		return "", bad("a fragment is not sent; give the URL without it")
	}
	if p := u.Port(); p != "" {
		var n int
		if _, err := fmt.Sscanf(p, "%d", &n); err != nil || n < 1 || n > 65535 {
			return "", bad("the port must be 1 to 65535")
		}
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = TracesPath
	}
	u.RawPath = ""
	return u.String(), nil
}

// Options configure New.
type Options struct {
	// Service names the spans that say nothing of their service (neither
	// tracing.AttrInstance nor tracing.AttrFrom): the service the process
	// runs, or "" for "fooddelivery".
	Service string
	// Logger receives the warning of a failing collector and the line of
	// its recovery; nil is slog.Default().
	Logger *slog.Logger
}

// Processor is a span processor for tracing.New: it queues every span
// that ends and sends the queue in batches to the collector from a
// goroutine of its own (so it is not for a testing/synctest bubble). Its
// Shutdown, which tracing.Tracer.Shutdown calls, sends what is queued and
// stops; give it a context with a deadline, since a collector that is
// down makes it wait up to RetryFor for each batch. It is safe for
// concurrent use.
type Processor struct {
	sdktrace.SpanProcessor
	exp *exporter
}

// New returns a Processor that posts spans to endpoint, a URL as Endpoint
// returns it (New checks it again, and its error wraps ErrEndpoint). It
// does not connect: a collector that is not up yet is no error.
func New(endpoint string, o Options) (*Processor, error) {
	full, err := Endpoint(endpoint)
	if err != nil {
		return nil, err
	}
	inner, err := otlptracehttp.New(context.Background(),
		otlptracehttp.WithEndpointURL(full),
		otlptracehttp.WithTimeout(RequestTimeout),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 500 * time.Millisecond, MaxInterval: 2 * time.Second, MaxElapsedTime: RetryFor}),
	)
	if err != nil {
		return nil, fmt.Errorf("otlp exporter for %s: %w", full, err)
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.Default()
	}
	service := o.Service
	if service == "" {
		service = "fooddelivery"
	}
	exp := &exporter{inner: inner, endpoint: full, logger: logger, service: service}
	bsp := sdktrace.NewBatchSpanProcessor(exp,
		sdktrace.WithMaxQueueSize(MaxQueue),
		sdktrace.WithBatchTimeout(BatchDelay),
		sdktrace.WithExportTimeout(RequestTimeout+RetryFor),
	)
	return &Processor{SpanProcessor: bsp, exp: exp}, nil
}

// Endpoint returns the URL the Processor posts to.
func (p *Processor) Endpoint() string { return p.exp.endpoint }

// Stats are a Processor's counts of spans since it was made.
type Stats struct {
	Sent   int64 // spans the collector accepted
	Failed int64 // spans in batches the collector did not take (after RetryFor of retries), lost
}

// Stats returns what the Processor has sent and lost so far. Spans
// dropped because the queue was full are in neither count.
func (p *Processor) Stats() Stats {
	return Stats{Sent: p.exp.sent.Load(), Failed: p.exp.failed.Load()}
}

// exporter wraps the OTLP exporter: it gives each span its service's
// resource, counts, and logs the first failure and the recovery instead
// of handing every error to OpenTelemetry's global handler.
type exporter struct {
	inner    sdktrace.SpanExporter
	endpoint string
	logger   *slog.Logger
	service  string

	sent, failed atomic.Int64
	failing      atomic.Bool
	lostSince    atomic.Int64 // spans failed since the last success

	mu        sync.Mutex
	resources map[string]*resource.Resource // by instance
}

func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	out := make([]sdktrace.ReadOnlySpan, len(spans))
	for i, s := range spans {
		out[i] = serviceSpan{s, e.resourceOf(s)}
	}
	if err := e.inner.ExportSpans(ctx, out); err != nil {
		n := int64(len(spans))
		e.failed.Add(n)
		e.lostSince.Add(n)
		if !e.failing.Swap(true) {
			e.logger.LogAttrs(ctx, slog.LevelWarn, "otlp export failing: spans are not reaching the collector; requests go on, the spans stay in /admin/traces only",
				slog.String("endpoint", e.endpoint), slog.Int64("spans_lost", n), slog.String("error", err.Error()))
		}
		// The error is told once, above: returned, the batch processor
		// would hand every later one to the global error handler.
		return nil
	}
	e.sent.Add(int64(len(spans)))
	if e.failing.Swap(false) {
		e.logger.LogAttrs(ctx, slog.LevelInfo, "otlp export working again",
			slog.String("endpoint", e.endpoint), slog.Int64("spans_lost", e.lostSince.Swap(0)))
	}
	return nil
}

func (e *exporter) Shutdown(ctx context.Context) error { return e.inner.Shutdown(ctx) }

// resourceOf returns the resource of the service s belongs to.
func (e *exporter) resourceOf(s sdktrace.ReadOnlySpan) *resource.Resource {
	instance := e.service
	for _, kv := range s.Attributes() {
		if (kv.Key == tracing.AttrInstance || kv.Key == tracing.AttrFrom) && kv.Value.AsString() != "" {
			instance = kv.Value.AsString()
			if kv.Key == tracing.AttrInstance {
				break // a server span's own instance wins
			}
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.resources[instance]; ok {
		return r
	}
	own := resource.NewSchemaless(
		attribute.String("service.name", metrics.ServiceOf(instance)),
		attribute.String("service.instance.id", instance),
		attribute.Int("process.pid", os.Getpid()),
	)
	r, err := resource.Merge(s.Resource(), own)
	if err != nil {
		r = own // schemas in conflict: the service's own attributes still name it
	}
	if e.resources == nil {
		e.resources = map[string]*resource.Resource{}
	}
	e.resources[instance] = r
	return r
}

// serviceSpan is a span with its service's resource in place of the
// process's.
type serviceSpan struct {
	sdktrace.ReadOnlySpan
	res *resource.Resource
}

func (s serviceSpan) Resource() *resource.Resource { return s.res }
