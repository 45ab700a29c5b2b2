package fooddelivery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
)

// MaxResponseBytes bounds how much of a response body the service clients
// read: 1 MiB. A larger body is treated as a broken answer (ErrUnavailable).
const MaxResponseBytes = 1 << 20

// maxErrorBodyBytes bounds how much of an error response ReadError reads.
const maxErrorBodyBytes = 64 << 10

// CallError is the error a service client returns when a call to a
// dependency fails. Err is always one of this package's sentinels, so
// callers classify with errors.Is; Cause, when set, is the transport error
// (a *url.Error, often wrapping context.DeadlineExceeded), which errors.Is
// and errors.As reach too. Fields describing the response are zero when no
// response arrived.
type CallError struct {
	// Service is the dependency that was called ("payment", "menu").
	Service string
	// Status is the HTTP status of the response; 0 if no response arrived.
	Status int
	// Code is the Code of the ErrorBody the dependency sent; "" if it sent
	// none.
	Code string
	// Message is the Message of that ErrorBody; "" if it sent none.
	Message string
	// DontRetry is true when the response carried HeaderDontRetry: the
	// dependency (or a layer below it that already retried) asks callers
	// not to retry.
	DontRetry bool
	// RetryAfter is the response's Retry-After header, unparsed (delay in
	// seconds or an HTTP date, RFC 9110 section 10.2.3); "" if absent.
	RetryAfter string
	// Err is the sentinel: ErrTimeout, ErrUnavailable, ErrOverloaded,
	// ErrRejected, ErrNotFound or ErrUnauthorized.
	Err error
	// Cause is the transport error when no usable response arrived (or the
	// body could not be read or decoded); nil otherwise.
	Cause error
}

// Error describes the failure for people, for example
// `payment: timed out: Post "http://payment/charges": context deadline exceeded`
// or `payment: overloaded: HTTP 503 overloaded: payment is at its
// concurrency limit of 10 requests`. Classify with errors.Is, never by
// this text.
func (e *CallError) Error() string {
	var b strings.Builder
	b.WriteString(e.Service)
	b.WriteString(": ")
	b.WriteString(sentinelWords(e.Err))
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
		if e.Code != "" {
			b.WriteString(" " + e.Code)
		}
		if e.Message != "" {
			b.WriteString(": " + e.Message)
		}
	}
	if e.Cause != nil {
		b.WriteString(": " + e.Cause.Error())
	}
	return b.String()
}

// Unwrap returns the sentinel and the transport cause (when set), so
// errors.Is(err, ErrTimeout) and errors.Is(err, context.DeadlineExceeded)
// both work on the same error.
func (e *CallError) Unwrap() []error {
	errs := make([]error, 0, 2)
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	return errs
}

func sentinelWords(err error) string {
	switch err {
	case ErrTimeout:
		return "timed out"
	case ErrUnavailable:
		return "unavailable"
	case ErrOverloaded:
		return "overloaded"
	case ErrRejected:
		return "rejected"
	case ErrNotFound:
		return "not found"
	case ErrUnauthorized:
		return "unauthorized"
	case nil:
		return "failed"
	default:
		return err.Error()
	}
}

// Unsent reports whether err, the error of a failed call, shows that the
// request never reached the service, so it had no effect there: the call
// was refused before it was made (ErrForced, ErrCircuitOpen,
// ErrBulkheadFull) or the connection could not be opened (a dial error:
// refused, unreachable). Any other failure without an answer (a reset, an
// EOF, a timeout) may have come after the service acted.
func Unsent(err error) bool {
	if errors.Is(err, ErrForced) || errors.Is(err, ErrCircuitOpen) || errors.Is(err, ErrBulkheadFull) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && !op.Timeout()
}

// ClassifyTransportError wraps err, the error of a call to service that
// produced no usable response (http.Client.Do failed, or reading the body
// failed), in a *CallError. Timeouts (context.DeadlineExceeded,
// os.ErrDeadlineExceeded, or any net.Error whose Timeout() is true, such as
// an http.Client.Timeout or a dial timeout) become ErrTimeout; everything
// else (refused, reset, EOF, a closed network, and a cancelled context)
// becomes ErrUnavailable. err stays reachable as Cause, so
// errors.Is(result, context.Canceled) tells a caller that gave up apart
// from a dependency that failed. A nil err returns nil.
func ClassifyTransportError(service string, err error) error {
	if err == nil {
		return nil
	}
	sentinel := ErrUnavailable
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout()) {
		sentinel = ErrTimeout
	}
	return &CallError{Service: service, Err: sentinel, Cause: err}
}

