// Package metrics is what a running food-delivery system counts about
// itself: per route of each instance (Metrics.Route, RouteStats: requests
// received, answers by status code, a latency histogram over
// LatencyBuckets and a finer LatencySketch for quantiles), per edge
// between a caller and its dependency (Metrics.Edge, EdgeStats: attempts,
// retries, timeouts, breaker refusals, compartments full, fallbacks,
// hedges, replays), and the state the patterns report (breakers,
// bulkheads, retry budgets). Snapshot reads all of it at once; a Snapshot
// travels between processes in MarshalWire's form, and Metrics.AddSource
// merges another process's into this one's.
//
// Everything the system tells about itself lives under
// fooddelivery/telemetry: this package counts, the parent package
// telemetry serves the counts to Prometheus, tracing records traces and
// keeps the latest in memory, logs writes structured logs that carry the
// trace. Tests read these counters to assert what a stub cannot fake.
//
// It imports nothing of the system, so every service, client and test
// can count without a cycle.
package metrics
