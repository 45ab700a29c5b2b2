// Package gateway is the food-delivery system's front door: a GraphQL API
// over HTTP that resolves each field by calling the other services, and
// answers with partial data and per-field errors when some of them fail
// (graceful degradation, visible on the wire).
//
// The schema is schema.graphql, embedded. A request goes through these
// steps, and the first that fails ends it with a request error:
//
//	POST only (405), Content-Type application/json (415), body at most
//	Deps.MaxBodyBytes (413), body is {"query": "...", "operationName": "...",
//	"variables": {...}} with a non-empty query (400); then, answered with
//	HTTP 200 as GraphQL-over-HTTP asks for application/json: parse with at
//	most Deps.MaxTokens tokens, nesting at most Deps.MaxDepth fields deep
//	(fragments included), validation against the schema, choice of the
//	operation, coercion of the variables.
//
// Then the executor runs the operation and always answers 200 with "data"
// (possibly null) and the field errors, if any.
package gateway

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/gophereats/resilience/fooddelivery"
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
	// Instance counts and limits the gateway's requests; POST /graphql is
	// wrapped with Instance.Route. Nil means an instance named "gateway"
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
	MaxDepth int
}

type server struct {
	d     Deps
	rules *rules.Rules
}

// New returns the gateway's handler: POST /graphql (the API) and GET
// /healthz (liveness: always 200 {"status":"ok"}, outside the instance's
// concurrency limit so a busy gateway is not mistaken for a dead one).
// Negative limits in d are a configuration error and panic.
func New(d Deps) http.Handler {
	if d.MaxBodyBytes < 0 || d.MaxTokens < 0 || d.MaxDepth < 0 {
		panic(fmt.Sprintf("gateway: negative limit: MaxBodyBytes=%d MaxTokens=%d MaxDepth=%d", d.MaxBodyBytes, d.MaxTokens, d.MaxDepth))
	}
	if d.Instance == nil {
		d.Instance = fooddelivery.NewInstance("gateway", 0, fooddelivery.NewMetrics())
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
	s := &server{d: d, rules: rules.NewDefaultRules()}

	r := chi.NewRouter()
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeRequestError(w, http.StatusNotFound, CodeRouteNotFound,
			fmt.Sprintf("no route %s %s: the API is POST /graphql", fooddelivery.Quote(r.Method), fooddelivery.Quote(r.URL.Path)))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		allow := http.MethodPost
		if r.URL.Path == "/healthz" {
			allow = http.MethodGet
		}
		w.Header().Set("Allow", allow)
		writeRequestError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			fmt.Sprintf("method %s is not allowed on %s; use %s", fooddelivery.Quote(r.Method), r.URL.Path, allow))
	})
	r.Method(http.MethodPost, "/graphql", refuseBadRequestID(d.Instance.Route("POST /graphql", http.HandlerFunc(s.serveGraphQL))))
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fooddelivery.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return r
}

// serveGraphQL handles POST /graphql.
func (s *server) serveGraphQL(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(fooddelivery.HeaderRequestID)
	if id == "" {
		id = fooddelivery.NewRequestID()
	}
	ctx := fooddelivery.WithRequestID(r.Context(), id)
	w.Header().Set(fooddelivery.HeaderRequestID, id)

	// Last resort: resolver panics are recovered per field; this catches
	// a bug in the gateway itself so one request cannot kill the process.
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			writeRequestError(w, http.StatusInternalServerError, CodeInternal, "internal error in the gateway; the request was not completed")
		}
	}()

	if status, code, msg := checkContentType(r.Header.Get("Content-Type")); status != 0 {
		writeRequestError(w, status, code, msg)
		return
	}
	if r.ContentLength > s.d.MaxBodyBytes {
		writeRequestError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, tooLargeMessage(s.d.MaxBodyBytes))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.d.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeRequestError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, tooLargeMessage(s.d.MaxBodyBytes))
			return
		}
		writeRequestError(w, http.StatusBadRequest, CodeMalformedRequest, "could not read the request body: "+err.Error())
		return
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		writeRequestError(w, http.StatusBadRequest, CodeMalformedRequest,
			`the body must be a JSON object like {"query": "{ restaurants { name } }", "variables": {}}: `+err.Error())
		return
	}
	if strings.TrimSpace(req.Query) == "" {
		writeRequestError(w, http.StatusBadRequest, CodeMalformedRequest,
			`missing query: send {"query": "{ restaurants { name } }"}`)
		return
	}

	token, tokenErr := bearerToken(r.Header.Get("Authorization"))
	resp := s.execute(ctx, req, token, tokenErr)
	writeResponse(w, http.StatusOK, resp)
}

// checkContentType accepts application/json with no charset or UTF-8. It
// returns a zero status when the type is fine.
func checkContentType(ct string) (status int, code, msg string) {
	const want = "send Content-Type: application/json with a JSON body"
	if ct == "" {
		return http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "missing Content-Type; " + want
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, fmt.Sprintf("unsupported Content-Type %s; %s", fooddelivery.Quote(ct), want)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, fmt.Sprintf("unsupported charset %s; the body must be UTF-8", fooddelivery.Quote(cs))
	}
	return 0, "", ""
}

func tooLargeMessage(limit int64) string {
	return fmt.Sprintf("request body is larger than the gateway's limit of %d bytes; send a smaller query and fewer variables", limit)
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

// writeRequestError answers with a GraphQL response holding one request
// error and no data.
func writeRequestError(w http.ResponseWriter, status int, code, msg string) {
	writeResponse(w, status, &Response{Errors: []Error{{Message: msg, Extensions: map[string]any{"code": code}}}})
}

func writeResponse(w http.ResponseWriter, status int, resp *Response) {
	clipMessages(resp)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // messages quote "<token>"; keep them readable
	if err := enc.Encode(resp); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"errors":[{"message":"internal error: could not encode the response","extensions":{"code":"INTERNAL"}}]}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
