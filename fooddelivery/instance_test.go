package fooddelivery_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
)

func TestRouteReplacesARequestIDThatBreaksTheRule(t *testing.T) {
	for _, tc := range []struct {
		name, id string
		kept     bool
	}{
		{"a short id", "req-7", true},
		{"an id of the maximum length", strings.Repeat("r", fooddelivery.MaxRequestIDLen), true},
		{"a 10,000-byte id", strings.Repeat("r", 10_000), false},
		{"an id with a control character", "req\x01", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var inHeader, inContext, inFault string
			in := fooddelivery.NewInstance("payment", 0, metrics.NewMetrics())
			in.Faults = func(_, _ string, next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					inFault = r.Header.Get(fooddelivery.HeaderRequestID)
					next.ServeHTTP(w, r)
				})
			}
			h := in.Route("POST /charges", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				inHeader = r.Header.Get(fooddelivery.HeaderRequestID)
				inContext = fooddelivery.RequestIDFrom(r.Context())
				w.WriteHeader(http.StatusNoContent)
			}))
			r := httptest.NewRequest(http.MethodPost, "/charges", nil)
			r.Header.Set(fooddelivery.HeaderRequestID, tc.id)
			w := httptest.NewRecorder()

			h.ServeHTTP(w, r)

			assert.Equal(t, http.StatusNoContent, w.Code, "the request is served either way")
			if tc.kept {
				assert.Equal(t, tc.id, inContext, "a valid id is kept")
			} else {
				assert.NotEqual(t, tc.id, inContext, "an id that breaks the rule is not propagated")
				assert.True(t, strings.HasPrefix(inContext, "req-"), "it is replaced by a fresh id, got %q", inContext)
			}
			assert.Equal(t, inContext, inHeader, "header and context agree")
			assert.Equal(t, inContext, inFault, "the fault hook sees the same id")
		})
	}
}

func TestRoutesListsWhatTheInstanceServes(t *testing.T) {
	in := fooddelivery.NewInstance("payment", 0, nil)
	assert.Empty(t, in.Routes(), "no route is registered before the handler is built")
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	in.Route("POST /charges", ok)
	in.RouteWith("GET /charges", ok, nil)
	in.Route("POST /charges", ok) // registered twice, listed once
	assert.Equal(t, []string{"GET /charges", "POST /charges"}, in.Routes())
}
