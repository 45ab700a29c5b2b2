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
	"strings"

	"github.com/gophereats/resilience/fooddelivery"
)

// Request is the JSON body of a GraphQL-over-HTTP request.
type Request struct {
	// Query is the GraphQL document; required.
	Query string `json:"query"`
	// OperationName picks the operation to run when Query defines more
	// than one; "" means the only one.
	OperationName string `json:"operationName,omitempty"`
	// Variables are the values of the operation's $variables; nil means
	// none.
	Variables map[string]any `json:"variables,omitempty"`
}

// Response is a GraphQL response: {"data": ..., "errors": [...]}.
type Response struct {
	// Data is the result, in the shape of the query. It is nil when the
	// request failed before execution (then Errors says why), and the JSON
	// literal null when execution ran but a null propagated to the root.
	Data json.RawMessage `json:"data,omitempty"`
	// Errors lists request errors, or the field errors that nulled parts
	// of Data. Empty when everything resolved.
	Errors []Error `json:"errors,omitempty"`
}

// Location is a 1-based line and column in the query text.
type Location struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// Error is one entry of a GraphQL response's "errors".
type Error struct {
	// Message says, for people, what went wrong and what to do.
	Message string `json:"message"`
	// Locations point into the query text; empty when there is no place
	// to point at (a body that is not JSON, say).
	Locations []Location `json:"locations,omitempty"`
	// Path names the field that was nulled, from the root: response keys
	// (field names or aliases) as strings and list indices as ints. Empty
	// for request errors.
	Path []any `json:"path,omitempty"`
	// Extensions holds "code" (one of the Code constants) and nothing
	// else today.
	Extensions map[string]any `json:"extensions,omitempty"`
}

// Code returns e.Extensions["code"], or "" when there is none.
func (e *Error) Code() string {
	if e == nil {
		return ""
	}
	c, _ := e.Extensions["code"].(string)
	return c
}

// UnmarshalJSON decodes an error and turns the list indices in Path, which
// JSON delivers as numbers, into ints, so a path compares equal to
// []any{"home", "restaurants", 1, "menu"}.
func (e *Error) UnmarshalJSON(b []byte) error {
	type plain Error
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	for i, el := range p.Path {
		p.Path[i] = normalizePathElement(el)
	}
	*e = Error(p)
	return nil
}

// normalizePathElement turns every integer type, and a float64 with no
// fraction, into an int; anything else is returned unchanged.
func normalizePathElement(el any) any {
	switch v := el.(type) {
	case int:
		return v
	case int64:
		return int(v)
	case int32:
		return int(v)
	case float64:
		if v == float64(int(v)) {
			return int(v)
		}
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return int(n)
		}
	}
	return el
}

// ErrorAt returns the first error whose Path equals path (strings for
// response keys, ints for list indices), or nil when there is none. For
// example r.ErrorAt("home", "restaurants", 1, "menu").
func (r *Response) ErrorAt(path ...any) *Error {
	if r == nil {
		return nil
	}
	for i := range r.Errors {
		e := &r.Errors[i]
		if len(e.Path) != len(path) {
			continue
		}
		same := true
		for j := range path {
			if normalizePathElement(e.Path[j]) != normalizePathElement(path[j]) {
				same = false
				break
			}
		}
		if same {
			return e
		}
	}
	return nil
}

// Decode unmarshals Data into v (a pointer, as for json.Unmarshal). It
// fails when there is no data or the data is null, naming the first error
// of the response.
func (r *Response) Decode(v any) error {
	if r == nil || len(r.Data) == 0 || bytes.Equal(bytes.TrimSpace(r.Data), []byte("null")) {
		msg := "no data"
		if r != nil && len(r.Errors) > 0 {
			msg += ": " + r.Errors[0].Message
		}
		return errors.New("gateway: " + msg)
	}
	if err := json.Unmarshal(r.Data, v); err != nil {
		return fmt.Errorf("gateway: decode data: %w", err)
	}
	return nil
}

// maxClientResponseBytes bounds how much of a response Do reads: 8 MiB.
const maxClientResponseBytes = 8 << 20

// Do sends query with vars to the gateway's GraphQL endpoint url (for
// example memnet.ServiceURL("gateway") + "/graphql") through hc, with
// "Authorization: Bearer token" when token is not "". It is DoRequest
// without an operation name.
func Do(ctx context.Context, hc *http.Client, url, token, query string, vars map[string]any) (*Response, int, error) {
	return DoRequest(ctx, hc, url, token, Request{Query: query, Variables: vars})
}

// DoRequest posts req to url and returns the decoded GraphQL response and
// the HTTP status. Any response with a GraphQL body (application/json or
// application/graphql-response+json) is returned, whatever its status
// (GraphQL errors are in Response.Errors), with a nil error, except a 503
// from the gateway's concurrency limit: its body (an OVERLOADED error) is
// returned with an error wrapping fooddelivery.ErrOverloaded. Without a
// GraphQL body the error wraps fooddelivery.ErrTimeout when ctx or hc gave
// up, ErrUnavailable when the gateway could not be reached or answered
// 5xx, ErrOverloaded for a 503 carrying fooddelivery.HeaderDontRetry, and
// ErrRejected for any other answer. status is 0 when no response arrived.
func DoRequest(ctx context.Context, hc *http.Client, url, token string, req Request) (*Response, int, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, 0, fmt.Errorf("gateway: encode request: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, fmt.Errorf("gateway: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if token != "" {
		hreq.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(hreq)
	if err != nil {
		return nil, 0, transportError(ctx, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxClientResponseBytes))
	if err != nil {
		return nil, resp.StatusCode, transportError(ctx, err)
	}
	var out Response
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if (mt == mediaJSON || mt == mediaGraphQLResponse) && json.Unmarshal(raw, &out) == nil && (out.Data != nil || len(out.Errors) > 0) {
		if resp.StatusCode == http.StatusServiceUnavailable && len(out.Errors) > 0 && out.Errors[0].Code() == CodeOverloaded {
			return &out, resp.StatusCode, fmt.Errorf("gateway: %s: %w", out.Errors[0].Message, fooddelivery.ErrOverloaded)
		}
		return &out, resp.StatusCode, nil
	}
	sentinel := fooddelivery.ErrRejected
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get(fooddelivery.HeaderDontRetry) != "":
		sentinel = fooddelivery.ErrOverloaded
	case resp.StatusCode >= 500:
		sentinel = fooddelivery.ErrUnavailable
	}
	snippet := strings.TrimSpace(string(raw))
	if len(snippet) > 200 {
		snippet = snippet[:200] + "..."
	}
	return nil, resp.StatusCode, fmt.Errorf("gateway: HTTP %d without a GraphQL body (%q): %w", resp.StatusCode, snippet, sentinel)
}

// transportError wraps an error from sending a request or reading its
// response in the matching sentinel.
func transportError(ctx context.Context, err error) error {
	var te interface{ Timeout() bool }
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || (errors.As(err, &te) && te.Timeout()) {
		return fmt.Errorf("gateway: %w: %w", fooddelivery.ErrTimeout, err)
	}
	return fmt.Errorf("gateway: %w: %w", fooddelivery.ErrUnavailable, err)
}
