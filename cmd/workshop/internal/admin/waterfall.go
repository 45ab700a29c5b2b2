package admin

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// traceSpan is what waterfall reads of a span of GET /admin/traces/{id}
// (fooddelivery/telemetry/tracing.Span, decoded from JSON so that the
// tool does not link OpenTelemetry).
type traceSpan struct {
	SpanID     string         `json:"spanId"`
	ParentID   string         `json:"parentId"`
	Name       string         `json:"name"`
	Start      time.Time      `json:"start"`
	DurationMs float64        `json:"durationMs"`
	Error      string         `json:"error"`
	Attributes map[string]any `json:"attributes"`
	Events     []struct {
		Name       string         `json:"name"`
		Time       time.Time      `json:"time"`
		Attributes map[string]any `json:"attributes"`
	} `json:"events"`
}

// waterfall prints one trace for a terminal: a line per span, indented
// under its parent, with its start and duration in milliseconds from the
// trace's first span, its error, and a line per event (a pattern's
// decision) at its time, with the event's attributes:
//
//	trace 4bf9...: 6 spans, 98.6 ms
//	     +0.0   98.6 ms  customer -> gateway POST
//	     +0.2   98.4 ms    gateway POST /graphql
//	    +12.3                · fault.injected fault=lose,p=0.3
func waterfall(w io.Writer, raw []byte) error {
	var answer struct {
		Trace struct {
			TraceID string      `json:"traceId"`
			Spans   []traceSpan `json:"spans"`
		} `json:"trace"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return fmt.Errorf("the admin API's trace is not the JSON this tool reads (%v); admin -json trace ID prints it as it came", err)
	}
	spans := answer.Trace.Spans
	if len(spans) == 0 {
		_, err := fmt.Fprintf(w, "trace %s: no spans\n", answer.Trace.TraceID)
		return err
	}
	start, end := spans[0].Start, spans[0].Start
	ids := map[string]bool{}
	for _, s := range spans {
		start = minTime(start, s.Start)
		if e := s.Start.Add(time.Duration(s.DurationMs * float64(time.Millisecond))); e.After(end) {
			end = e
		}
		ids[s.SpanID] = true
	}
	children := map[string][]traceSpan{}
	for _, s := range spans {
		parent := s.ParentID
		if !ids[parent] {
			parent = "" // a root, or a span whose parent the ring did not keep
		}
		children[parent] = append(children[parent], s)
	}
	for _, c := range children {
		slices.SortStableFunc(c, func(a, b traceSpan) int { return a.Start.Compare(b.Start) })
	}
	ms := func(t time.Time) float64 { return float64(t.Sub(start)) / float64(time.Millisecond) }
	var b strings.Builder
	fmt.Fprintf(&b, "trace %s: %d spans, %.1f ms\n", answer.Trace.TraceID, len(spans), ms(end))
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		for _, s := range children[parent] {
			indent := strings.Repeat("  ", depth)
			line := fmt.Sprintf("%8s %7.1f ms  %s%s", fmt.Sprintf("+%.1f", ms(s.Start)), s.DurationMs, indent, s.Name)
			if s.Error != "" {
				line += "  ERROR " + s.Error
			}
			b.WriteString(line + "\n")
			for _, e := range s.Events {
				fmt.Fprintf(&b, "%8s %10s  %s  · %s%s\n", fmt.Sprintf("+%.1f", ms(e.Time)), "", indent, e.Name, attrText(e.Attributes))
			}
			walk(s.SpanID, depth+1)
		}
	}
	walk("", 0)
	_, err := io.WriteString(w, b.String())
	return err
}

// attrText writes an event's attributes as " key=value ...", sorted, with
// the fooddelivery. prefix of the system's own keys left out.
func attrText(attrs map[string]any) string {
	var b strings.Builder
	for _, k := range slices.SortedFunc(maps.Keys(attrs), cmp.Compare[string]) {
		fmt.Fprintf(&b, " %s=%v", strings.TrimPrefix(k, "fooddelivery."), attrs[k])
	}
	return b.String()
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
