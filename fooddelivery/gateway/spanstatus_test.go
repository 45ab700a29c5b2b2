package gateway_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

// The gateway's server span says what the customer asked for (the root
// fields, in fooddelivery.graphql_fields) and what it was answered: the
// codes of the answer's errors, in fooddelivery.graphql_errors, and an
// error status with the first failure's code, so that the trace list's
// "failed" is a customer's failure; an answer without errors leaves both
// unset.
func TestGatewaySpanRecordsTheErrorsOfItsAnswer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fail      func(s *system)
		wantError string
	}{
		{"an answer without errors", func(*system) {}, ""},
		{"an ETA that failed", func(s *system) { s.eta.err = map[string]error{"r2": errors.New("eta shard down")} }, "INTERNAL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSystem()
			tc.fail(s)
			tr := tracing.New(tracing.NewRing(10, 64))
			deps := s.deps()
			deps.Instance.Tracer = tr
			serve(t, deps, func(t *testing.T, c *client) {
				req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(`{"query":"{ restaurants { id eta } }"}`))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				resp, err := c.hc.Do(req)
				require.NoError(t, err, "the gateway must answer")
				resp.Body.Close()
				synctest.Wait()

				var found []tracing.Span
				for _, tt := range tr.Ring().Traces() {
					for _, sp := range tt.Spans {
						if sp.Name == "gateway POST /graphql" {
							found = append(found, sp)
						}
					}
				}
				require.Len(t, found, 1, "server spans \"gateway POST /graphql\" among %d traces", tr.Ring().Len())
				sp := found[0]
				if fields, _ := sp.Attributes[tracing.AttrGraphQLFields].([]string); len(fields) != 1 || fields[0] != "Query.restaurants" {
					t.Errorf("%s = %#v, want the one root field asked for, [Query.restaurants]", tracing.AttrGraphQLFields, sp.Attributes[tracing.AttrGraphQLFields])
				}
				if sp.Error != tc.wantError {
					t.Errorf("the span's error is %q, want %q (attributes %v)", sp.Error, tc.wantError, sp.Attributes)
				}
				codes, recorded := sp.Attributes[tracing.AttrGraphQLErrors]
				if tc.wantError == "" && recorded {
					t.Errorf("an answer without errors recorded %s = %v", tracing.AttrGraphQLErrors, codes)
				}
				if tc.wantError != "" {
					list, _ := codes.([]string)
					require.Contains(t, list, tc.wantError, "%s = %v", tracing.AttrGraphQLErrors, codes)
				}
			})
		})
	}
}
