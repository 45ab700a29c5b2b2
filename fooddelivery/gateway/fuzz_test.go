// Fuzzing the gateway's request decoding. Under plain `go test` the seeds
// below and the corpus in testdata/fuzz/FuzzGraphQLRequest run once each.
// To fuzz (one target at a time; -parallel bounds the workers):
//
//	go test -run '^$' -fuzz '^FuzzGraphQLRequest$' -fuzztime 60s -parallel 2 ./fooddelivery/gateway/
//
// A failing input is written to testdata/fuzz/FuzzGraphQLRequest; keep it
// there as a regression case once the bug is fixed.

package gateway_test

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gophereats/resilience/fooddelivery/gateway"
)

// fuzzLimits keep each input cheap: a fuzzed body or query is small, and a
// large one is refused before it is parsed.
const (
	fuzzMaxBodyBytes = 16 << 10
	fuzzMaxTokens    = 400
	fuzzMaxDepth     = 6
)

// FuzzGraphQLRequest sends one arbitrary HTTP request to the gateway's
// /graphql, in-process, with fakes that answer at once, and checks what
// every client may rely on, whatever it sent: no panic, no 5xx, a JSON
// GraphQL response (a "data" member or a non-empty "errors" array) whose
// errors each have a message and an extensions.code, and a JSON Content-Type.
func FuzzGraphQLRequest(f *testing.F) {
	const (
		restaurants = `{"query":"{ restaurants { id name cuisine } }"}`
		homePage    = `{"query":"{ home { restaurants { id name menu { id name priceCents } menuStale eta } recommendations { id name } } }"}`
		oneByID     = `{"query":"query R($id: ID!) { restaurant(id: $id) { id name menu { name } eta } }","variables":{"id":"r2"}}`
		placeOrder  = `{"query":"mutation Place($input: PlaceOrderInput!) { placeOrder(input: $input) { id status totalCents items { dishId quantity } } }",` +
			`"operationName":"Place","variables":{"input":{"restaurantId":"r1","card":"tok_visa","items":[{"dishId":"d1","quantity":2}]}}}`
		twoOps  = `{"query":"query A { restaurants { id } } query B { home { recommendations { id } } }","operationName":"B"}`
		review  = `{"query":"mutation { submitReview(input: {restaurantId: \"r1\", stars: 5, text: \"great\"}) { id user stars } }"}`
		frags   = `{"query":"{ ...F home { ... on Home { restaurants { __typename id @skip(if: true) name @include(if: false) } } } } fragment F on Query { restaurants { id } }"}`
		intVars = `{"query":"mutation($q: Int!) { placeOrder(input: {restaurantId: \"r1\", card: \"tok_visa\", items: [{dishId: \"d1\", quantity: $q}]}) { id } }","variables":{"q":4294967296}}`
	)
	for _, s := range []struct {
		method, rawQuery, contentType, accept, auth, requestID, body string
	}{
		{"POST", "", "application/json", "application/json", "", "", restaurants},
		{"POST", "", "application/json; charset=utf-8", "application/graphql-response+json", "", "req-42", homePage},
		{"POST", "", "application/json", "application/graphql-response+json, application/json;q=0.9", "Bearer t-alice", "", homePage},
		{"POST", "", "application/json", "*/*", "", "", oneByID},
		{"POST", "", "application/json", "", "Bearer t-alice", "", placeOrder},
		{"POST", "", "application/json", "", "Bearer t-nobody", "", placeOrder},
		{"POST", "", "application/json", "", "Basic dXNlcjpwdw==", "", review},
		{"POST", "", "application/json", "", "", "", twoOps},
		{"POST", "", "application/json", "", "", "", frags},
		{"POST", "", "application/json", "", "Bearer t-bob", "", intVars},
		{"POST", "", "application/json; charset=latin1", "", "", "", restaurants},
		{"POST", "", "text/plain", "", "", "", restaurants},
		{"POST", "", "", "", "", "", restaurants},
		{"POST", "", "application/json", "", "", "", `{"query": `},
		{"POST", "", "application/json", "", "", "", `{"query":"{ restaurants { id }","variables":[1]}`},
		{"GET", "query=%7B+restaurants+%7B+id+name+%7D+%7D", "", "application/json", "", "", ""},
		{"GET", "query=query+R%28%24id%3A+ID%21%29+%7B+restaurant%28id%3A+%24id%29+%7B+name+%7D+%7D&variables=%7B%22id%22%3A%22r1%22%7D&operationName=R", "", "application/graphql-response+json", "", "", ""},
		{"GET", "query=mutation+%7B+submitReview%28input%3A+%7BrestaurantId%3A+%22r1%22%2C+stars%3A+1%2C+text%3A+%22x%22%7D%29+%7B+id+%7D+%7D", "", "", "Bearer t-alice", "", ""},
		{"GET", "query=%7B&variables=%7Bnot+json", "", "", "", "", ""},
		{"GET", "query=%zz;&&variables", "", "", "", "", ""},
		{"PUT", "", "application/json", "", "", "", restaurants},
		{"HEAD", "", "", "", "", "", ""},
	} {
		f.Add(s.method, s.rawQuery, s.contentType, s.accept, s.auth, s.requestID, []byte(s.body))
	}

	f.Fuzz(func(t *testing.T, method, rawQuery, contentType, accept, auth, requestID string, body []byte) {
		s := newSystem()
		deps := s.deps()
		deps.MaxBodyBytes, deps.MaxTokens, deps.MaxDepth = fuzzMaxBodyBytes, fuzzMaxTokens, fuzzMaxDepth
		h := gateway.New(deps)

		r := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
		r.Method = method
		r.URL.RawQuery = rawQuery
		r.RequestURI = "/graphql"
		if rawQuery != "" {
			r.RequestURI += "?" + rawQuery
		}
		for name, v := range map[string]string{
			"Content-Type": contentType, "Accept": accept, "Authorization": auth, "X-Request-Id": requestID,
		} {
			if v != "" {
				r.Header.Set(name, v)
			}
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)

		res := w.Result()
		got := w.Body.Bytes()
		if res.StatusCode >= 500 {
			t.Fatalf("%s /graphql?%s answered %d; bad input is the client's problem, never a 5xx. Body: %s", method, rawQuery, res.StatusCode, got)
		}
		ct := res.Header.Get("Content-Type")
		if mt, _, err := mime.ParseMediaType(ct); err != nil || (mt != "application/json" && mt != "application/graphql-response+json") {
			t.Fatalf("status %d with Content-Type %q, want application/json or application/graphql-response+json", res.StatusCode, ct)
		}
		checkGraphQLResponse(t, res.StatusCode, got)
	})
}

