package dashboard

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

// ViewTraces is the trace view, laid out like the room view for a
// projector: the latest traces the admin API holds (GET /admin/traces on
// the page's own origin), filtered by flow and outcome, and the one
// picked drawn as a waterfall: a bar per span on one time axis, indented
// under its parent, and a mark per event (a pattern's decision) on its
// span's bar. It takes three more query parameters, each at most once:
//
//	flow=checkout|browse                        only the traces of that flow (tracing.Flows)
//	outcome=failed|slow|retried|hedged|fallback only the traces with that outcome (tracing.Outcomes)
//	trace=<32 hex digits>|newest                open that trace, or the newest that matches
//
// The metric panels link here: ?view=traces&outcome=retried&trace=newest
// opens the newest trace with a retry.
const ViewTraces = "traces"

// TraceNewest is the value of the trace parameter that opens the newest
// trace matching the filters.
const TraceNewest = "newest"

// traceParams are the query parameters only the trace view takes.
var traceParams = []string{"flow", "outcome", "trace"}

// checkTraceParams returns a message that says what is wrong with the
// trace view's parameters in q, or "" when they are right: each at most
// once, flow one of tracing.Flows, outcome one of tracing.Outcomes, trace
// TraceNewest or a trace id (32 lowercase hex digits, not all zero, as
// GET /admin/traces lists them).
func checkTraceParams(q url.Values) string {
	for _, k := range traceParams {
		if vs := q[k]; len(vs) > 1 {
			return fmt.Sprintf("%s is given %d times on the trace view; give it once", k, len(vs))
		}
	}
	if v, ok := q["flow"]; ok && !slices.Contains(tracing.Flows, v[0]) {
		return fmt.Sprintf("flow %s is not a flow of the trace view: give %s, or leave flow out for every flow",
			fooddelivery.Quote(v[0]), strings.Join(tracing.Flows, " or "))
	}
	if v, ok := q["outcome"]; ok && !slices.Contains(tracing.Outcomes, v[0]) {
		return fmt.Sprintf("outcome %s is not an outcome of the trace view: give one of %s, or leave outcome out for every trace",
			fooddelivery.Quote(v[0]), strings.Join(tracing.Outcomes, ", "))
	}
	if v, ok := q["trace"]; ok && v[0] != TraceNewest && !tracing.ValidID(v[0]) {
		return fmt.Sprintf("trace %s is not a trace id: give the %d lowercase hex digits GET /admin/traces lists, or %s for the newest trace that matches the filters",
			fooddelivery.Quote(v[0]), tracing.IDLen, TraceNewest)
	}
	return ""
}
