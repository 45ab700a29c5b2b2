package logs

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// New takes the formats and levels it names and refuses the rest with an
// error that lists what it takes.
func TestNewRefusesWhatItDoesNotTake(t *testing.T) {
	for _, tc := range []struct{ format, level, says string }{
		{"xml", "info", "json or text"},
		{"", "info", "json or text"},
		{"json", "loud", "debug, info, warn, error"},
		{"json", "INFO", "debug, info, warn, error"},
		{"json", "", "debug, info, warn, error"},
	} {
		if _, err := New(&bytes.Buffer{}, tc.format, tc.level); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("New(%q, %q): %v, want an error naming %q", tc.format, tc.level, err, tc.says)
		}
	}
}

// A line logged with a span's context carries its trace_id and span_id; a
// line below the level is not written; From without a logger discards.
func TestLinesCarryTheTraceOfTheirContext(t *testing.T) {
	var out bytes.Buffer
	l, err := New(&out, FormatJSON, "info")
	if err != nil {
		t.Fatal(err)
	}
	tid, _ := trace.TraceIDFromHex("0123456789abcdef0123456789abcdef")
	sid, _ := trace.SpanIDFromHex("0123456789abcdef")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}))
	From(With(ctx, l)).DebugContext(ctx, "below the level")
	From(With(ctx, l)).InfoContext(ctx, "request", "route", "GET /x")
	From(ctx).ErrorContext(ctx, "nobody hears this")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want the one info line, got %d:\n%s", len(lines), out.String())
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatalf("not JSON: %s", lines[0])
	}
	if m["trace_id"] != tid.String() || m["span_id"] != sid.String() || m["route"] != "GET /x" {
		t.Errorf("the line %s: want trace_id %s, span_id %s, route GET /x", lines[0], tid, sid)
	}
}
