package tracing

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A chain of two services over real HTTP: the server span of the callee
// is the child of the caller's client span, which is the child of the
// caller's server span, and the Ring holds them as one trace.
func TestSpansOfOneRequestShareATraceAcrossAHop(t *testing.T) {
	tr := New(NewRing(10, 10))
	callee := httptest.NewServer(tr.Server("payment", "POST /charges", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Event(r.Context(), EventReplay)
		w.WriteHeader(http.StatusCreated)
	})))
	defer callee.Close()
	client := &http.Client{Transport: tr.Client(nil, "order", "payment")}
	caller := httptest.NewServer(tr.Server("order", "POST /orders", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, callee.URL, nil)
		req.Header.Set(headerIdempotencyKey, "k1")
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("the call to payment: %v", err)
			return
		}
		resp.Body.Close()
		w.WriteHeader(http.StatusCreated)
	})))
	defer caller.Close()
	resp, err := http.Post(caller.URL, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	traces := tr.Ring().Traces()
	if len(traces) != 1 {
		t.Fatalf("the ring holds %d traces after one request, want 1", len(traces))
	}
	spans := map[string]Span{}
	for _, s := range traces[0].Spans {
		spans[s.Name] = s
	}
	server, client2, callee2 := spans["order POST /orders"], spans["order -> payment POST"], spans["payment POST /charges"]
	if server.SpanID == "" || client2.SpanID == "" || callee2.SpanID == "" {
		t.Fatalf("the trace has the spans %v, want order POST /orders, order -> payment POST and payment POST /charges", traces[0].Spans)
	}
	if client2.ParentID != server.SpanID || callee2.ParentID != client2.SpanID {
		t.Errorf("parents: client %s under %s (want %s), callee %s under %s (want %s)", client2.SpanID, client2.ParentID, server.SpanID, callee2.SpanID, callee2.ParentID, client2.SpanID)
	}
	if callee2.Attributes[AttrIdempotencyKey] != "k1" || len(callee2.Events) != 1 || callee2.Events[0].Name != EventReplay {
		t.Errorf("payment's span: attributes %v, events %v; want the key k1 and one %s", callee2.Attributes, callee2.Events, EventReplay)
	}
	if callee2.Service != "payment" || client2.Service != "order" {
		t.Errorf("services: callee %q, client %q; want payment and order", callee2.Service, client2.Service)
	}
}

// The Ring keeps its bounds: the oldest trace goes first, and a trace
// keeps its first spans only.
func TestRingKeepsItsBounds(t *testing.T) {
	tr := New(NewRing(3, 2))
	var ids []string
	for range 5 {
		ctx, span := tr.tracer.Start(context.Background(), "root")
		for range 4 {
			_, child := tr.tracer.Start(ctx, "child")
			child.End()
		}
		span.End()
		ids = append(ids, span.SpanContext().TraceID().String())
	}
	r := tr.Ring()
	if r.Len() != 3 {
		t.Fatalf("a ring of 3 holds %d traces after 5", r.Len())
	}
	for i, id := range ids {
		if _, ok := r.Trace(id); ok != (i >= 2) {
			t.Errorf("trace %d of 5: held %v; a ring of 3 holds the 3 latest, the oldest go first", i+1, ok)
		}
	}
	got, ok := r.Trace(ids[4])
	if !ok || len(got.Spans) != 2 {
		t.Errorf("the latest trace: held %v with %d spans, want held with 2 (the bound)", ok, len(got.Spans))
	}
}

// List refuses what it cannot filter by, naming what it takes.
func TestListRefusesUnknownFilters(t *testing.T) {
	for _, tc := range []struct {
		flow, outcome string
		limit         int
		want          string
	}{
		{"chekout", "", 10, "checkout, browse"},
		{"", "slowish", 10, "failed, slow, retried, hedged, fallback"},
		{"", "", 0, "1 to 500"},
		{"", "", 501, "1 to 500"},
	} {
		if _, err := List(nil, tc.flow, tc.outcome, tc.limit); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("List(%q, %q, %d): %v, want an error naming %q", tc.flow, tc.outcome, tc.limit, err, tc.want)
		}
	}
	if got, err := List(nil, FlowCheckout, OutcomeRetried, 5); err != nil || len(got) != 0 {
		t.Errorf("List of no traces: %v, %v; want an empty list", got, err)
	}
}

