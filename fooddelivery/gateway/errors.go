package gateway

import (
	"context"
	"errors"

	"github.com/gophereats/resilience/fooddelivery"
)

// Error codes the gateway puts in an error's extensions.code. Field errors
// (the field is null, the rest of the response is normal) carry the first
// group; request errors (nothing was executed, there is no "data") carry the
// second.
const (
	// Field errors, derived from the sentinel errors of package fooddelivery.
	CodeTimeout         = "TIMEOUT"          // fooddelivery.ErrTimeout or context.DeadlineExceeded
	CodeUnavailable     = "UNAVAILABLE"      // fooddelivery.ErrUnavailable
	CodeOverloaded      = "OVERLOADED"       // fooddelivery.ErrOverloaded
	CodeNotFound        = "NOT_FOUND"        // fooddelivery.ErrNotFound
	CodeUnauthenticated = "UNAUTHENTICATED"  // no token, a malformed one, or fooddelivery.ErrUnauthorized
	CodeAuthUnavailable = "AUTH_UNAVAILABLE" // the auth check could not be made; the gateway denied (fail closed)
	CodeBadRequest      = "BAD_REQUEST"      // fooddelivery.ErrRejected, or input the gateway itself refuses
	CodeCancelled       = "CANCELLED"        // the client went away (context.Canceled)
	CodeInternal        = "INTERNAL"         // anything else, including a recovered panic
	// CodeBulkheadFull: the gateway's own bulkhead for the dependency was
	// full, so the call was refused at once without being sent
	// (fooddelivery.ErrBulkheadFull, lab 06). Try again in a moment.
	CodeBulkheadFull = "BULKHEAD_FULL"

	// Request errors.
	CodeMalformedRequest     = "MALFORMED_REQUEST"      // the body is not {"query": "...", ...} JSON (HTTP 400)
	CodeParseFailed          = "PARSE_FAILED"           // the query has a syntax error
	CodeValidationFailed     = "VALIDATION_FAILED"      // the query does not fit the schema
	CodeTooDeep              = "TOO_DEEP"               // the query nests deeper than Deps.MaxDepth
	CodeCostLimitExceeded    = "COST_LIMIT_EXCEEDED"    // the query costs more than Deps.MaxCost (see DefaultMaxCost); extensions carry "cost" and "limit"
	CodeAnswerTooLarge       = "ANSWER_TOO_LARGE"       // the answer would hold more fields than Deps.MaxAnswerFields (see DefaultMaxAnswerFields); extensions carry "fields" and "limit"
	CodeTooLarge             = "TOO_LARGE"              // more than Deps.MaxTokens tokens, or a body over Deps.MaxBodyBytes (HTTP 413)
	CodeBadVariables         = "BAD_VARIABLES"          // variables do not match the operation's declarations
	CodeUnknownOperation     = "UNKNOWN_OPERATION"      // operationName is missing or names no operation
	CodeUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE" // Content-Type is not application/json (HTTP 415)
	CodeMethodNotAllowed     = "METHOD_NOT_ALLOWED"     // HTTP 405
	CodeRouteNotFound        = "ROUTE_NOT_FOUND"        // HTTP 404
)

// codedError is an error the gateway produced itself, with the code it
// must carry on the wire and a message for people.
type codedError struct {
	code string
	msg  string
	err  error // wrapped cause, may be nil
}

func (e *codedError) Error() string {
	if e.err == nil {
		return e.msg
	}
	return e.msg + ": " + e.err.Error()
}

func (e *codedError) Unwrap() error { return e.err }

// ErrorCode returns the extensions.code the gateway reports for a resolver
// error err: errors the gateway made itself keep their own code, a
// *FallbackError its Code (lab 07), the sentinels of package fooddelivery
// map to CodeBulkheadFull, CodeOverloaded, CodeTimeout, CodeUnavailable,
// CodeNotFound, CodeUnauthenticated and CodeBadRequest (checked with
// errors.Is in that order, so a 503 that says "overloaded" is not reported
// as merely unavailable), then context.DeadlineExceeded maps to
// CodeTimeout, context.Canceled to CodeCancelled, and anything else to
// CodeInternal. A nil err has no code ("").
func ErrorCode(err error) string {
	var ce *codedError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ce):
		return ce.code
	case errors.As(err, new(*FallbackError)):
		return fallbackCode(err)
	case errors.Is(err, fooddelivery.ErrBulkheadFull):
		return CodeBulkheadFull
	case errors.Is(err, fooddelivery.ErrOverloaded):
		return CodeOverloaded
	case errors.Is(err, fooddelivery.ErrTimeout):
		return CodeTimeout
	case errors.Is(err, fooddelivery.ErrUnavailable):
		return CodeUnavailable
	case errors.Is(err, fooddelivery.ErrNotFound):
		return CodeNotFound
	case errors.Is(err, fooddelivery.ErrUnauthorized):
		return CodeUnauthenticated
	case errors.Is(err, fooddelivery.ErrRejected):
		return CodeBadRequest
	case errors.Is(err, context.DeadlineExceeded):
		return CodeTimeout
	case errors.Is(err, context.Canceled):
		return CodeCancelled
	default:
		return CodeInternal
	}
}

// authFailure classifies an error from Authorizer.Authorize. Only a clean
// "this token is bad" (ErrUnauthorized without any sign of a failed call)
// means UNAUTHENTICATED; everything else means the check could not be made,
// and the gateway denies with AUTH_UNAVAILABLE (fail closed).
func authFailure(err error) error {
	couldNotAsk := errors.Is(err, fooddelivery.ErrTimeout) ||
		errors.Is(err, fooddelivery.ErrUnavailable) ||
		errors.Is(err, fooddelivery.ErrOverloaded) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled)
	if errors.Is(err, fooddelivery.ErrUnauthorized) && !couldNotAsk {
		return &codedError{code: CodeUnauthenticated, msg: "your sign-in token was not accepted; sign in again", err: err}
	}
	return &codedError{
		code: CodeAuthUnavailable,
		msg:  "could not check your sign-in right now, so nothing was done; try again in a moment",
		err:  errors.Join(fooddelivery.ErrUnauthorized, err),
	}
}

// publicMessages are what a client is told about a dependency's failure,
// by code (see describe): the failure's own text names internal addresses
// and carries a Go error chain, which are for the logs.
var publicMessages = map[string]string{
	CodeTimeout:         "this part of the answer took too long, so the gateway stopped waiting; try again in a moment",
	CodeUnavailable:     "this part of the answer is unavailable right now; try again in a moment",
	CodeOverloaded:      "too busy to answer this part right now; try again in a moment",
	CodeBulkheadFull:    "too many requests like this one are in progress; try again in a moment",
	CodeNotFound:        "not found",
	CodeUnauthenticated: "your sign-in token was not accepted; sign in again",
	CodeBadRequest:      "the request was refused",
	CodeCancelled:       "the request was cancelled before this part was answered",
	CodeInternal:        "something went wrong while answering this part",
}
