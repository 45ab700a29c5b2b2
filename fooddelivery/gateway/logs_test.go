package gateway_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/labtest"
	"github.com/gophereats/resilience/fooddelivery/telemetry/logs"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

// logLines decodes a JSON log, one object per line.
func logLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(log) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "a log line that is not JSON: %s", line)
		out = append(out, m)
	}
	return out
}

// What a client is never told is in the gateway's log: an unexpected
// error's text or a panic's value at error, a dependency's failure behind
// the fixed message of its code at info, each on a line that names the
// field, the request id and the trace of the request's server span, while
// the client's answer has its code's fixed message only. The request's own line (route, status) shares the request
// id and the trace id, so that the internal text leads to its request.
func TestLogsCarryTheInternalTextClientsNeverSee(t *testing.T) {
	const secretErr = "eta shard 10.9.8.7:7001 answered garbage: checksum 0xdeadbeef in eta_cache.go:88"
	for _, tc := range []struct {
		name   string
		fail   func(s *system)
		secret string // the internal text
		key    string // the log attribute that must hold it
		code   string // the client's extensions.code
		level  string // the line's level: ERROR for a bug, INFO for a failure the system expects
	}{
		{"error", func(s *system) { s.eta.err = map[string]error{"r2": errors.New(secretErr)} }, secretErr, "error", gateway.CodeInternal, "ERROR"},
		{"panic", func(s *system) { s.eta.panicOn = "r2" }, "eta client bug", "panic", gateway.CodeInternal, "ERROR"},
		{"a dependency's failure", func(s *system) {
			s.eta.err = map[string]error{"r2": fmt.Errorf("%w: eta shard 10.9.8.7:7001 refused the connection", fooddelivery.ErrUnavailable)}
		}, "eta shard 10.9.8.7:7001 refused the connection", "error", gateway.CodeUnavailable, "INFO"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSystem()
			tc.fail(s)
			var out labtest.SyncBuffer
			logger, err := logs.New(&out, logs.FormatJSON, "info")
			require.NoError(t, err)
			tr := tracing.New(tracing.NewRing(10, 64))
			deps := s.deps()
			deps.Instance.Logger = logger
			deps.Instance.Tracer = tr
			requestID := "req-logs-" + tc.name

			serve(t, deps, func(t *testing.T, c *client) {
				req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(`{"query":"{ restaurants { id eta } }"}`))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(fooddelivery.HeaderRequestID, requestID)
				resp, err := c.hc.Do(req)
				require.NoError(t, err, "the gateway must answer")
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				require.NoError(t, err)
				// The request's line and its span are written once the
				// handler has returned, which may be after the client read
				// the answer.
				synctest.Wait()

				// The client's side: a field error with the fixed message.
				require.Equal(t, http.StatusOK, resp.StatusCode, "HTTP status; body %s", body)
				if bytes.Contains(body, []byte(tc.secret)) {
					t.Errorf("the client's answer carries the internal text %q: %s", tc.secret, body)
				}
				var answer gateway.Response
				require.NoError(t, json.Unmarshal(body, &answer), "body %s", body)
				e := answer.ErrorAt("restaurants", 1, "eta")
				require.NotNil(t, e, "no error at restaurants.1.eta; errors: %+v", answer.Errors)
				require.Equal(t, tc.code, e.Code(), "code of the error at restaurants.1.eta: %+v", e)

				// The request's server span, found by the request id it
				// recorded.
				var traceID string
				spanIDs := map[string]bool{}
				for _, tt := range tr.Ring().Traces() {
					for _, sp := range tt.Spans {
						if sp.Name == "gateway POST /graphql" && sp.Attributes[tracing.AttrRequestID] == requestID {
							traceID = tt.TraceID
						}
					}
					if traceID == tt.TraceID {
						for _, sp := range tt.Spans {
							spanIDs[sp.SpanID] = true
						}
						break
					}
				}
				require.NotEmpty(t, traceID, "no span \"gateway POST /graphql\" with request id %s among %d traces", requestID, tr.Ring().Len())

				// The log's side.
				log := out.String()
				lines := logLines(t, log)
				var internal, request map[string]any
				for _, l := range lines {
					if s, _ := l[tc.key].(string); strings.Contains(s, tc.secret) && internal == nil {
						internal = l
					}
					if l["msg"] == "request" && l["request_id"] == requestID {
						request = l
					}
				}
				if internal == nil {
					t.Fatalf("no log line has %q under %q; the %d lines:\n%s", tc.secret, tc.key, len(lines), log)
				}
				if internal["level"] != tc.level || internal["field"] != "Restaurant.eta" || internal["request_id"] != requestID {
					t.Errorf("the line with the internal text has level %v, field %v, request_id %v; want %s, Restaurant.eta, %s: %v",
						internal["level"], internal["field"], internal["request_id"], tc.level, requestID, internal)
				}
				if internal["trace_id"] != traceID {
					t.Errorf("the line with the internal text has trace_id %v, the request's span has %s: %v", internal["trace_id"], traceID, internal)
				}
				if id, _ := internal["span_id"].(string); !spanIDs[id] {
					t.Errorf("the line with the internal text has span_id %q, not one of the %d spans of trace %s: %v", id, len(spanIDs), traceID, internal)
				}
				if request == nil {
					t.Fatalf("no \"request\" line with request_id %s; the %d lines:\n%s", requestID, len(lines), log)
				}
				if request["route"] != "POST /graphql" || request["trace_id"] != traceID || request["status"] != float64(http.StatusOK) {
					t.Errorf("the request's line has route %v, trace_id %v, status %v; want POST /graphql, %s, 200: %v",
						request["route"], request["trace_id"], request["status"], traceID, request)
				}
				if strings.Count(log, tc.secret) != 1 {
					t.Errorf("the internal text %q is in the log %d times, want once:\n%s", tc.secret, strings.Count(log, tc.secret), log)
				}
			})
		})
	}
}