// checkGraphQLResponse fails t unless body is a GraphQL response: a JSON
// object with "data" or a non-empty "errors" list, each error with a
// non-empty message and a non-empty extensions.code string.
func checkGraphQLResponse(t *testing.T, status int, body []byte) {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		t.Fatalf("status %d: the body is not a JSON object (%v): %q", status, err, body)
	}
	rawErrs, hasErrs := top["errors"]
	if _, hasData := top["data"]; !hasData && !hasErrs {
		t.Fatalf("status %d: the body has neither \"data\" nor \"errors\": %s", status, body)
	}
	if !hasErrs {
		return
	}
	var errs []struct {
		Message    *string        `json:"message"`
		Extensions map[string]any `json:"extensions"`
	}
	if err := json.Unmarshal(rawErrs, &errs); err != nil || len(errs) == 0 {
		t.Fatalf("status %d: \"errors\" must be a non-empty list of errors (%v): %s", status, err, body)
	}
	for i, e := range errs {
		if e.Message == nil || *e.Message == "" {
			t.Fatalf("status %d: errors[%d] has no message: %s", status, i, body)
		}
		if code, ok := e.Extensions["code"].(string); !ok || code == "" {
			t.Fatalf("status %d: errors[%d] (%q) has no extensions.code string: %s", status, i, *e.Message, body)
		}
	}
}
