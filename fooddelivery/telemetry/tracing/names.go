package tracing

// The names of every span, event and attribute the food-delivery system
// records. doc.go lists them for people; TestNamesAreListed keeps that
// list, these constants and their uses in the code in step. Code outside
// this package names events and attributes through these constants only.

// Span names. A server span is named for the instance and route it serves
// ("payment POST /charges"); a client span for its edge and method
// ("order -> payment POST"); an attempt span, one send of a call that a
// retry or a hedge repeats, for the same edge with its number
// ("order -> payment attempt 2").
const (
	SpanServerFormat  = "%s %s"               // instance, route
	SpanClientFormat  = "%s -> %s %s"         // caller, callee, method
	SpanAttemptFormat = "%s -> %s attempt %d" // caller, callee, attempt number
)

// Event names: what a pattern decided, on the span of the call it decided
// for.
const (
	EventTimeout        = "timeout"              // the caller gave up at its timeout or deadline; AttrElapsedMs
	EventAttempt        = "retry.attempt"        // attempt n of a call was sent; AttrAttempt, AttrBackoffMs
	EventResent         = "http.resent"          // net/http's Transport sent the request again on a new connection (the reused one broke before any answer); AttrAttempt
	EventBudgetRefused  = "retry.budget_refused" // the retry budget withheld a retry of a retryable failure
	EventBreakerRefused = "breaker.refused"      // the circuit breaker failed the call without sending it
	EventBulkheadFull   = "bulkhead.full"        // the compartment was full: the call was refused; AttrWaitedMs
	EventBulkheadWaited = "bulkhead.waited"      // the call waited for a slot, then ran; AttrWaitedMs
	EventFallback       = "fallback.served"      // a fallback answered instead of the dependency; AttrFallback
	EventReplay         = "idempotency.replay"   // payment replayed the stored outcome of a repeated key
	EventHedgeSent      = "hedge.sent"           // a hedged copy of a read was sent; AttrAttempt, AttrReplica
	EventHedgeWon       = "hedge.won"            // the answer came from this attempt; AttrAttempt
	EventHedgeCancelled = "hedge.cancelled"      // this attempt lost the race and was cancelled; AttrAttempt
	EventFault          = "fault.injected"       // an injected fault applied to this request; AttrFault
	EventOverloaded     = "limit.rejected"       // the instance was at its concurrency limit and refused the request
)

// Attribute keys, besides OpenTelemetry's HTTP semantic conventions
// (http.request.method, http.response.status_code, url.path, ...) that
// otelhttp records.
const (
	AttrInstance       = "fooddelivery.instance"         // the instance a server span ran on: "menu-2"
	AttrRoute          = "fooddelivery.route"            // the route it served: "POST /charges"
	AttrFrom           = "fooddelivery.from"             // a client span's caller: "order"
	AttrTo             = "fooddelivery.to"               // a client span's callee: "payment"
	AttrAttempt        = "fooddelivery.attempt"          // the 1-based attempt number (X-Attempt on the wire)
	AttrIdempotencyKey = "fooddelivery.idempotency_key"  // the Idempotency-Key the request carried
	AttrRequestID      = "fooddelivery.request_id"       // the X-Request-Id of the user action
	AttrDeadlineLeftMs = "fooddelivery.deadline_left_ms" // the budget the request arrived with (X-Timeout-Ms), in milliseconds
	AttrElapsedMs      = "fooddelivery.elapsed_ms"       // how long the call ran before it timed out, in milliseconds
	AttrBackoffMs      = "fooddelivery.backoff_ms"       // the wait between the end of the previous attempt and this one, in milliseconds
	AttrWaitedMs       = "fooddelivery.waited_ms"        // how long the call waited at the bulkhead, in milliseconds
	AttrFallback       = "fooddelivery.fallback"         // which fallback served: its extensions.code ("STALE", ...)
	AttrReplica        = "fooddelivery.replica"          // the menu replica an attempt went to: "menu-2"
	AttrFault          = "fooddelivery.fault"            // the fault rule that applied, as -fault writes it
	AttrGraphQLErrors  = "fooddelivery.graphql_errors"   // gateway: the extensions.code of each error of its answer, in order
	AttrGraphQLFields  = "fooddelivery.graphql_fields"   // gateway: the root fields the request asked for ("Mutation.placeOrder")
)
