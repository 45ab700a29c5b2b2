package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/gophereats/resilience/fooddelivery/system"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing/otlp"
)

// otlpSpan is one span as an OTLP receiver got it, with the service.name
// of the resource it came under.
type otlpSpan struct {
	service string
	pid     int64 // process.pid
	span    *tracepb.Span
}

// otlpReceiver is an OTLP/HTTP receiver on loopback: it decodes every
// POST to /v1/traces as an ExportTraceServiceRequest (protobuf) and keeps
// its spans.
type otlpReceiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests int
	spans    []otlpSpan
	bad      []string // what it could not take
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	rc := &otlpReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		var req coltracepb.ExportTraceServiceRequest
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/v1/traces":
			rc.bad = append(rc.bad, r.Method+" "+r.URL.Path)
			http.NotFound(w, r)
			return
		case r.Header.Get("Content-Type") != "application/x-protobuf":
			rc.bad = append(rc.bad, "Content-Type "+r.Header.Get("Content-Type"))
		case err != nil:
			rc.bad = append(rc.bad, "reading the body: "+err.Error())
		}
		if err := proto.Unmarshal(body, &req); err != nil {
			rc.bad = append(rc.bad, "decoding ExportTraceServiceRequest: "+err.Error())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.requests++
		for _, rs := range req.ResourceSpans {
			service, pid := "", int64(0)
			for _, kv := range rs.GetResource().GetAttributes() {
				switch kv.Key {
				case "service.name":
					service = kv.GetValue().GetStringValue()
				case "process.pid":
					pid = kv.GetValue().GetIntValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					rc.spans = append(rc.spans, otlpSpan{service, pid, s})
				}
			}
		}
		raw, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(raw)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// traces returns the spans received, by hex trace id.
func (rc *otlpReceiver) traces() map[string][]otlpSpan {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := map[string][]otlpSpan{}
	for _, s := range rc.spans {
		id := hex.EncodeToString(s.span.TraceId)
		out[id] = append(out[id], s)
	}
	return out
}

// summary says what the receiver got, in numbers, for a failure.
func (rc *otlpReceiver) summary() string {
	rc.mu.Lock()
	n, reqs, bad := len(rc.spans), rc.requests, slices.Clone(rc.bad)
	rc.mu.Unlock()
	return fmt.Sprintf("%d spans in %d traces from %d requests (%d refused: %v)", n, len(rc.traces()), reqs, len(bad), bad)
}

// checkoutTrace is what one exported trace shows of a checkout.
type checkoutTrace struct {
	id                     string
	spans                  int
	gateway, order, charge int // server spans: gateway POST /graphql, order POST /orders, payment POST /charges
	attempts               int // retry.attempt events
	replays                int // idempotency.replay events
	orphans                int // spans whose parent is not among the trace's spans
	roots                  int
	wrongService           []string         // "span name: service.name" where the resource is not the span's service
	pids                   map[string]int64 // process.pid of the server spans of gateway, order and payment, by service
}

// judge reads one trace's exported spans.
func judge(id string, spans []otlpSpan) checkoutTrace {
	c := checkoutTrace{id: id, spans: len(spans), pids: map[string]int64{}}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[hex.EncodeToString(s.span.SpanId)] = true
	}
	want := map[string]string{"gateway POST /graphql": "gateway", "order POST /orders": "order", "payment POST /charges": "payment"}
	for _, s := range spans {
		switch s.span.Name {
		case "gateway POST /graphql":
			c.gateway++
		case "order POST /orders":
			c.order++
		case "payment POST /charges":
			c.charge++
		}
		if svc, ok := want[s.span.Name]; ok {
			c.pids[svc] = s.pid
			if s.service != svc {
				c.wrongService = append(c.wrongService, s.span.Name+": "+s.service)
			}
		}
		if len(s.span.ParentSpanId) == 0 {
			c.roots++
		} else if !ids[hex.EncodeToString(s.span.ParentSpanId)] {
			c.orphans++
		}
		for _, e := range s.span.Events {
			switch e.Name {
			case tracing.EventAttempt:
				c.attempts++
			case tracing.EventReplay:
				c.replays++
			}
		}
	}
	return c
}

// complete reports whether c is a checkout whose charge was retried and
// replayed, exported whole.
func (c checkoutTrace) complete() bool {
	return c.gateway >= 1 && c.order >= 1 && c.charge >= 2 && c.attempts >= 1 && c.replays >= 1 &&
		c.orphans == 0 && c.roots == 1 && len(c.wrongService) == 0
}

// processes counts the processes (process.pid) the server spans of
// gateway, order and payment came from.
func (c checkoutTrace) processes() int {
	seen := map[int64]bool{}
	for _, pid := range c.pids {
		seen[pid] = true
	}
	return len(seen)
}

