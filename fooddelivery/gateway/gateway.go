// Package gateway is the food-delivery system's front door: a GraphQL API
// over HTTP that resolves each field by calling the other services, and
// answers with partial data and per-field errors when some of them fail
// (graceful degradation, visible on the wire).
//
// The schema is schema.graphql, embedded; it can be introspected
// (__schema, __type, __typename), so GraphiQL, Apollo and graphql-js's
// buildClientSchema load it. The HTTP side follows the GraphQL-over-HTTP
// specification. A request goes through these steps, and the first that
// fails ends it with a request error (no "data"):
//
//	GET /graphql?query=...&variables=<JSON>&operationName=... or POST
//	/graphql with Content-Type application/json (else 415) and a body of
//	at most Deps.MaxBodyBytes (else 413) holding {"query": "...",
//	"operationName": "...", "variables": {...}}; a missing query, a body
//	that is not such JSON, or variables that are not a JSON object get 400;
//	parse with at most Deps.MaxTokens tokens (TOO_LARGE); nesting at most
//	Deps.MaxDepth fields deep (TOO_DEEP); validation against the schema
//	(VALIDATION_FAILED); choice of the operation (UNKNOWN_OPERATION; a
//	mutation over GET gets 405); coercion of the variables
//	(BAD_VARIABLES); the cost limit, Deps.MaxCost (COST_LIMIT_EXCEEDED);
//	the answer's size, Deps.MaxAnswerFields (ANSWER_TOO_LARGE).
//
// The response is application/graphql-response+json when the Accept
// header ranks it at least as high as application/json, and
// application/json otherwise (no Accept header, */*, or neither type). The
// status follows the specification for that media type: with
// application/json every request error after the HTTP checks above is
// answered 200; with application/graphql-response+json it is 400. A
// request that ran answers 200 with "data" (possibly null) and the field
// errors, if any. When the gateway's concurrency limit is full it answers
// 503 with Retry-After: 1 and an OVERLOADED error.
//
// With Deps.IDE, a browser that opens /graphql (a GET whose Accept header
// names text/html, with no query parameter) gets GraphiQL, the GraphQL
// IDE of package ide, instead of a 400; its files are under
// /graphql/ide/. Everything else about GET /graphql is unchanged, and
// API clients never ask for text/html.
package gateway

import (
	_ "embed"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/gateway/ide"
	"github.com/gophereats/resilience/fooddelivery/telemetry/metrics"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator"
	"github.com/vektah/gqlparser/v2/validator/rules"
)

//go:embed schema.graphql
var schemaText string

// schema is the parsed schema; the embedded file is part of the program,
// so a schema that does not load is a bug and panics at start-up.
var schema = func() *ast.Schema {
	s, err := validator.LoadSchema(validator.Prelude, &ast.Source{Name: "schema.graphql", Input: schemaText, BuiltIn: false})
	if err != nil {
		panic(fmt.Sprintf("gateway: embedded schema does not load: %v", err))
	}
	return s
}()

// Defaults for the limits in Deps.
const (
	// DefaultMaxBodyBytes is the largest request body accepted: 1 MiB.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultMaxTokens is the most lexical tokens a query may have: 2000,
	// about ten times the home-page query.
	DefaultMaxTokens = 2000
	// DefaultMaxDepth is how deep fields may nest: 8. The deepest useful
	// query of the schema, home { restaurants { menu { name } } }, is 4.
	DefaultMaxDepth = 8
)

// Deps are the gateway's dependencies and limits. A nil service makes the
// fields that need it fail with CodeInternal ("not configured"); the rest
// of the schema keeps working.
type Deps struct {
	// Instance counts and limits the gateway's requests; GET and POST
	// /graphql are its routes "GET /graphql" and "POST /graphql". A request
	// over its concurrency limit gets 503 with a GraphQL error (code
	// OVERLOADED) and Retry-After: 1. Nil means an instance named "gateway"
	// with no concurrency limit and its own metrics.
	Instance *fooddelivery.Instance

	Menu    fooddelivery.MenuReader   // restaurants and menus
	Recs    fooddelivery.Recommender  // home-page recommendations and popular dishes
	Reviews fooddelivery.ReviewStore  // submitReview
	Orders  fooddelivery.OrderService // placeOrder and order
	ETA     fooddelivery.ETAReader    // Restaurant.eta
	// Auth checks bearer tokens for order, the mutations and personal
	// recommendations; nil denies every such field with
	// CodeAuthUnavailable (fail closed).
	Auth fooddelivery.Authorizer

	// MaxBodyBytes is the largest request body in bytes; larger ones get
	// 413. Zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxTokens is the most lexical tokens a query may have (enforced by
	// the parser, so a huge query is not parsed in full). Zero means
	// DefaultMaxTokens.
	MaxTokens int
	// MaxDepth is how many fields deep a query may nest: { a { b } } is 2.
	// Fragments count where they are spread. Zero means DefaultMaxDepth.
	// Introspection is not counted (validation bounds it).
	MaxDepth int
	// MaxCost is the most a query may cost (see DefaultMaxCost for how
	// cost is counted); costlier queries get COST_LIMIT_EXCEEDED and
	// nothing runs. Zero means DefaultMaxCost.
	MaxCost int
	// MaxAnswerFields is the most fields an answer may hold (see
	// DefaultMaxAnswerFields for how they are counted); larger answers get
	// ANSWER_TOO_LARGE and nothing runs. Zero means DefaultMaxAnswerFields.
	MaxAnswerFields int

	// IDE serves GraphiQL to browsers: GET /graphql with text/html in
	// Accept and no query parameter gets the IDE's page, and
	// GET /graphql/ide/<file> its files (see IDEPath), all embedded, so it
	// works offline. The page and files are outside the instance's routes,
	// its metrics and its concurrency limit; the queries the IDE sends are
	// ordinary POST /graphql requests. False keeps the 400 such a GET
	// gets without the IDE.
	IDE bool
}

