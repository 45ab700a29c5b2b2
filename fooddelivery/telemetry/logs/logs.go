// Package logs is the food-delivery system's structured logging, with
// log/slog: every line a service writes about a request carries the
// request's trace_id and span_id (OpenTelemetry's, from the context), so
// that a log line leads to its trace on the dashboard and a trace to its
// lines.
//
// What is logged, and at which level:
//
//	info   one line per request an instance answered ("request": instance,
//	       route, status, duration_ms, request_id, attempt), and one per
//	       pattern decision recorded on a span (tracing.Event: "decision",
//	       with the event's name and attributes)
//	error  the internal error text a client never sees (the gateway's
//	       INTERNAL errors and recovered panics), with the request it
//	       belongs to
//
// The default level of cmd/fooddelivery is warn, quiet while a demo runs
// (an injected fault's 503 is not worth a line, an internal error is, and
// so is a circuit breaker that opens, which lab 05's breaker logs at
// warn); cmd/fooddelivery's -log-level info shows every request. A service finds its logger on the
// request's context (From), where its instance put it (With).
package logs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Formats of New.
const (
	FormatJSON = "json" // one JSON object per line (the default)
	FormatText = "text" // slog's key=value text
)

// Levels are the names -log-level takes, as slog names them.
var Levels = []string{"debug", "info", "warn", "error"}

// New returns a logger writing to w in format (FormatJSON or FormatText)
// at level (one of Levels) and above, each line with the trace_id and
// span_id of its context's span when it has one. It returns an error
// naming the values it takes for any other format or level.
func New(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil || !validLevel(level) {
		return nil, fmt.Errorf("log level %q: give one of %s", level, strings.Join(Levels, ", "))
	}
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler
	switch format {
	case FormatJSON:
		h = slog.NewJSONHandler(w, opts)
	case FormatText:
		h = slog.NewTextHandler(w, opts)
	default:
		return nil, fmt.Errorf("log format %q: give %s or %s", format, FormatJSON, FormatText)
	}
	return slog.New(traced{h}), nil
}

func validLevel(s string) bool {
	for _, l := range Levels {
		if s == l {
			return true
		}
	}
	return false
}

// traced adds the context's trace_id and span_id to every record.
type traced struct{ slog.Handler }

func (t traced) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return t.Handler.Handle(ctx, r)
}

func (t traced) WithAttrs(as []slog.Attr) slog.Handler { return traced{t.Handler.WithAttrs(as)} }
func (t traced) WithGroup(name string) slog.Handler    { return traced{t.Handler.WithGroup(name)} }

// discard is the logger of a context without one.
var discard = slog.New(slog.DiscardHandler)

type loggerKey struct{}

// With returns ctx carrying l (nil: ctx as it is).
func With(ctx context.Context, l *slog.Logger) context.Context {
	if l == nil {
		return ctx
	}
	return context.WithValue(ctx, loggerKey{}, l)
}

// From returns the logger ctx carries, or one that discards everything.
func From(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return discard
}
