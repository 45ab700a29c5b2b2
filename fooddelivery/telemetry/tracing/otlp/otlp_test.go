package otlp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

func TestEndpointTakesABaseOrAFullURLAndRefusesTheRest(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"http://localhost:4318", "http://localhost:4318/v1/traces"},
		{"http://localhost:4318/", "http://localhost:4318/v1/traces"},
		{"https://tempo.example:4318/otlp/v1/traces", "https://tempo.example:4318/otlp/v1/traces"},
		{"http://jaeger:4318/v1/traces", "http://jaeger:4318/v1/traces"},
		{"http://[::1]:4318", "http://[::1]:4318/v1/traces"},
	} {
		if got, err := Endpoint(tc.raw); err != nil || got != tc.want {
			t.Errorf("Endpoint(%q) = %q, %v; want %q", tc.raw, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ raw, why string }{
		{"", "give a URL"},
		{"localhost:4318", "no scheme"},
		{"jaeger", "no scheme"},
		{"ftp://collector:4318", "the scheme is ftp"},
		{"http://", "no host"},
		{"http://:4318", "no host"},
		{"http://user:secret@collector:4318", "user name or password"},
		{"http://collector:4318?token=1", "a query"},
		{"http://collector:4318#traces", "a fragment"},
		{"http://collector:99999", "port must be 1 to 65535"},
		{"http://coll ector:4318", "does not parse"},
	} {
		_, err := Endpoint(tc.raw)
		if !errors.Is(err, ErrEndpoint) {
			t.Errorf("Endpoint(%q): %v, want an error wrapping ErrEndpoint", tc.raw, err)
			continue
		}
		// The text is what a person reads at startup: it must say why.
		if !strings.Contains(err.Error(), tc.why) {
			t.Errorf("Endpoint(%q): %q, want it to say %q", tc.raw, err, tc.why)
		}
	}
	if _, err := New("localhost:4318", Options{}); !errors.Is(err, ErrEndpoint) {
		t.Errorf("New with a URL without a scheme: %v, want an error wrapping ErrEndpoint", err)
	}
}

// receiver is an OTLP/HTTP receiver: it decodes every request as an
// ExportTraceServiceRequest, and answers status (200 when 0).
type receiver struct {
	srv    *httptest.Server
	status atomic.Int32
	mu     sync.Mutex
	reqs   []*coltracepb.ExportTraceServiceRequest
	bad    []string
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if st := int(r.status.Load()); st != 0 {
			w.WriteHeader(st)
			return
		}
		var m coltracepb.ExportTraceServiceRequest
		r.mu.Lock()
		defer r.mu.Unlock()
		if req.URL.Path != TracesPath || req.Header.Get("Content-Type") != "application/x-protobuf" {
			r.bad = append(r.bad, req.Method+" "+req.URL.Path+" "+req.Header.Get("Content-Type"))
		}
		if err := proto.Unmarshal(body, &m); err != nil {
			r.bad = append(r.bad, "undecodable body: "+err.Error())
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.reqs = append(r.reqs, &m)
		w.Header().Set("Content-Type", "application/x-protobuf")
		raw, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Write(raw)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// services returns, by span name, the service.name and service.instance.id
// of the resource each span arrived under.
func (r *receiver) services() map[string][2]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][2]string{}
	for _, m := range r.reqs {
		for _, rs := range m.ResourceSpans {
			var name, id string
			for _, kv := range rs.GetResource().GetAttributes() {
				switch kv.Key {
				case "service.name":
					name = kv.GetValue().GetStringValue()
				case "service.instance.id":
					id = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					out[s.Name] = [2]string{name, id}
				}
			}
		}
	}
	return out
}

// Each span reaches the collector under the resource of its service:
// a server span under its instance's, a client span under its caller's,
// a span that names neither under the process's.
func TestSpansArriveUnderTheirServicesResource(t *testing.T) {
	rc := newReceiver(t)
	p, err := New(rc.srv.URL, Options{Service: "payment"})
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p))
	ctx, root := tp.Tracer("t").Start(context.Background(), "menu-2 GET /menus", trace.WithAttributes(attribute.String(tracing.AttrInstance, "menu-2")))
	_, call := tp.Tracer("t").Start(ctx, "customer -> gateway POST", trace.WithAttributes(attribute.String(tracing.AttrFrom, "customer"), attribute.String(tracing.AttrTo, "gateway")))
	_, bare := tp.Tracer("t").Start(ctx, "bare")
	bare.End()
	call.End()
	root.End()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	got := rc.services()
	for name, want := range map[string][2]string{
		"menu-2 GET /menus":        {"menu", "menu-2"},
		"customer -> gateway POST": {"customer", "customer"},
		"bare":                     {"payment", "payment"},
	} {
		if got[name] != want {
			t.Errorf("span %q arrived as service.name, service.instance.id = %q, want %q (all %d spans: %v)", name, got[name], want, len(got), got)
		}
	}
	if len(rc.bad) > 0 {
		t.Errorf("the receiver saw %d requests that are not OTLP/HTTP protobuf: %v", len(rc.bad), rc.bad)
	}
	if s := p.Stats(); s.Sent != 3 || s.Failed != 0 {
		t.Errorf("stats after 3 spans to a working collector: %+v, want 3 sent and 0 failed", s)
	}
}

