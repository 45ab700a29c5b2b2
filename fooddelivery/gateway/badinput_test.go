package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

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
