package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/gateway"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// body encodes a GraphQL request body.
func body(query string, vars map[string]any) string {
	b, _ := json.Marshal(gateway.Request{Query: query, Variables: vars})
	return string(b)
}

func TestMalformedRequestsGetUsefulErrorsNever500(t *testing.T) {
	deep := "{ " + strings.Repeat("a { ", 12) + "b" + strings.Repeat(" }", 12) + " }"
	manyTokens := "{ restaurants { " + strings.Repeat("id ", 3000) + "} }"
	huge := `{"query": "{ restaurants { id } }", "pad": "` + strings.Repeat("x", 2<<20) + `"}`

	for _, tc := range []struct {
		name        string
		method      string // default POST
		contentType string // default application/json
		body        string
		status      int
		code        string
		says        []string // the message contains each of these
	}{
		{name: "body is not JSON", body: `{"query": `, status: 400, code: gateway.CodeMalformedRequest, says: []string{"JSON"}},
		{name: "body is a JSON string", body: `"{ restaurants { id } }"`, status: 400, code: gateway.CodeMalformedRequest, says: []string{`{"query"`}},
		{name: "query is a number", body: `{"query": 42}`, status: 400, code: gateway.CodeMalformedRequest, says: []string{"query"}},
		{name: "empty query", body: `{"query": "  "}`, status: 400, code: gateway.CodeMalformedRequest, says: []string{"missing query"}},
		{name: "variables are not an object", body: `{"query": "{ restaurants { id } }", "variables": [1]}`, status: 400, code: gateway.CodeMalformedRequest},
		{name: "syntax error", body: body("{ restaurants { id }", nil), status: 200, code: gateway.CodeParseFailed, says: []string{"syntax error", "line 1, column"}},
		{name: "unknown field", body: body("{\n  restaurants { id spiciness }\n}", nil), status: 200, code: gateway.CodeValidationFailed,
			says: []string{"spiciness", "line 2, column 20"}},
		{name: "missing argument", body: body("{ restaurant { id } }", nil), status: 200, code: gateway.CodeValidationFailed, says: []string{"id"}},
		{name: "query too deep", body: body(deep, nil), status: 200, code: gateway.CodeTooDeep, says: []string{"13 deep", "limit of 8"}},
		{name: "fragment cycle", body: body("{ ...A } fragment A on Query { ...B } fragment B on Query { ...A restaurants { id } }", nil),
			status: 200, code: gateway.CodeValidationFailed, says: []string{"A"}},
		{name: "too many tokens", body: body(manyTokens, nil), status: 200, code: gateway.CodeTooLarge, says: []string{"2000 tokens"}},
		{name: "wrong variable type", body: body("query($id: ID!) { restaurant(id: $id) { id } }", map[string]any{"id": true}),
			status: 200, code: gateway.CodeBadVariables, says: []string{"$id", "bool"}},
		{name: "missing variable", body: body("query($id: ID!) { restaurant(id: $id) { id } }", nil),
			status: 200, code: gateway.CodeBadVariables, says: []string{"$id", "must be defined"}},
		{name: "bad nested variable", body: body(placeOrder, map[string]any{"input": map[string]any{"restaurantId": "r1", "card": "tok_visa", "items": []any{map[string]any{"dishId": "d1", "quantity": "two"}}}}),
			status: 200, code: gateway.CodeBadVariables, says: []string{"$input.items[0].quantity"}},
		{name: "unknown operationName", body: `{"query": "query A { restaurants { id } }", "operationName": "B"}`,
			status: 200, code: gateway.CodeUnknownOperation, says: []string{`"B"`, `"A"`}},
		{name: "two operations, no operationName", body: body("query A { restaurants { id } } query B { home { recommendations { id } } }", nil),
			status: 200, code: gateway.CodeUnknownOperation, says: []string{"operationName"}},
		{name: "GET without a query", method: http.MethodGet, body: "", status: 400, code: gateway.CodeMalformedRequest, says: []string{"missing query", "?query="}},
		{name: "PUT", method: http.MethodPut, body: body("{ restaurants { id } }", nil), status: 405, code: gateway.CodeMethodNotAllowed, says: []string{"GET, POST"}},
		{name: "wrong content type", contentType: "text/plain", body: body("{ restaurants { id } }", nil), status: 415, code: gateway.CodeUnsupportedMediaType, says: []string{"application/json"}},
		{name: "no content type", contentType: "-", body: body("{ restaurants { id } }", nil), status: 415, code: gateway.CodeUnsupportedMediaType},
		{name: "huge body", body: huge, status: 413, code: gateway.CodeTooLarge, says: []string{"1048576 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSystem()
			serve(t, s.deps(), func(t *testing.T, c *client) {
				method, ct := tc.method, tc.contentType
				if method == "" {
					method = http.MethodPost
				}
				switch ct {
				case "":
					ct = "application/json"
				case "-":
					ct = ""
				}
				status, resp, _ := c.raw(t, method, ct, tc.body)
				require.Less(t, status, 500, "bad input is the client's problem, never a 5xx")
				assert.Equal(t, tc.status, status, "HTTP status")
				require.NotNil(t, resp, "the answer is a GraphQL response body")
				assert.Nil(t, resp.Data, "a request error means nothing ran: no data key")
				require.NotEmpty(t, resp.Errors, "the response says what is wrong")
				e := resp.Errors[0]
				assert.Equal(t, tc.code, e.Code(), "extensions.code; message %q", e.Message)
				for _, want := range tc.says {
					assert.Contains(t, e.Message, want, "the message helps the client fix the request")
				}
				assert.Zero(t, s.menu.restaurantsCalls.Load()+s.recs.popularCalls.Load(), "nothing is executed for a bad request")
			})
		})
	}
}

func TestRequestIDThatBreaksTheRuleIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, id string
		says     []string
	}{
		{"10,000 characters", strings.Repeat("r", 10_000), []string{"X-Request-Id must be at most 128 bytes", "(10000 bytes)"}},
		{"129 characters", strings.Repeat("r", 129), []string{"at most 128 bytes", "got 129 bytes"}},
		{"a tab inside", "req\t1", []string{"printable ASCII", "0x09"}},
		{"non-ASCII", "réq-1", []string{"printable ASCII", "0xc3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSystem()
			serve(t, s.deps(), func(t *testing.T, c *client) {
				req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body("{ restaurants { id } }", nil)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(fooddelivery.HeaderRequestID, tc.id)
				hresp, err := c.hc.Do(req)
				require.NoError(t, err)
				defer hresp.Body.Close()

				assert.Equal(t, http.StatusBadRequest, hresp.StatusCode, "an id that breaks the rule is the client's mistake")
				var resp gateway.Response
				require.NoError(t, json.NewDecoder(hresp.Body).Decode(&resp), "the answer is a GraphQL response")
				assert.Nil(t, resp.Data, "nothing ran")
				require.Len(t, resp.Errors, 1)
				assert.Equal(t, gateway.CodeMalformedRequest, resp.Errors[0].Code())
				for _, want := range tc.says {
					assert.Contains(t, resp.Errors[0].Message, want, "the message states the rule and the value")
				}
				assert.Less(t, len(resp.Errors[0].Message), 400, "the id is echoed truncated: %s", resp.Errors[0].Message)
				assert.NotContains(t, hresp.Header.Get(fooddelivery.HeaderRequestID), tc.id, "the bad id is not echoed back as a header")
				assert.Zero(t, s.menu.restaurantsCalls.Load(), "nothing is executed")
			})
		})
	}

	t.Run("128 characters", func(t *testing.T) {
		s := newSystem()
		serve(t, s.deps(), func(t *testing.T, c *client) {
			id := strings.Repeat("r", fooddelivery.MaxRequestIDLen)
			req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body("{ restaurants { id } }", nil)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(fooddelivery.HeaderRequestID, id)
			hresp, err := c.hc.Do(req)
			require.NoError(t, err)
			hresp.Body.Close()
			assert.Equal(t, http.StatusOK, hresp.StatusCode, "an id of exactly the limit is fine")
			assert.Equal(t, id, hresp.Header.Get(fooddelivery.HeaderRequestID), "and is echoed")
			assert.Equal(t, []string{id}, s.menu.requestIDs, "and reaches the dependencies")
		})
	})
}

