package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/gophereats/resilience/fooddelivery"
	"github.com/gophereats/resilience/fooddelivery/telemetry/logs"
	"github.com/gophereats/resilience/fooddelivery/telemetry/tracing"
)

// The two media types of a GraphQL response (GraphQL-over-HTTP, section
// "Body"). They differ only in what the status code means.
const (
	mediaJSON            = "application/json"
	mediaGraphQLResponse = "application/graphql-response+json"
)

// serveGraphQL handles GET and POST /graphql.
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
			logs.From(ctx).ErrorContext(ctx, "panic in the gateway, kept from the client", "panic", fmt.Sprint(p), "request_id", id)
			writeRequestError(w, r, http.StatusInternalServerError, CodeInternal, "internal error in the gateway; the request was not completed")
		}
	}()

	var (
		req Request
		bad *httpError
	)
	if r.Method == http.MethodGet {
		req, bad = readGetRequest(r)
	} else {
		req, bad = s.readPostRequest(w, r)
	}
	if bad != nil {
		writeRequestError(w, r, bad.status, bad.code, bad.msg)
		return
	}

	token, tokenErr := bearerToken(r.Header.Get("Authorization"))
	resp := s.execute(ctx, req, token, tokenErr, r.Method == http.MethodGet)
	status := responseStatus(resp, responseMediaType(r.Header.Get("Accept")))
	if status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", http.MethodPost)
	}
	writeResponse(w, r, status, resp)
}

// httpError is a request that is not a well-formed GraphQL-over-HTTP
// request, with the status it gets whatever the media type.
type httpError struct {
	status    int
	code, msg string
}

func malformed(msg string) *httpError {
	return &httpError{http.StatusBadRequest, CodeMalformedRequest, msg}
}

// readGetRequest reads the URL parameters of GET /graphql: query (the
// document), variables (a JSON object) and operationName; each at most
// once. A browser that asks for text/html without a query gets a hint.
func readGetRequest(r *http.Request) (Request, *httpError) {
	params, err := parseQueryString(r.URL.RawQuery)
	if err != nil {
		return Request{}, malformed("the URL's parameters could not be read: " + err.Error())
	}
	var req Request
	for name, vals := range params {
		if len(vals) > 1 && (name == "query" || name == "variables" || name == "operationName" || name == "extensions") {
			return Request{}, malformed(fmt.Sprintf("the URL parameter %q appears %d times; give it once", name, len(vals)))
		}
	}
	req.Query = params.Get("query")
	req.OperationName = params.Get("operationName")
	if v := params.Get("variables"); v != "" {
		if err := json.Unmarshal([]byte(v), &req.Variables); err != nil || req.Variables == nil && strings.TrimSpace(v) != "null" {
			return Request{}, malformed(`the variables parameter must be a JSON object such as {"id":"luigis"}, URL-encoded`)
		}
	}
	if strings.TrimSpace(req.Query) == "" {
		if acceptsHTML(r.Header.Get("Accept")) {
			return Request{}, malformed("this is the gateway's GraphQL endpoint, for GraphQL clients: add a query to the URL, " +
				"for example /graphql?query={restaurants{name}}, or POST JSON to it")
		}
		return Request{}, malformed(`missing query: add ?query={restaurants{name}} to the URL`)
	}
	return req, nil
}

// parseQueryString is url.ParseQuery, with its error message kept short:
// the parser quotes the offending input, which may be huge.
func parseQueryString(raw string) (url.Values, error) {
	vals, err := url.ParseQuery(raw)
	switch {
	case err != nil && strings.Contains(raw, ";"):
		return nil, errors.New("separate parameters with &, not ; (escape a ; inside a value as %3B)")
	case err != nil:
		return nil, errors.New("a parameter is not valid URL encoding (escape % as %25)")
	}
	return vals, nil
}

// readPostRequest reads the JSON body of POST /graphql.
func (s *server) readPostRequest(w http.ResponseWriter, r *http.Request) (Request, *httpError) {
	if status, code, msg := checkContentType(r.Header.Get("Content-Type")); status != 0 {
		return Request{}, &httpError{status, code, msg}
	}
	if r.ContentLength > s.d.MaxBodyBytes {
		return Request{}, &httpError{http.StatusRequestEntityTooLarge, CodeTooLarge, tooLargeMessage(s.d.MaxBodyBytes)}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.d.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return Request{}, &httpError{http.StatusRequestEntityTooLarge, CodeTooLarge, tooLargeMessage(s.d.MaxBodyBytes)}
		}
		return Request{}, malformed("could not read the request body: " + err.Error())
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		return Request{}, malformed(`the body must be a JSON object like {"query": "{ restaurants { name } }", "variables": {}}: ` + jsonProblem(err))
	}
	if strings.TrimSpace(req.Query) == "" {
		return Request{}, malformed(`missing query: send {"query": "{ restaurants { name } }"}`)
	}
	return req, nil
}

// jsonProblem describes a JSON decoding error without echoing the input.
func jsonProblem(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("invalid JSON at byte %d", syntax.Offset)
	case errors.As(err, &typ) && typ.Field != "":
		return fmt.Sprintf("%s must not be a JSON %s", typ.Field, typ.Value)
	case errors.As(err, &typ):
		return fmt.Sprintf("got a JSON %s", typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends too early"
	}
	return "not valid JSON"
}

