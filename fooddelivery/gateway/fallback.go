package gateway

import "errors"

// Codes of the field errors that say a field was answered by a fallback
// (lab 07). Unlike the other field errors, the field keeps a value: the
// error, at the field's path, tells the client that the value is not what
// the dependency would have said, so it can mark it ("prices may have
// changed", "estimate").
const (
	CodeStale      = "STALE"       // a cached value, older than the dependency's (a last known menu)
	CodeEstimated  = "ESTIMATED"   // a default instead of a live value (a 30-45 min delivery estimate)
	CodeDegraded   = "DEGRADED"    // reduced functionality (popular dishes instead of personal picks)
	CodeDeferred   = "DEFERRED"    // accepted now, done later (a review published when the store is back)
	CodeNotCharged = "NOT_CHARGED" // a clear failure: the order was not placed and nothing was charged
	// CodeNotConfirmed: a clear failure whose outcome is unknown. The
	// gateway stopped waiting (a timeout), so the order may still have been
	// placed and charged; the customer should check their orders before
	// trying again. Idempotency keys (lab 08) turn this into a safe retry.
	CodeNotConfirmed = "NOT_CONFIRMED"
)

// FallbackError is the error a dependency wrapper returns when a fallback
// answered instead of the dependency. Returned beside a value (a cached
// menu, a default ETA, popular dishes, a deferred review), it says the
// value is usable but degraded: the gateway serves the value and adds a
// field error with extensions.code = Code and the message Message (alone:
// the covered failure is not the client's to read) at the field's path. The fields that take a value this way are
// Query.restaurants, Query.restaurant, Home.restaurants,
// Home.recommendations, Restaurant.menu (and menuStale), Restaurant.eta and
// Mutation.submitReview; elsewhere (Mutation.placeOrder, say) the field is
// null, and the error is a clear failure with its own code and message.
//
// Code "" is reported as CodeDegraded. Callers that do not know the type
// see a non-nil error and treat the call as failed, the safe default.
type FallbackError struct {
	// Code is the extensions.code the gateway reports: CodeStale,
	// CodeEstimated, CodeDegraded, CodeDeferred, CodeNotCharged,
	// CodeNotConfirmed, or a code of your own.
	Code string
	// Message is for the end user: what they got instead and what to do,
	// for example "menu from 2 minutes ago; prices are confirmed at
	// checkout". "" means a message derived from Err.
	Message string
	// Err is the failure the fallback covered (a timeout, an unavailable
	// service), or fooddelivery.ErrForced when a game day forced the
	// fallback. nil is allowed (the message then stands alone).
	Err error
}

// Error returns Message, followed by the covered failure when there is
// one: the text for logs. A client gets Message alone.
func (e *FallbackError) Error() string {
	if e.Err != nil {
		return e.message() + ": " + e.Err.Error()
	}
	return e.message()
}

func (e *FallbackError) message() string {
	if e.Message == "" {
		return "answered by a fallback"
	}
	return e.Message
}

// Unwrap returns the covered failure, so errors.Is(err,
// fooddelivery.ErrTimeout) still says why the fallback answered.
func (e *FallbackError) Unwrap() error { return e.Err }

// code returns e.Code, or CodeDegraded when it is empty.
func (e *FallbackError) code() string {
	if e.Code == "" {
		return CodeDegraded
	}
	return e.Code
}

// fallbackCode returns the code of the *FallbackError in err's chain.
func fallbackCode(err error) string {
	var fe *FallbackError
	errors.As(err, &fe)
	return fe.code()
}

// fromFallback reports whether err says that a fallback answered, so the
// value returned beside it may be served.
func fromFallback(err error) bool {
	var fe *FallbackError
	return errors.As(err, &fe)
}