func TestLongInputIsEchoedTruncated(t *testing.T) {
	huge := strings.Repeat("x", 900_000)
	for _, tc := range []struct {
		name   string
		req    gateway.Request
		path   []any  // the field error's path; nil for a request error
		code   string // extensions.code
		says   []string
		maxLen int
	}{
		{name: "a 900 KB restaurant id", req: gateway.Request{Query: `query($id: ID!) { restaurant(id: $id) { id } }`, Variables: map[string]any{"id": huge}},
			path: []any{"restaurant"}, code: gateway.CodeNotFound, says: []string{"there is no restaurant", `"xxxx`, "(900000 bytes)"}, maxLen: 400},
		{name: "a 900 KB id of someone else's order", req: gateway.Request{Query: `query($id: ID!) { order(id: $id) { id } }`, Variables: map[string]any{"id": huge}},
			path: []any{"order"}, code: gateway.CodeNotFound, says: []string{"you have no order", "(900000 bytes)"}, maxLen: 400},
		{name: "a 900 KB operationName", req: gateway.Request{Query: `query A { restaurants { id } }`, OperationName: huge},
			code: gateway.CodeUnknownOperation, says: []string{"operationName", "(900000 bytes)", `"A"`}, maxLen: 400},
		{name: "a 900 KB field name", req: gateway.Request{Query: `{ restaurants { ` + huge + ` } }`},
			code: gateway.CodeValidationFailed, says: []string{"Cannot query field", "bytes left out", "(at line 1, column 17)"}, maxLen: 1100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSystem()
			s.orders.orders[huge] = fooddelivery.Order{ID: huge, User: "bob"}
			serve(t, s.deps(), func(t *testing.T, c *client) {
				resp, status, err := gateway.DoRequest(context.Background(), c.hc, c.url, "t-alice", tc.req)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, status)
				require.Len(t, resp.Errors, 1, "errors: %.300v", resp.Errors)
				e := resp.Errors[0]
				if tc.path != nil {
					assert.Equal(t, tc.path, e.Path)
				}
				assert.Equal(t, tc.code, e.Code())
				for _, want := range tc.says {
					assert.Contains(t, e.Message, want)
				}
				assert.LessOrEqual(t, len(e.Message), tc.maxLen, "the input comes back truncated: %.2000s", e.Message)
			})
		})
	}
}

func TestUnknownRouteEchoesThePathTruncated(t *testing.T) {
	serve(t, newSystem().deps(), func(t *testing.T, c *client) {
		url := strings.TrimSuffix(c.url, "/graphql") + "/" + strings.Repeat("p", 50_000)
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		hresp, err := c.hc.Do(req)
		require.NoError(t, err)
		defer hresp.Body.Close()
		assert.Equal(t, http.StatusNotFound, hresp.StatusCode)
		var resp gateway.Response
		require.NoError(t, json.NewDecoder(hresp.Body).Decode(&resp))
		require.Len(t, resp.Errors, 1)
		assert.Contains(t, resp.Errors[0].Message, "(50001 bytes)", "the path is quoted truncated")
		assert.Less(t, len(resp.Errors[0].Message), 400)
	})
}

func TestValidationErrorsAreCappedAndStringIntsRefused(t *testing.T) {
	s := newSystem()
	serve(t, s.deps(), func(t *testing.T, c *client) {
		var b strings.Builder
		b.WriteString("{ restaurants {")
		for range 200 {
			b.WriteString(" A: id A: name")
		}
		b.WriteString(" } }")
		resp := c.query(t, "", b.String(), nil)
		require.Len(t, resp.Errors, 101, "100 conflicts and a note of how many more, not tens of thousands")
		assert.Contains(t, resp.Errors[100].Message, "more validation errors")

		resp = c.query(t, "t-alice", `mutation($i: ReviewInput!) { submitReview(input: $i) { id } }`,
			map[string]any{"i": map[string]any{"restaurantId": "r1", "stars": "3", "text": "fine"}})
		require.NotEmpty(t, resp.Errors, "an Int sent as a JSON string is not an Int")
		assert.Zero(t, s.reviews.calls.Load(), "and the review is not stored")
	})
}