func (c checkoutTrace) String() string {
	return fmt.Sprintf("trace %s: %d spans, server spans gateway %d order %d charges %d, %d attempt events, %d replays, %d roots, %d orphans, wrong services %v, pids %v",
		c.id, c.spans, c.gateway, c.order, c.charge, c.attempts, c.replays, c.roots, c.orphans, c.wrongService, c.pids)
}

// findRetriedCheckout judges every trace rc received and fails t unless
// one is a checkout across gateway, order and payment with its charge
// retried (attempt events) and replayed, every parent among the spans and
// each span under its service's resource.
func findRetriedCheckout(t *testing.T, rc *otlpReceiver, processes int) {
	t.Helper()
	var checkouts []checkoutTrace
	found := 0
	for id, spans := range rc.traces() {
		c := judge(id, spans)
		if c.order == 0 {
			continue // not a checkout
		}
		checkouts = append(checkouts, c)
		if c.complete() && c.processes() == processes {
			found++
		}
	}
	if found == 0 {
		sort.Slice(checkouts, func(i, j int) bool { return checkouts[i].charge > checkouts[j].charge })
		var b strings.Builder
		for i, c := range checkouts {
			if i == 5 {
				break
			}
			b.WriteString("\n  " + c.String())
		}
		t.Fatalf("no exported checkout trace has gateway, order and 2+ payment charges with a %s and a %s event, one root and no orphan span, each under its service, from %d processes; the receiver got %s; %d checkout traces, the first 5 by charges:%s",
			tracing.EventAttempt, tracing.EventReplay, processes, rc.summary(), len(checkouts), b.String())
	}
	t.Logf("%d of %d checkout traces arrived whole, retried and replayed; the receiver got %s", found, len(checkouts), rc.summary())
}

// -otlp sends the system's spans to a collector: with lab 03's retries
// on the charge (an attempt span each, the retry an event), lab 08's keys,
// and payment losing every answer after charging (p=1, so that no draw
// decides), a checkout's trace arrives at an OTLP/HTTP receiver with the
// spans of the gateway, the order service and payment, parents intact,
// and the charge's retries and replays as events. Stopping the program
// sends what is queued.
func TestOTLPExportCarriesARetriedCheckout(t *testing.T) {
	rc := newOTLPReceiver(t)
	r := startRun(t, "-otlp", rc.srv.URL, "-lab", "03=solution", "-lab", "08=solution", "-fast", "-latency", "off",
		"-fault", "payment:POST /charges=lose")
	if !strings.Contains(r.out.String(), "traces export:    "+rc.srv.URL+"/v1/traces") {
		t.Errorf("the banner does not say where the spans go (%s/v1/traces):\n%s", rc.srv.URL, r.out)
	}
	statuses := map[string]int{}
	for range 8 {
		_, resp := r.post(t, system.SampleToken, query(placeOrder, orderInput()))
		var out struct {
			PlaceOrder struct{ Status string } `json:"placeOrder"`
		}
		st := "error"
		if json.Unmarshal(resp.Data, &out) == nil && out.PlaceOrder.Status != "" {
			st = out.PlaceOrder.Status
		}
		statuses[st]++
	}
	if err := r.stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	// Stopping flushed the queue: nothing is waited for after it.
	t.Logf("8 checkouts: %v", statuses)
	findRetriedCheckout(t, rc, 1)
}

// With -processes each process exports its own spans: the checkout's
// trace is put together by the receiver from the gateway's, the order
// service's and payment's processes, each span under its service.
func TestOTLPExportFromEveryProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nine processes")
	}
	rc := newOTLPReceiver(t)
	p := startProcesses(t, buildCommand(t), "-otlp", rc.srv.URL, "-lab", "03=solution", "-lab", "08=solution", "-fast", "-latency", "off",
		"-fault", "payment:POST /charges=lose")
	statuses := map[string]int{}
	for range 8 {
		statuses[p.checkout()]++
	}
	t.Logf("8 checkouts: %v", statuses)
	// The processes send a batch at least every second (otlp.BatchDelay).
	complete := func() bool {
		for id, spans := range rc.traces() {
			if c := judge(id, spans); c.complete() && c.processes() == 3 {
				return true
			}
		}
		return false
	}
	for start := time.Now(); !complete() && time.Since(start) < 30*time.Second; {
		time.Sleep(100 * time.Millisecond)
	}
	findRetriedCheckout(t, rc, 3)
}

// A -otlp the exporter could not send to stops the program before it
// starts, with a usage error that says why, never a panic.
func TestOTLPFlagRefusesWhatItCannotSendTo(t *testing.T) {
	for _, args := range [][]string{
		{"-otlp", "localhost:4318"},
		{"-otlp", "grpc://localhost:4317"},
		{"-otlp", "http://"},
		{"-otlp", ""},
		{"-otlp", "http://localhost:4318", "-traces", "0"},
	} {
		err := runRefused(t, args)
		if want := otlp.ErrEndpoint; args[1] != "http://localhost:4318" && !errors.Is(err, want) {
			t.Errorf("run %q: %v, want an error wrapping %v", args, err, want)
		}
	}
}
