package tracing

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The Ring's default bounds: the 500 latest traces, each with at most 256
// spans (a checkout with every retry and hedge has about 20). A span
// keeps at most 128 events and 128 attributes, OpenTelemetry's default
// span limits.
const (
	DefaultTraces        = 500
	DefaultSpansPerTrace = 256
)

// SlowTrace is the duration from which a trace counts as slow in
// Summary.Outcomes: 1 s, the mobile customers' budget of lab 10.
const SlowTrace = time.Second

// Span is one recorded span, in the shape GET /admin/traces/{id} answers.
// Times are wall-clock (virtual under testing/synctest); offsets and
// durations are in milliseconds.
type Span struct {
	SpanID     string         `json:"spanId"`
	ParentID   string         `json:"parentId,omitempty"` // "" for the trace's root
	Name       string         `json:"name"`
	Kind       string         `json:"kind"`    // "server", "client" or "internal"
	Service    string         `json:"service"` // the instance it ran on (server) or that made the call (client)
	Start      time.Time      `json:"start"`
	DurationMs float64        `json:"durationMs"`
	Error      string         `json:"error,omitempty"` // the span's error status message, or its HTTP status when >= 500
	Attributes map[string]any `json:"attributes,omitempty"`
	Events     []SpanEvent    `json:"events,omitempty"`
}

