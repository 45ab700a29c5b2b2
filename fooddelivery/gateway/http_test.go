package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	mediaJSON     = "application/json"
	mediaResponse = "application/graphql-response+json"
)

// answer is a decoded HTTP answer of the gateway.
type answer struct {
	status    int
	mediaType string
	header    http.Header
	body      string
	resp      *gateway.Response // nil when the body is not a GraphQL response
}

// send sends method to the gateway's path with headers (name, value
// pairs) and body, and decodes the answer.
func (c *client) send(t *testing.T, method, path, body string, headers ...string) answer {
	t.Helper()
	base := strings.TrimSuffix(c.url, "/graphql")
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.hc.Do(req)
	require.NoError(t, err, "%s %s must get an HTTP answer", method, path)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	a := answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
	a.mediaType, _, _ = mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var out gateway.Response
	if json.Unmarshal(b, &out) == nil && (out.Data != nil || len(out.Errors) > 0) {
		a.resp = &out
	}
	return a
}

// get sends GET /graphql with the URL parameters params (name, value
// pairs), encoded, and an Accept header.
func (c *client) get(t *testing.T, accept string, params ...string) answer {
	t.Helper()
	v := url.Values{}
	for i := 0; i+1 < len(params); i += 2 {
		v.Add(params[i], params[i+1])
	}
	return c.send(t, http.MethodGet, "/graphql?"+v.Encode(), "", "Accept", accept)
}

func firstCode(a answer) string {
	if a.resp == nil || len(a.resp.Errors) == 0 {
		return ""
	}
	return a.resp.Errors[0].Code()
}

func TestGetRunsQueries(t *testing.T) {
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		a := c.get(t, "", "query", `query One($id: ID!) { restaurant(id: $id) { name } } query Other { restaurants { id } }`,
			"variables", `{"id": "r2"}`, "operationName", "One")
		require.Equal(t, http.StatusOK, a.status, "GET /graphql runs a query; body %s", a.body)
		assert.Equal(t, mediaJSON, a.mediaType, "no Accept header: application/json")
		assert.Equal(t, "utf-8", strings.ToLower(mimeParam(a.header, "charset")), "the encoding is stated")
		require.NotNil(t, a.resp)
		assert.JSONEq(t, `{"restaurant":{"name":"Sushi Go"}}`, string(a.resp.Data))
	})
}

func mimeParam(h http.Header, name string) string {
	_, params, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return params[name]
}

func TestGetRefusesMutationsAndMalformedParameters(t *testing.T) {
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		for _, accept := range []string{mediaJSON, mediaResponse} {
			a := c.get(t, accept, "query", `mutation { placeOrder(input: {restaurantId: "r1", items: [{dishId: "d1", quantity: 1}], card: "tok_visa"}) { id } }`)
			assert.Equal(t, http.StatusMethodNotAllowed, a.status, "a mutation over GET (Accept %s)", accept)
			assert.Equal(t, "POST", a.header.Get("Allow"))
			assert.Equal(t, gateway.CodeMethodNotAllowed, firstCode(a), "body %s", a.body)
			assert.Nil(t, a.resp.Data, "nothing ran")
		}
		assert.Zero(t, s.orders.calls.Load(), "a mutation over GET must never reach the order service")
		assert.Zero(t, s.auth.calls.Load(), "nor the auth service")

		for _, tc := range []struct {
			name   string
			params []string
			says   string
		}{
			{"variables not JSON", []string{"query", "{ restaurants { id } }", "variables", "{id: 1"}, "JSON object"},
			{"variables a JSON list", []string{"query", "{ restaurants { id } }", "variables", "[1]"}, "JSON object"},
			{"query twice", []string{"query", "{ restaurants { id } }", "query", "{ home { restaurants { id } } }"}, "appears 2 times"},
			{"no query", []string{"operationName", "A"}, "missing query"},
		} {
			a := c.get(t, "", tc.params...)
			assert.Equal(t, http.StatusBadRequest, a.status, "%s: status", tc.name)
			assert.Equal(t, gateway.CodeMalformedRequest, firstCode(a), "%s: body %s", tc.name, a.body)
			assert.Contains(t, a.body, tc.says, tc.name)
		}
		a := c.send(t, http.MethodGet, "/graphql?query=%zz", "")
		assert.Equal(t, http.StatusBadRequest, a.status, "a bad URL escape")
		assert.Contains(t, a.body, "URL encoding")
		a = c.send(t, http.MethodGet, "/graphql?query={restaurants{id}};x=1", "")
		assert.Equal(t, http.StatusBadRequest, a.status, "a semicolon between parameters")
		assert.Contains(t, a.body, "not ;")

		a = c.send(t, http.MethodGet, "/graphql", "", "Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
		assert.Equal(t, http.StatusBadRequest, a.status, "a browser opening /graphql, without the IDE")
		assert.Equal(t, gateway.CodeMalformedRequest, firstCode(a))
		assert.Contains(t, a.body, "/graphql?query=", "the answer shows how to ask")
	})
}