// ReadError turns a response from service whose status is not 2xx into a
// *CallError, reading (at most 64 KiB of) its ErrorBody when it has one and
// closing resp.Body. The sentinel follows the status:
//
//	503 with HeaderDontRetry   ErrOverloaded
//	504                        ErrTimeout
//	429, other 5xx             ErrUnavailable
//	401, 403                   ErrUnauthorized
//	404                        ErrNotFound
//	other 4xx                  ErrRejected
//
// A status below 400 (an answer the client did not expect) is classified
// as ErrUnavailable.
func ReadError(service string, resp *http.Response) error {
	ce := &CallError{
		Service:    service,
		Status:     resp.StatusCode,
		DontRetry:  resp.Header.Get(HeaderDontRetry) == "1",
		RetryAfter: resp.Header.Get("Retry-After"),
	}
	if resp.Body != nil {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
		resp.Body.Close()
		var eb ErrorBody
		if json.Unmarshal(data, &eb) == nil {
			ce.Code, ce.Message = eb.Code, eb.Message
		}
	}
	s := resp.StatusCode
	switch {
	case s == http.StatusServiceUnavailable && ce.DontRetry:
		ce.Err = ErrOverloaded
	case s == http.StatusGatewayTimeout:
		ce.Err = ErrTimeout
	case s == http.StatusTooManyRequests || s >= 500:
		ce.Err = ErrUnavailable
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		ce.Err = ErrUnauthorized
	case s == http.StatusNotFound:
		ce.Err = ErrNotFound
	case s >= 400:
		ce.Err = ErrRejected
	default:
		ce.Err = ErrUnavailable
	}
	return ce
}

// DontRetry reports whether err carries the "overloaded; don't retry"
// signal: errors.As finds a *CallError with DontRetry set in its chain,
// either from a response that had HeaderDontRetry or from a layer that
// marked a failure it gave up on (retry.MarkDontRetry).
func DontRetry(err error) bool {
	var ce *CallError
	return errors.As(err, &ce) && ce.DontRetry
}

// CallJSON is the request helper the service clients share. It sends a
// request with method to url on hc, bound to ctx (the ctx's deadline and
// cancellation cover the whole exchange, body included). in, when not nil,
// is sent as a JSON body; header, when not nil, is added to the request;
// the request id of ctx (RequestIDFrom) goes in HeaderRequestID. A 2xx
// response's JSON body is decoded into out (when not nil); at most
// MaxResponseBytes are read and the body is always closed.
//
// Errors are *CallError values for service: ClassifyTransportError when no
// response arrived or its body could not be read, ReadError for a non-2xx
// status, ErrUnavailable (with Status set) for a body that is too large or
// not valid JSON. The status of a 2xx response is returned, otherwise the
// status is 0.
func CallJSON(ctx context.Context, hc *http.Client, service, method, url string, header http.Header, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return 0, fmt.Errorf("%s: encoding request: %w", service, err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return 0, fmt.Errorf("%s: building request: %w", service, err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if id := RequestIDFrom(ctx); id != "" {
		req.Header.Set(HeaderRequestID, id)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, ClassifyTransportError(service, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 0, ReadError(service, resp)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return 0, ClassifyTransportError(service, err)
	}
	if len(data) > MaxResponseBytes {
		return 0, &CallError{Service: service, Status: resp.StatusCode, Err: ErrUnavailable,
			Cause: fmt.Errorf("response body larger than %d bytes", MaxResponseBytes)}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return 0, &CallError{Service: service, Status: resp.StatusCode, Err: ErrUnavailable,
				Cause: fmt.Errorf("decoding response: %w", err)}
		}
	}
	return resp.StatusCode, nil
}

// WriteDependencyError answers the request r whose work failed because a
// call to the dependency dep failed with err, choosing a status and an
// ErrorBody code ("<dep>_<what>") that keep the failure's meaning for the
// caller's own client:
//
//	ErrTimeout                          504 "<dep>_timeout"
//	ErrOverloaded                       503 "<dep>_overloaded" + HeaderDontRetry
//	r's caller left (r.Context() done)  499 "<dep>_cancelled"
//	ErrNotFound                         404 "<dep>_not_found"
//	ErrRejected                         422 "<dep>_rejected"
//	ErrUnauthorized                     502 "<dep>_unauthorized"
//	ErrUnavailable, other errors        502 "<dep>_unavailable"
//
// The first row that matches wins, in this order.
//
// HeaderDontRetry is also set whenever err carries it (DontRetry), and a
// Retry-After from the dependency is passed on.
//
// The message is written here, one per row ("menu did not answer in
// time"), never err's text: that names internal addresses and carries a
// Go error chain. A refusal (not found, rejected) that the dependency
// explained in its own ErrorBody passes on the dependency's Message, which
// is its client's to read.
//
// A call cancelled while r's own caller is still waiting (a context the
// service cancelled itself) is "unavailable", not "cancelled".
func WriteDependencyError(w http.ResponseWriter, r *http.Request, dep string, err error) {
	status, what, msg := http.StatusBadGateway, "unavailable", dep+" is unavailable right now"
	switch {
	case errors.Is(err, ErrTimeout):
		status, what, msg = http.StatusGatewayTimeout, "timeout", dep+" did not answer in time"
	case errors.Is(err, ErrOverloaded):
		status, what, msg = http.StatusServiceUnavailable, "overloaded", dep+" is overloaded; try again later"
	case r.Context().Err() != nil:
		status, what, msg = 499, "cancelled", "the request was cancelled before "+dep+" answered" // 499: nginx's "client closed request"
	case errors.Is(err, ErrNotFound):
		status, what, msg = http.StatusNotFound, "not_found", refusal(err, dep+" found nothing by that name")
	case errors.Is(err, ErrRejected):
		status, what, msg = http.StatusUnprocessableEntity, "rejected", refusal(err, dep+" refused the request")
	case errors.Is(err, ErrUnauthorized):
		status, what, msg = http.StatusBadGateway, "unauthorized", dep+" did not accept this service's credentials"
	}
	if status == http.StatusServiceUnavailable || DontRetry(err) {
		w.Header().Set(HeaderDontRetry, "1")
	}
	var ce *CallError
	if errors.As(err, &ce) && ce.RetryAfter != "" {
		w.Header().Set("Retry-After", ce.RetryAfter)
	}
	WriteError(w, status, dep+"_"+what, msg)
}

// refusal returns the Message of the 4xx ErrorBody in err's chain, the
// refusing service's own words, or otherwise fallback.
func refusal(err error, fallback string) string {
	var ce *CallError
	if errors.As(err, &ce) && ce.Status >= 400 && ce.Status < 500 && ce.Message != "" {
		return ce.Message
	}
	return fallback
}

// MaxRequestBytes bounds the request bodies the services accept: 1 MiB.
const MaxRequestBytes = 1 << 20

// ReadJSON reads r's whole body (at most MaxRequestBytes) and decodes it
// into v. Reading to the end matters: only then does net/http watch the
// connection, so that r.Context() is cancelled when the caller hangs up.
// It returns a *BodyError for a body that is too large, unreadable or not
// the JSON v takes; the handler should answer 400 with its text, which
// says what is wrong in the client's terms (a field's JSON name, the JSON
// type it takes) and is bounded: a value echoed is quoted with Quote.
func ReadJSON(w http.ResponseWriter, r *http.Request, v any) error {
	data, err := ReadBody(w, r)
	if err != nil {
		return err
	}
	return DecodeJSON(data, v)
}

// ReadBody reads r's whole body, at most MaxRequestBytes, as ReadJSON
// does. Its error is a *BodyError.
func ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, &BodyError{Problem: fmt.Sprintf("the body is larger than %d bytes", mb.Limit), Err: err}
		}
		return nil, &BodyError{Problem: "the body could not be read whole", Err: err}
	}
	return data, nil
}

