package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing/otlp"
)

// flushTimeout bounds how long a stopping process waits for its last
// spans to reach the collector (-otlp): less than the 5 s a supervised
// child has between its parent's stop and SIGKILL.
const flushTimeout = 3 * time.Second

// newTracer returns the Tracer opts ask for: nil for -traces 0; else one
// with a ring of -traces traces, and with -otlp an exporter beside it
// that names the spans of no service after this process's (-service, or
// "fooddelivery" for the whole system) and warns on logger.
func newTracer(opts options, logger *slog.Logger) (*tracing.Tracer, error) {
	if opts.traces == 0 {
		return nil, nil
	}
	ring := tracing.NewRing(opts.traces, tracing.DefaultSpansPerTrace)
	if opts.otlp == "" {
		return tracing.New(ring), nil
	}
	p, err := otlp.New(opts.otlp, otlp.Options{Service: opts.service, Logger: logger})
	if err != nil {
		return nil, &usageError{err}
	}
	return tracing.New(ring, p), nil
}

// stopTracer shuts tracer down, sending the spans still queued for
// -otlp within flushTimeout, and warns on logger of what it could not.
func stopTracer(tracer *tracing.Tracer, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if err := tracer.Shutdown(ctx); err != nil {
		logger.Warn("traces: the last spans were not all sent to the collector (-otlp)", "error", err.Error(), "waited", flushTimeout.String())
	}
}
