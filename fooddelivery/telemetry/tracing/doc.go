// Package tracing follows one request through the food-delivery system
// with OpenTelemetry: a server span around every route of every instance
// (Tracer.Server), a client span around every call between services
// (Tracer.Client), a span per attempt below a retrying or hedging
// transport (Tracer.Attempts), W3C Trace Context (the traceparent header)
// on every hop, in memory and on TCP. The spans are kept in a bounded Ring
// in memory, so the system needs nothing installed to show a trace; GET
// /admin/traces lists the latest and GET /admin/traces/{id} gives one.
//
// What the patterns decide is recorded on the span of the call they
// decided for, as events. Most are recorded by the glue that plugs each
// lab in (internal/compose), outside the lab's own code, so that the
// reference and a learner's solution are traced alike.
//
// Every name, in one list (names.go has them as constants, and a test
// keeps this list, the constants and the code in step):
//
// Spans:
//
//	"<instance> <route>"            server: payment POST /charges
//	"<from> -> <to> <METHOD>"       client: order -> payment POST
//	"<from> -> <to> attempt <n>"    one attempt of a retried or hedged call: gateway -> menu attempt 2
//
// Events:
//
//	timeout               the caller gave up at its timeout or deadline (fooddelivery.elapsed_ms)
//	retry.attempt         attempt n was sent (fooddelivery.attempt, fooddelivery.backoff_ms)
//	http.resent           net/http sent the request again on a new connection, the reused one having broken before any answer (fooddelivery.attempt)
//	retry.budget_refused  the retry budget withheld a retry
//	breaker.refused       the circuit breaker failed the call without sending it
//	bulkhead.full         the compartment was full and refused the call (fooddelivery.waited_ms)
//	bulkhead.waited       the call waited for a slot, then ran (fooddelivery.waited_ms)
//	fallback.served       a fallback answered (fooddelivery.fallback)
//	idempotency.replay    payment replayed the stored outcome of a repeated key
//	hedge.sent            a hedged copy was sent (fooddelivery.attempt, fooddelivery.replica)
//	hedge.won             the answer came from this attempt (fooddelivery.attempt)
//	hedge.cancelled       this attempt lost the race and was cancelled (fooddelivery.attempt)
//	fault.injected        an injected fault applied (fooddelivery.fault)
//	limit.rejected        the instance was at its concurrency limit and refused the request
//
// Attributes, besides otelhttp's HTTP semantic conventions:
//
//	fooddelivery.instance         server: the instance ("menu-2")
//	fooddelivery.route            server: the route ("POST /charges")
//	fooddelivery.from             client: the caller ("order")
//	fooddelivery.to               client: the callee ("payment")
//	fooddelivery.attempt          the 1-based attempt number (X-Attempt)
//	fooddelivery.idempotency_key  the Idempotency-Key sent
//	fooddelivery.request_id       the X-Request-Id of the user action
//	fooddelivery.deadline_left_ms server: the budget the request arrived with (X-Timeout-Ms), ms
//	fooddelivery.elapsed_ms       how long a call ran before it timed out, ms
//	fooddelivery.backoff_ms       the wait before a retry, since the previous attempt ended, ms
//	fooddelivery.waited_ms        the wait at a bulkhead, ms
//	fooddelivery.fallback         which fallback served: its extensions.code
//	fooddelivery.replica          the menu replica an attempt went to
//	fooddelivery.fault            the fault rule that applied, as -fault writes it
//	fooddelivery.graphql_errors   gateway: the extensions.code of each error it answered with
//	fooddelivery.graphql_fields   gateway: the root fields asked for ("Mutation.placeOrder")
package tracing