// DecodeJSON decodes data into v with json.Unmarshal, as ReadJSON does.
// Its error is a *BodyError.
func DecodeJSON(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return &BodyError{Problem: jsonProblem(err), Err: err}
	}
	return nil
}

// A BodyError is ReadJSON's error. Problem is a sentence for the client:
// "field \"quantity\" takes a number, not a string". Err is the error
// underneath (a *http.MaxBytesError, a *json.SyntaxError, a
// *json.UnmarshalTypeError, or what a type's UnmarshalJSON returned),
// for errors.As; its text may name Go types and echo a whole value.
type BodyError struct {
	Problem string
	Err     error
}

// Error returns e.Problem.
func (e *BodyError) Error() string { return e.Problem }

// Unwrap returns e.Err.
func (e *BodyError) Unwrap() error { return e.Err }

// jsonProblem describes a json.Unmarshal error in the client's terms.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("the body is not valid JSON: %s (at byte %d)", se.Error(), se.Offset)
	case errors.As(err, &te):
		where := "the body"
		if te.Field != "" {
			where = "field " + Quote(te.Field)
		}
		got := te.Value
		if lit, ok := strings.CutPrefix(got, "number "); ok {
			got = "the number " + Quote(lit)
		} else if a, ok := jsonArticles[got]; ok {
			got = a + " " + got
		}
		return fmt.Sprintf("%s takes %s, not %s", where, jsonKind(te.Type), got)
	}
	return err.Error() // a type's own UnmarshalJSON: its words
}

// jsonArticles are the articles of the JSON kinds encoding/json names in an
// UnmarshalTypeError's Value.
var jsonArticles = map[string]string{"string": "a", "number": "a", "bool": "a", "array": "an", "object": "an"}

// jsonKind names the JSON a value of Go type t is decoded from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another JSON value"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return jsonKind(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number that fits " + strconv.Itoa(t.Bits()) + " bits"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more, that fits " + strconv.Itoa(t.Bits()) + " bits"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another JSON value"
}
