// Package bench measures the reference solutions' hot paths beside the
// libraries a production service would use for the same pattern (the
// anchors): sony/gobreaker for the breaker, a channel semaphore and
// golang.org/x/sync/semaphore for the bulkhead, a grpc-go-style token
// bucket for the retry budget, cenkalti/backoff for the backoff draw. The
// idempotency key store and the hedging latency tracker have no anchor and
// are measured alone. Every benchmark checks that it measured the success
// path it names and fails (b.Fatal) otherwise.
//
// It is a module of its own, so that learners never download the anchors;
// `go run ./cmd/workshop verify` runs each benchmark once (clause 14 of
// CONTRIBUTING.md) when its modules are in the module cache, and says how
// to fetch them otherwise. README.md beside this file says how to print
// the table: benchstat with the anchor as the baseline column.
package bench