// checkContentType accepts application/json with no charset or UTF-8. It
// returns a zero status when the type is fine.
func checkContentType(ct string) (status int, code, msg string) {
	const want = "send Content-Type: application/json with a JSON body"
	if ct == "" {
		return http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "missing Content-Type; " + want
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != mediaJSON {
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

// acceptRange is one entry of an Accept header: a media range and its
// quality, 0 to 1.
type acceptRange struct {
	typ string // "application/json", "application/*", "*/*"
	q   float64
}

// parseAccept reads an Accept header (RFC 9110, section 12.5.1). Entries
// that do not parse, including those whose q is not a qvalue (0 to 1 with
// at most three decimals), are skipped; a missing q counts as 1.
func parseAccept(h string) []acceptRange {
	var out []acceptRange
	for part := range strings.SplitSeq(h, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, ok = qvalue(v); !ok {
				continue
			}
		}
		out = append(out, acceptRange{mt, q})
	}
	return out
}

// qvalue parses RFC 9110's qvalue: "0" or "1", optionally followed by a
// point and up to three digits, at most 1.
func qvalue(v string) (float64, bool) {
	if len(v) == 0 || len(v) > 5 || (v[0] != '0' && v[0] != '1') {
		return 0, false
	}
	if len(v) > 1 {
		if v[1] != '.' {
			return 0, false
		}
		for _, c := range v[2:] {
			if c < '0' || c > '9' || (v[0] == '1' && c != '0') {
				return 0, false
			}
		}
	}
	q, err := strconv.ParseFloat(v, 64)
	return q, err == nil
}

// quality is how much ranges accept media type mt: the q of the most
// specific range that matches it, 0 when none does.
func quality(ranges []acceptRange, mt string) float64 {
	best, specificity := 0.0, -1
	major, _, _ := strings.Cut(mt, "/")
	for _, r := range ranges {
		s := -1
		switch r.typ {
		case mt:
			s = 2
		case major + "/*":
			s = 1
		case "*/*":
			s = 0
		}
		if s > specificity || (s == specificity && r.q > best) {
			best, specificity = r.q, s
		}
	}
	return best
}

// responseMediaType chooses the response's media type from the request's
// Accept header: application/graphql-response+json when the client
// accepts it at least as much as application/json (it is named, or matched
// by a range, with a positive quality), else application/json, the legacy
// default, which is also the answer to a missing header and to an Accept
// that names neither (GraphQL-over-HTTP allows that instead of a 406).
func responseMediaType(accept string) string {
	if accept == "" {
		return mediaJSON
	}
	ranges := parseAccept(accept)
	gr, js := quality(ranges, mediaGraphQLResponse), quality(ranges, mediaJSON)
	named := false
	for _, r := range ranges {
		named = named || r.typ == mediaGraphQLResponse
	}
	if named && gr > 0 && gr >= js {
		return mediaGraphQLResponse
	}
	return mediaJSON
}

// acceptsHTML reports whether the Accept header names text/html, as a
// browser's does.
func acceptsHTML(accept string) bool {
	for _, r := range parseAccept(accept) {
		if r.typ == "text/html" && r.q > 0 {
			return true
		}
	}
	return false
}

// responseStatus is the status of a response to a well-formed request,
// by GraphQL-over-HTTP's rules for the media type: with data, 200; with
// a request error, 200 for application/json and 400 for
// application/graphql-response+json, except a mutation over GET, which
// is 405 either way.
func responseStatus(resp *Response, mediaType string) int {
	switch {
	case resp.Data != nil:
		return http.StatusOK
	case len(resp.Errors) > 0 && resp.Errors[0].Code() == CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case mediaType == mediaGraphQLResponse:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// writeRequestError answers with a GraphQL response holding one request
// error and no data.
func writeRequestError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	writeResponse(w, r, status, &Response{Errors: []Error{{Message: msg, Extensions: map[string]any{"code": code}}}})
}

// writeResponse encodes resp in the media type r's Accept header asks for.
// The request's span records the codes of resp's errors and, when one is
// a failure rather than a fallback's mark on a served value, ends in
// error with it.
func writeResponse(w http.ResponseWriter, r *http.Request, status int, resp *Response) {
	clipMessages(resp)
	traceErrors(r.Context(), resp.Errors)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // messages quote "<token>"; keep them readable
	if err := enc.Encode(resp); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"errors":[{"message":"internal error: could not encode the response","extensions":{"code":"INTERNAL"}}]}` + "\n")
	}
	w.Header().Set("Content-Type", responseMediaType(r.Header.Get("Accept"))+"; charset=utf-8")
	w.Header().Add("Vary", "Accept") // the media type and the status depend on it
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// traceErrors records on the span in ctx (none: nothing) the
// extensions.code of each of errs, and sets the span's status to error
// with the first code that is not a fallback's (STALE, ESTIMATED,
// DEGRADED, DEFERRED: a value was served), so that a trace's failure is
// what the customer was told.
func traceErrors(ctx context.Context, errs []Error) {
	span := trace.SpanFromContext(ctx)
	if len(errs) == 0 || !span.IsRecording() {
		return
	}
	list := make([]string, len(errs))
	failed := ""
	for i, e := range errs {
		list[i] = e.Code()
		switch list[i] {
		case CodeStale, CodeEstimated, CodeDegraded, CodeDeferred:
		default:
			if failed == "" {
				failed = list[i]
			}
		}
	}
	span.SetAttributes(attribute.StringSlice(tracing.AttrGraphQLErrors, list))
	if failed != "" {
		span.SetStatus(codes.Error, failed)
	}
}