// A trace failed when the customer was answered with a failure: the root
// span or a gateway server span in error. A hedge's cancelled loser and a
// retried attempt that failed below the gateway are recovered, not failed.
func TestSummarizeCountsAsFailedOnlyWhatTheCustomerGot(t *testing.T) {
	start := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	span := func(name, kind, service, err string, events ...string) Span {
		s := Span{Name: name, Kind: kind, Service: service, Start: start, DurationMs: 20, Error: err}
		for _, e := range events {
			s.Events = append(s.Events, SpanEvent{Name: e, Time: start})
		}
		return s
	}
	for _, tc := range []struct {
		name   string
		spans  []Span
		failed bool
	}{
		{"a hedge's cancelled loser", []Span{
			span("customer -> gateway POST", "client", "customer", ""),
			span("gateway POST /graphql", "server", "gateway", ""),
			span("gateway -> menu attempt 1", "client", "gateway", "context canceled", EventHedgeCancelled),
			span("gateway -> menu attempt 2", "client", "gateway", "", EventHedgeSent, EventHedgeWon),
		}, false},
		{"a lost charge answered again from payment's store", []Span{
			span("gateway POST /graphql", "server", "gateway", ""),
			span("order -> payment attempt 1", "client", "order", "EOF"),
			span("payment POST /charges", "server", "payment", "", EventReplay),
		}, false},
		{"a checkout the gateway answered NOT_CHARGED", []Span{
			span("customer -> gateway POST", "client", "customer", ""),
			span("gateway POST /graphql", "server", "gateway", "NOT_CHARGED"),
			span("order POST /orders", "server", "order", "HTTP 503"),
		}, true},
		{"a customer's call that got no answer", []Span{
			span("customer -> gateway POST", "client", "customer", "connection reset"),
		}, true},
	} {
		s := Summarize(Trace{TraceID: "t", Spans: tc.spans})
		if s.Has(OutcomeRetried) {
			t.Errorf("%s: outcomes %v, want no retried: no retry.attempt", tc.name, s.Outcomes)
		}
		if s.Has(OutcomeFailed) != tc.failed {
			t.Errorf("%s: outcomes %v, want failed %v", tc.name, s.Outcomes, tc.failed)
		}
	}
}

// A trace is retried when a retry loop marked a retry (retry.attempt),
// not when a server span carries an attempt number above 1: a hedged copy
// carries one too, and so can a customer's own header. A checkout is what
// asked the gateway for Mutation.placeOrder, also when no call left it
// (a breaker refused), and also as read back from another process's JSON.
func TestSummarizeTellsRetriesFromHedgesAndFindsCheckouts(t *testing.T) {
	start := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	hedge := Trace{TraceID: "h", Spans: []Span{
		{Name: "gateway POST /graphql", Kind: "server", Service: "gateway", Start: start},
		{Name: "gateway -> menu attempt 2", Kind: "client", Service: "gateway", Start: start,
			Events: []SpanEvent{{Name: EventHedgeSent, Time: start}}},
		{Name: "menu-3 GET /restaurants/{id}/menu", Kind: "server", Service: "menu-3", Start: start,
			Attributes: map[string]any{AttrAttempt: int64(2)}},
	}}
	if s := Summarize(hedge); s.Has(OutcomeRetried) || !s.Has(OutcomeHedged) || s.Flow != FlowBrowse {
		t.Errorf("a hedged read: outcomes %v, flow %s; want hedged, not retried, browse", s.Outcomes, s.Flow)
	}
	retried := Trace{TraceID: "r", Spans: []Span{
		{Name: "order POST /orders", Kind: "server", Service: "order", Start: start, Attributes: map[string]any{AttrRoute: "POST /orders"},
			Events: []SpanEvent{{Name: EventAttempt, Time: start}}},
	}}
	if s := Summarize(retried); !s.Has(OutcomeRetried) || s.Flow != FlowCheckout {
		t.Errorf("a charge retried by the order service's loop: outcomes %v, flow %s; want retried, checkout", s.Outcomes, s.Flow)
	}
	for _, fields := range []any{[]string{"Mutation.placeOrder"}, []any{"Mutation.placeOrder"}} {
		refused := Trace{TraceID: "b", Spans: []Span{
			{Name: "gateway POST /graphql", Kind: "server", Service: "gateway", Start: start, Error: "NOT_CHARGED",
				Attributes: map[string]any{AttrGraphQLFields: fields}, Events: []SpanEvent{{Name: EventBreakerRefused, Time: start}}},
		}}
		if s := Summarize(refused); s.Flow != FlowCheckout || !s.Has(OutcomeFailed) {
			t.Errorf("a checkout the breaker refused at the gateway (fields %#v): flow %s, outcomes %v; want checkout, failed", fields, s.Flow, s.Outcomes)
		}
	}
}

