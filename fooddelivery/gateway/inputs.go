package gateway

import (
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/gophereats/resilience/fooddelivery"
)

// refuseBadRequestID answers 400 MALFORMED_REQUEST, before next runs, to
// a request whose fooddelivery.HeaderRequestID breaks
// fooddelivery.CheckRequestID (more than fooddelivery.MaxRequestIDLen
// bytes, or not printable ASCII). The message states the rule and quotes
// the id truncated. It wraps the instance's route from outside, because
// Instance.Route replaces such an id rather than refusing it: at the
// edge the client is told, inside the system the id is only tracing.
// A refused request is not counted in the route's metrics.
func refuseBadRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := fooddelivery.CheckRequestID(r.Header.Get(fooddelivery.HeaderRequestID)); err != nil {
			writeRequestError(w, r, http.StatusBadRequest, CodeMalformedRequest,
				err.Error()+"; send a valid id, or none and the gateway assigns one")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Bounds of an error message on the wire. The gateway quotes the client
// input it echoes with fooddelivery.Quote; these bounds cover what it does
// not write itself, such as a validation message naming a 100 KB field or
// a dependency's long error text.
const (
	// maxMessageBytes is the longest error message the gateway sends.
	maxMessageBytes = 1024
	// clipHead and clipTail are how much of the beginning and of the end
	// of a longer message are kept (the end often says where in the query).
	clipHead, clipTail = 640, 256
)

// clipMessages bounds every error message of resp with clipMessage.
func clipMessages(resp *Response) {
	if resp == nil {
		return
	}
	for i := range resp.Errors {
		resp.Errors[i].Message = clipMessage(resp.Errors[i].Message)
	}
}

// clipMessage returns msg whole when it is at most maxMessageBytes long,
// and otherwise its first clipHead and last clipTail bytes (cut on rune
// boundaries) around a note of how many bytes were left out.
func clipMessage(msg string) string {
	if len(msg) <= maxMessageBytes {
		return msg
	}
	head := clipHead
	for head > 0 && !utf8.RuneStart(msg[head]) {
		head--
	}
	tail := len(msg) - clipTail
	for tail < len(msg) && !utf8.RuneStart(msg[tail]) {
		tail++
	}
	return msg[:head] + " [... " + strconv.Itoa(tail-head) + " bytes left out ...] " + msg[tail:]
}

// quote is fooddelivery.Quote: client input echoed in a message is quoted
// and truncated.
func quote(s string) string { return fooddelivery.Quote(s) }