// IDEPath is where the IDE's files are served when Deps.IDE is set.
const IDEPath = "/graphql/ide/"

type server struct {
	d     Deps
	rules *rules.Rules
}

// New returns the gateway's handler: GET and POST /graphql (the API, see
// the package comment) and GET or HEAD /healthz (liveness: always 200
// {"status":"ok"}, outside the instance's concurrency limit so a busy
// gateway is not mistaken for a dead one). Negative limits in d are a
// configuration error and panic.
func New(d Deps) http.Handler {
	if d.MaxBodyBytes < 0 || d.MaxTokens < 0 || d.MaxDepth < 0 || d.MaxCost < 0 || d.MaxAnswerFields < 0 {
		panic(fmt.Sprintf("gateway: negative limit: MaxBodyBytes=%d MaxTokens=%d MaxDepth=%d MaxCost=%d MaxAnswerFields=%d",
			d.MaxBodyBytes, d.MaxTokens, d.MaxDepth, d.MaxCost, d.MaxAnswerFields))
	}
	if d.Instance == nil {
		d.Instance = fooddelivery.NewInstance("gateway", 0, metrics.NewMetrics())
	}
	if d.MaxBodyBytes == 0 {
		d.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if d.MaxTokens == 0 {
		d.MaxTokens = DefaultMaxTokens
	}
	if d.MaxDepth == 0 {
		d.MaxDepth = DefaultMaxDepth
	}
	if d.MaxCost == 0 {
		d.MaxCost = DefaultMaxCost
	}
	if d.MaxAnswerFields == 0 {
		d.MaxAnswerFields = DefaultMaxAnswerFields
	}
	s := &server{d: d, rules: rules.NewDefaultRules()}
	s.rules.AddRule(rejectUnsupportedDirectives.Name, rejectUnsupportedDirectives.RuleFunc)
	s.rules.AddRule(refuseOutOfRangeInts.Name, refuseOutOfRangeInts.RuleFunc)

	r := chi.NewRouter()
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeRequestError(w, r, http.StatusNotFound, CodeRouteNotFound,
			fmt.Sprintf("no route %s %s: the API is GET or POST /graphql", fooddelivery.Quote(r.Method), fooddelivery.Quote(r.URL.Path)))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		allow := "GET, POST"
		if r.URL.Path == "/healthz" || strings.HasPrefix(r.URL.Path, IDEPath) {
			allow = "GET, HEAD"
		}
		w.Header().Set("Allow", allow)
		writeRequestError(w, r, http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			fmt.Sprintf("method %s is not allowed on %s; use %s", fooddelivery.Quote(r.Method), r.URL.Path, allow))
	})
	overloaded := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The public answer says when to come back; the system's internal
		// "don't retry" signal would contradict it.
		w.Header().Del(fooddelivery.HeaderDontRetry)
		w.Header().Set("Retry-After", "1")
		writeRequestError(w, r, http.StatusServiceUnavailable, CodeOverloaded,
			fmt.Sprintf("the gateway is busy: it is at its limit of %d requests at once, so this one was not run; try again in a second", d.Instance.Limit()))
	})
	r.Method(http.MethodPost, "/graphql", refuseBadRequestID(d.Instance.RouteWith("POST /graphql", http.HandlerFunc(s.serveGraphQL), overloaded)))
	get := refuseBadRequestID(d.Instance.RouteWith("GET /graphql", http.HandlerFunc(s.serveGraphQL), overloaded))
	if d.IDE {
		get = withIDE(r, get)
	}
	r.Method(http.MethodGet, "/graphql", get)
	healthz := func(w http.ResponseWriter, _ *http.Request) {
		fooddelivery.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}
	r.Get("/healthz", healthz)
	r.Head("/healthz", healthz)
	return r
}

// bearerToken extracts the token of an "Authorization: Bearer <token>"
// header. An absent header gives ("", nil); a header in any other form
// gives an UNAUTHENTICATED error, reported on the fields that need a user.
func bearerToken(h string) (string, error) {
	if h == "" {
		return "", nil
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", &codedError{code: CodeUnauthenticated, msg: `the Authorization header must be "Bearer <token>"`}
	}
	return token, nil
}

// withIDE routes the IDE's files on r and returns api wrapped so that a
// browser opening the endpoint gets the IDE's page.
func withIDE(r chi.Router, api http.Handler) http.Handler {
	ui := ide.New("/graphql", IDEPath)
	r.Get(IDEPath+"{file}", ui.ServeAsset)
	r.Head(IDEPath+"{file}", ui.ServeAsset)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wantsIDE(r) {
			ui.ServePage(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// wantsIDE reports whether a GET /graphql is a browser opening the page:
// its Accept header names text/html and its URL has no query (a URL that
// does not parse is left to the API, which explains what is wrong).
func wantsIDE(r *http.Request) bool {
	if !acceptsHTML(r.Header.Get("Accept")) {
		return false
	}
	params, err := parseQueryString(r.URL.RawQuery)
	return err == nil && strings.TrimSpace(params.Get("query")) == ""
}