// What a client sends is kept within MaxAttributeLength: a 1 MB
// Idempotency-Key costs each trace a few hundred bytes, not a megabyte.
func TestSpansKeepAClientsHugeHeaderShort(t *testing.T) {
	tr := New(NewRing(10, 10))
	srv := httptest.NewServer(tr.Server("payment", "POST /charges", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodPost, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", strings.Repeat("k", 1<<20))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	traces := tr.Ring().Traces()
	if len(traces) != 1 || len(traces[0].Spans) != 1 {
		t.Fatalf("want one trace of one span, got %d traces", len(traces))
	}
	key, _ := traces[0].Spans[0].Attributes[AttrIdempotencyKey].(string)
	if len(key) == 0 || len(key) > MaxAttributeLength {
		t.Errorf("the span kept an Idempotency-Key of %d bytes from a 1 MiB header, want 1 to %d", len(key), MaxAttributeLength)
	}
}

// A trace in flight (its children ended, its root not yet: a checkout
// waiting on a hung call) keeps its spans while newer traces that have
// ended come and go, and is whole when its root ends.
func TestRingKeepsATraceInFlight(t *testing.T) {
	tr := New(NewRing(3, 10))
	ctx, hung := tr.tracer.Start(context.Background(), "customer -> gateway POST")
	for range 2 {
		_, child := tr.tracer.Start(ctx, "gateway -> auth GET")
		child.End()
	}
	inFlight := hung.SpanContext().TraceID().String()
	for range 5 {
		_, done := tr.tracer.Start(context.Background(), "customer -> gateway GET")
		done.End()
	}
	if got, ok := tr.Ring().Trace(inFlight); !ok || len(got.Spans) != 2 {
		t.Fatalf("the trace in flight: held %v with %d spans after 5 newer traces ended; want held with its 2 ended spans", ok, len(got.Spans))
	}
	hung.End()
	if got, ok := tr.Ring().Trace(inFlight); !ok || len(got.Spans) != 3 || got.Spans[0].Name != "customer -> gateway POST" {
		t.Errorf("once its root ended the trace should be whole: held %v, %d spans", ok, len(got.Spans))
	}
	if n := tr.Ring().Len(); n != 3 {
		t.Errorf("the ring holds %d traces, want its bound 3", n)
	}
}

// ValidID takes exactly the ids the admin API lists: 32 lowercase hex
// digits, not all zero (W3C Trace Context's invalid id).
func TestValidID(t *testing.T) {
	for s, want := range map[string]bool{
		"a95e4b67da66d7a946545af858c865cb":  true,
		"00000000000000000000000000000001":  true,
		"00000000000000000000000000000000":  false,
		"a95e4b67da66d7a946545af858c865c":   false,
		"a95e4b67da66d7a946545af858c865cb0": false,
		"A95E4B67DA66D7A946545AF858C865CB":  false,
		"g95e4b67da66d7a946545af858c865cb":  false,
		"":                                  false,
		"a95e4b67-da66-d7a9-4654-5af858c8":  false,
	} {
		if got := ValidID(s); got != want {
			t.Errorf("ValidID(%q) = %v, want %v", s, got, want)
		}
	}
}

// When the reused connection a keyed POST went out on breaks before any
// answer, net/http sends the request again on a new one by itself; the
// client span marks it http.resent, and the trace counts as retried.
func TestClientSpanMarksWhatNetHTTPResent(t *testing.T) {
	tr := New(NewRing(10, 10))
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 2 { // the POST, on the connection the GET left idle
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	client := &http.Client{Transport: tr.Client(&http.Transport{}, "order", "payment")}
	warm, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, warm.Body)
	warm.Body.Close()
	// No body: the server hangs up after reading the whole request, so the
	// client fails reading the answer (which net/http retries), never
	// writing a body (which it does not).
	req, _ := http.NewRequest(http.MethodPost, srv.URL, http.NoBody)
	req.Header.Set("Idempotency-Key", "order-service/charge/ord-1")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("net/http should have sent the keyed POST again on a new connection: %v", err)
	}
	resp.Body.Close()
	var post Trace
	for _, tt := range tr.Ring().Traces() {
		for _, s := range tt.Spans {
			if s.Name == "order -> payment POST" {
				post = tt
			}
		}
	}
	if len(post.Spans) != 1 || len(post.Spans[0].Events) != 1 || post.Spans[0].Events[0].Name != EventResent {
		t.Fatalf("the POST's trace: %+v; want one client span with one %s event (the server saw %d requests)", post, EventResent, n.Load())
	}
	if !Summarize(post).Has(OutcomeRetried) {
		t.Errorf("a request net/http resent counts as retried: outcomes %v", Summarize(post).Outcomes)
	}
}