// SpanEvent is one event of a Span: a pattern's decision (names.go).
type SpanEvent struct {
	Name       string         `json:"name"`
	Time       time.Time      `json:"time"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// Trace is every span the Ring holds of one trace, by start time.
type Trace struct {
	TraceID string `json:"traceId"`
	Spans   []Span `json:"spans"`

	rooted bool // the Ring holds its root span (ParentID ""): the trace has ended here
}

// Summary describes one trace in the list of GET /admin/traces.
type Summary struct {
	TraceID    string    `json:"traceId"`
	Root       string    `json:"root"` // the earliest span's name
	Flow       string    `json:"flow"` // FlowCheckout or FlowBrowse
	Start      time.Time `json:"start"`
	DurationMs float64   `json:"durationMs"`
	Spans      int       `json:"spans"`
	Services   []string  `json:"services"`
	// Outcomes are the Outcome values that apply, sorted.
	Outcomes []string `json:"outcomes"`
}

// Flows of a trace: a checkout asked the gateway for Mutation.placeOrder
// or reached the order service's POST /orders; everything else is
// browsing.
const (
	FlowCheckout = "checkout"
	FlowBrowse   = "browse"
)

// Outcomes a trace can have, for filtering; a trace may have several.
const (
	OutcomeFailed   = "failed"   // the customer got a failure: the root span or a gateway server span ended in error, or answered 5xx
	OutcomeSlow     = "slow"     // it took SlowTrace or longer
	OutcomeRetried  = "retried"  // a call was sent again, by a retry loop (EventAttempt) or by net/http itself (EventResent); a hedged copy is not a retry
	OutcomeHedged   = "hedged"   // a hedged copy was sent
	OutcomeFallback = "fallback" // a fallback served
)

// Ring keeps the latest traces in memory, within its bounds, as a span
// processor of the Tracer: it records a span when it ends. The oldest
// trace is dropped first. It is safe for concurrent use.
type Ring struct {
	maxTraces, maxSpans int

	mu     sync.Mutex
	traces map[trace.TraceID]*Trace
	order  []trace.TraceID // oldest first
}

// NewRing returns an empty Ring that keeps at most traces traces of at
// most spans spans each; a bound below 1 is taken as 1.
func NewRing(traces, spans int) *Ring {
	return &Ring{maxTraces: max(traces, 1), maxSpans: max(spans, 1), traces: map[trace.TraceID]*Trace{}}
}

// OnStart does nothing: a span is recorded when it ends.
func (r *Ring) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd records s.
func (r *Ring) OnEnd(s sdktrace.ReadOnlySpan) {
	rec := record(s)
	id := s.SpanContext().TraceID()
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.traces[id]
	if !ok {
		if len(r.order) >= r.maxTraces {
			r.evict()
		}
		t = &Trace{TraceID: id.String()}
		r.traces[id] = t
		r.order = append(r.order, id)
	}
	if len(t.Spans) < r.maxSpans {
		t.Spans = append(t.Spans, rec)
	}
	t.rooted = t.rooted || rec.ParentID == ""
}

// evictScan is how many of the oldest traces evict looks at for one that
// has ended.
const evictScan = 64

// evict drops the oldest trace that has ended (its root span recorded)
// among the evictScan oldest, or else the oldest: a trace still in flight,
// whose early spans ended long before its root (a checkout waiting on a
// hung call), keeps what it has recorded while newer traces come and go.
// A process that holds no root of its own (a service of -processes, whose
// roots are in the gateway's process) drops the oldest. r.mu is held.
func (r *Ring) evict() {
	victim := 0
	for i, id := range r.order[:min(len(r.order), evictScan)] {
		if r.traces[id].rooted {
			victim = i
			break
		}
	}
	delete(r.traces, r.order[victim])
	r.order = slices.Delete(r.order, victim, victim+1)
}

// Shutdown does nothing: the Ring holds no resources.
func (r *Ring) Shutdown(context.Context) error { return nil }

// ForceFlush does nothing: spans are recorded as they end.
func (r *Ring) ForceFlush(context.Context) error { return nil }

// Len returns how many traces the Ring holds.
func (r *Ring) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.order)
}

// Trace returns a copy of the trace with the hex id, its spans by start
// time, and false when the Ring does not hold it.
func (r *Ring) Trace(id string) (Trace, bool) {
	tid, err := trace.TraceIDFromHex(id)
	if err != nil {
		return Trace{}, false
	}
	r.mu.Lock()
	t, ok := r.traces[tid]
	var out Trace
	if ok {
		out = Trace{TraceID: t.TraceID, Spans: slices.Clone(t.Spans)}
	}
	r.mu.Unlock()
	sort.SliceStable(out.Spans, func(i, j int) bool { return out.Spans[i].Start.Before(out.Spans[j].Start) })
	return out, ok
}

// Traces returns a copy of every trace the Ring holds, oldest first, each
// with its spans by start time.
func (r *Ring) Traces() []Trace {
	r.mu.Lock()
	ids := make([]string, 0, len(r.order))
	for _, id := range r.order {
		ids = append(ids, id.String())
	}
	r.mu.Unlock()
	out := make([]Trace, 0, len(ids))
	for _, id := range ids {
		if t, ok := r.Trace(id); ok {
			out = append(out, t)
		}
	}
	return out
}

// Summarize describes t for the list of traces.
func Summarize(t Trace) Summary {
	s := Summary{TraceID: t.TraceID, Spans: len(t.Spans), Flow: FlowBrowse}
	if len(t.Spans) == 0 {
		return s
	}
	s.Root, s.Start = t.Spans[0].Name, t.Spans[0].Start
	end := s.Start
	services := map[string]bool{}
	outcomes := map[string]bool{}
	for i, sp := range t.Spans {
		if e := sp.Start.Add(time.Duration(sp.DurationMs * float64(time.Millisecond))); e.After(end) {
			end = e
		}
		if sp.Service != "" {
			services[sp.Service] = true
		}
		// What failed below the gateway and was recovered (an attempt a
		// retry repeated, a hedge's cancelled loser) is not the trace's
		// failure: only what the customer was answered is.
		if sp.Error != "" && (i == 0 || sp.Kind == "server" && sp.Service == "gateway") {
			outcomes[OutcomeFailed] = true
		}
		if sp.Attributes[AttrRoute] == "POST /orders" || hasString(sp.Attributes[AttrGraphQLFields], "Mutation.placeOrder") {
			s.Flow = FlowCheckout
		}
		for _, e := range sp.Events {
			switch e.Name {
			case EventAttempt, EventResent:
				outcomes[OutcomeRetried] = true
			case EventHedgeSent:
				outcomes[OutcomeHedged] = true
			case EventFallback:
				outcomes[OutcomeFallback] = true
			}
		}
	}
	s.DurationMs = ms(end.Sub(s.Start))
	if end.Sub(s.Start) >= SlowTrace {
		outcomes[OutcomeSlow] = true
	}
	for k := range services {
		s.Services = append(s.Services, k)
	}
	sort.Strings(s.Services)
	s.Outcomes = []string{}
	for k := range outcomes {
		s.Outcomes = append(s.Outcomes, k)
	}
	sort.Strings(s.Outcomes)
	return s
}

// hasString reports whether v, an attribute's value as recorded ([]string)
// or as read back from JSON ([]any), holds want.
func hasString(v any, want string) bool {
	switch l := v.(type) {
	case []string:
		return slices.Contains(l, want)
	case []any:
		return slices.Contains(l, any(want))
	}
	return false
}

// Has reports whether the summary has outcome o.
func (s Summary) Has(o string) bool { return slices.Contains(s.Outcomes, o) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// record turns an ended span into a Span.
func record(s sdktrace.ReadOnlySpan) Span {
	out := Span{
		SpanID:     s.SpanContext().SpanID().String(),
		Name:       s.Name(),
		Kind:       strings.ToLower(s.SpanKind().String()),
		Start:      s.StartTime(),
		DurationMs: ms(s.EndTime().Sub(s.StartTime())),
		Attributes: attrs(s.Attributes()),
	}
	if p := s.Parent(); p.IsValid() {
		out.ParentID = p.SpanID().String()
	}
	if v, ok := out.Attributes[AttrInstance].(string); ok {
		out.Service = v
	} else if v, ok := out.Attributes[AttrFrom].(string); ok {
		out.Service = v
	}
	if st := s.Status(); st.Code == codes.Error {
		out.Error = st.Description
		if out.Error == "" {
			out.Error = "error"
		}
	}
	if code, ok := out.Attributes["http.response.status_code"].(int64); ok && code >= 500 && out.Error == "" {
		out.Error = "HTTP " + strconv.FormatInt(code, 10)
	}
	for _, e := range s.Events() {
		out.Events = append(out.Events, SpanEvent{Name: e.Name, Time: e.Time, Attributes: attrs(e.Attributes)})
	}
	return out
}

// attrs turns attributes into a JSON-friendly map (nil for none).
func attrs(kv []attribute.KeyValue) map[string]any {
	if len(kv) == 0 {
		return nil
	}
	m := make(map[string]any, len(kv))
	for _, a := range kv {
		m[string(a.Key)] = a.Value.AsInterface()
	}
	return m
}

// Flows and Outcomes are the values a list of traces filters by.
var (
	Flows    = []string{FlowCheckout, FlowBrowse}
	Outcomes = []string{OutcomeFailed, OutcomeSlow, OutcomeRetried, OutcomeHedged, OutcomeFallback}
)

// MaxList is the most summaries one List returns.
const MaxList = DefaultTraces

// List summarizes traces, newest first, keeping those of flow (""
// for any) that have outcome ("" for any), at most limit (1 to MaxList).
// It returns an error naming the values it takes for an unknown flow or
// outcome, or a limit out of range.
func List(traces []Trace, flow, outcome string, limit int) ([]Summary, error) {
	if flow != "" && !slices.Contains(Flows, flow) {
		return nil, fmt.Errorf("flow %q: give one of %s, or none for every flow", flow, strings.Join(Flows, ", "))
	}
	if outcome != "" && !slices.Contains(Outcomes, outcome) {
		return nil, fmt.Errorf("outcome %q: give one of %s, or none for every trace", outcome, strings.Join(Outcomes, ", "))
	}
	if limit < 1 || limit > MaxList {
		return nil, fmt.Errorf("limit %d: give 1 to %d", limit, MaxList)
	}
	out := []Summary{}
	for i := len(traces) - 1; i >= 0 && len(out) < limit; i-- {
		s := Summarize(traces[i])
		if (flow == "" || s.Flow == flow) && (outcome == "" || s.Has(outcome)) {
			out = append(out, s)
		}
	}
	return out, nil
}

// IDLen is the length of a trace id as the Ring lists them: 32 hex
// digits, W3C Trace Context's 16 bytes.
const IDLen = 32

// ValidID reports whether s is a trace id as the Ring lists them: a W3C
// trace id in lowercase hex, IDLen digits, not all zero (Trace Context's
// invalid id).
func ValidID(s string) bool {
	if len(s) != IDLen {
		return false
	}
	zero := true
	for _, c := range s {
		switch {
		case c == '0':
		case c >= '1' && c <= '9', c >= 'a' && c <= 'f':
			zero = false
		default:
			return false
		}
	}
	return !zero
}