// A collector that refuses, or is not there, never holds up the code that
// ends spans; its failure is logged once, and its recovery once.
func TestAFailingCollectorWarnsOnceAndHoldsNothingUp(t *testing.T) {
	rc := newReceiver(t)
	rc.status.Store(http.StatusBadRequest) // a permanent refusal: not retried
	var log labtest.SyncBuffer
	p, err := New(rc.srv.URL, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p))
	end := func(n int) (slowest time.Duration) {
		for range n {
			_, s := tp.Tracer("t").Start(context.Background(), "x")
			start := time.Now()
			s.End()
			slowest = max(slowest, time.Since(start))
		}
		return slowest
	}
	flush := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.ForceFlush(ctx); err != nil {
			t.Fatalf("ForceFlush: %v", err)
		}
	}
	for range 3 {
		end(100)
		flush()
	}
	if n := strings.Count(log.String(), "level=WARN"); n != 1 {
		t.Errorf("3 refused batches logged %d warnings, want 1:\n%s", n, log.String())
	}
	rc.status.Store(0)
	end(10)
	flush()
	end(10)
	flush()
	if n := strings.Count(log.String(), "otlp export working again"); n != 1 || !strings.Contains(log.String(), "spans_lost=300") {
		t.Errorf("after the collector came back, the log has %d recovery lines, want 1 with spans_lost=300:\n%s", n, log.String())
	}
	if s := p.Stats(); s.Failed != 300 || s.Sent != 20 {
		t.Errorf("stats: %+v, want 300 failed and 20 sent", s)
	}

	// No collector at all: connections refused, and retried, in the
	// processor's goroutine; ending spans stays as quick as ever.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var log2 labtest.SyncBuffer
	p2, err := New("http://"+addr, Options{Logger: slog.New(slog.NewTextHandler(&log2, nil))})
	if err != nil {
		t.Fatal(err)
	}
	tp2 := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p2))
	slowest := time.Duration(0)
	start := time.Now()
	for range 5000 {
		_, s := tp2.Tracer("t").Start(context.Background(), "x")
		t0 := time.Now()
		s.End()
		slowest = max(slowest, time.Since(t0))
	}
	took := time.Since(start)
	if slowest > 50*time.Millisecond {
		t.Errorf("with no collector, the slowest of 5000 span ends took %v, want under 50ms: the export must not hold up the caller", slowest)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	p2.Shutdown(ctx)
	if waited := time.Since(t0); waited > 2*time.Second {
		t.Errorf("Shutdown with a 500ms deadline and no collector took %v", waited)
	}
	t.Logf("no collector: 5000 span ends in %v, the slowest %v; %d warnings so far", took, slowest, strings.Count(log2.String(), "level=WARN"))
}