func TestResponseMediaTypeFollowsAccept(t *testing.T) {
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		for _, tc := range []struct{ accept, want string }{
			{"", mediaJSON},
			{"application/json", mediaJSON},
			{"*/*", mediaJSON},
			{"application/*", mediaJSON},
			{"text/html", mediaJSON},
			{"application/graphql-response+json", mediaResponse},
			{"application/graphql-response+json, application/json;q=0.9", mediaResponse},
			{"application/json;q=0.9, application/graphql-response+json", mediaResponse},
			{"application/json, application/graphql-response+json;q=0.5", mediaJSON},
			{"application/graphql-response+json;q=0, application/json", mediaJSON},
			{"application/graphql-response+json;q=-1, application/json;q=0.5", mediaJSON},
			{"application/graphql-response+json;q=2, application/json;q=0.5", mediaJSON},
			{"application/graphql-response+json;q=0x1p-1, application/json;q=0.4", mediaJSON},
			{"application/graphql-response+json;q=0.3, application/graphql-response+json;q=0.9, application/json;q=0.5", mediaResponse},
		} {
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				var a answer
				if method == http.MethodGet {
					a = c.get(t, tc.accept, "query", "{ restaurants { id } }")
				} else {
					a = c.send(t, method, "/graphql", body("{ restaurants { id } }", nil), "Content-Type", mediaJSON, "Accept", tc.accept)
				}
				assert.Equal(t, tc.want, a.mediaType, "%s with Accept %q", method, tc.accept)
				assert.Equal(t, http.StatusOK, a.status, "%s with Accept %q", method, tc.accept)
				assert.Contains(t, a.header.Values("Vary"), "Accept", "caches must key the answer by Accept")
			}
		}
	})
}

func TestStatusCodesFollowTheMediaType(t *testing.T) {
	s := newSystem()
	s.eta.err = map[string]error{"r1": fooddelivery.ErrUnavailable}
	serve(t, s.deps(), func(t *testing.T, c *client) {
		for _, tc := range []struct {
			name          string
			body          string
			json, graphql int // the status for each media type
			code          string
		}{
			{"field error beside data", body(`{ restaurant(id: "r1") { name eta } }`, nil), 200, 200, gateway.CodeUnavailable},
			{"syntax error", body("{ restaurants {", nil), 200, 400, gateway.CodeParseFailed},
			{"validation error", body("{ restaurants { spiciness } }", nil), 200, 400, gateway.CodeValidationFailed},
			{"unknown operation", `{"query": "query A { restaurants { id } }", "operationName": "B"}`, 200, 400, gateway.CodeUnknownOperation},
			{"bad variables", body("query($id: ID!) { restaurant(id: $id) { id } }", nil), 200, 400, gateway.CodeBadVariables},
			{"body not JSON", `{"query": `, 400, 400, gateway.CodeMalformedRequest},
			{"variables not an object", `{"query": "{ restaurants { id } }", "variables": [7]}`, 400, 400, gateway.CodeMalformedRequest},
		} {
			for _, accept := range []string{mediaJSON, mediaResponse} {
				want := tc.json
				if accept == mediaResponse {
					want = tc.graphql
				}
				a := c.send(t, http.MethodPost, "/graphql", tc.body, "Content-Type", mediaJSON, "Accept", accept)
				assert.Equal(t, want, a.status, "%s, Accept %s: body %s", tc.name, accept, a.body)
				assert.Equal(t, accept, a.mediaType, "%s: media type", tc.name)
				assert.Equal(t, tc.code, firstCode(a), "%s, Accept %s", tc.name, accept)
			}
		}
	})
}

func TestHealthzAnswersHead(t *testing.T) {
	serve(t, newSystem().deps(), func(t *testing.T, c *client) {
		a := c.send(t, http.MethodHead, "/healthz", "")
		assert.Equal(t, http.StatusOK, a.status, "HEAD /healthz answers as GET does")
		assert.Empty(t, a.body, "a HEAD answer has no body")
		a = c.send(t, http.MethodDelete, "/healthz", "")
		assert.Equal(t, http.StatusMethodNotAllowed, a.status)
		assert.Equal(t, "GET, HEAD", a.header.Get("Allow"))
	})
}

func TestOverloadedGatewayAnswersInGraphQL(t *testing.T) {
	s := newSystem()
	s.menu.latency = time.Second
	deps := s.deps()
	deps.Instance = fooddelivery.NewInstance("gateway", 1, metrics.NewMetrics())
	serve(t, deps, func(t *testing.T, c *client) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.query(t, "", `{ restaurants { id } }`, nil)
		}()
		synctest.Wait() // the first request holds the only slot
		for _, accept := range []string{mediaJSON, mediaResponse} {
			a := c.get(t, accept, "query", "{ restaurants { id } }")
			assert.Equal(t, http.StatusServiceUnavailable, a.status)
			assert.Equal(t, "1", a.header.Get("Retry-After"), "the client is told when to come back")
			assert.Empty(t, a.header.Get(fooddelivery.HeaderDontRetry), "and not told the opposite")
			assert.Equal(t, accept, a.mediaType)
			require.NotNil(t, a.resp, "a GraphQL client can show the answer: %s", a.body)
			assert.Nil(t, a.resp.Data)
			assert.Equal(t, gateway.CodeOverloaded, firstCode(a))
			assert.NotContains(t, a.body, `"code":"overloaded"`, "not the inner services' error shape")
		}
		resp, status, err := gateway.Do(context.Background(), c.hc, c.url, "", `{ restaurants { id } }`, nil)
		require.NotNil(t, resp, "gateway.Do returns the GraphQL body of a 503")
		assert.Equal(t, http.StatusServiceUnavailable, status)
		assert.Contains(t, resp.Errors[0].Message, "limit of 1 requests")
		assert.ErrorIs(t, err, fooddelivery.ErrOverloaded, "Do classifies a rejection at the limit as ErrOverloaded")
		<-done
		assert.EqualValues(t, 3, deps.Instance.Metrics.Route("gateway", "GET /graphql").Rejected.Load()+
			deps.Instance.Metrics.Route("gateway", "POST /graphql").Rejected.Load(), "three rejections counted")
		_, _, err = gateway.Do(context.Background(), c.hc, c.url, "", "{ restaurants { id } }", nil)
		assert.NoError(t, err, "the slot is free again")
	})
}
